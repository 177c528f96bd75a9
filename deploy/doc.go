// Package deploy holds no code: its tests keep the repository's deployment
// files honest — the ClusterFuzzLite build script (.clusterfuzzlite/build.sh)
// compiles every native Go fuzz target of the tree, the Kubernetes Indexed Job
// (deploy/k8s/check-job.yaml) and the CI shard workflow
// (.github/workflows/shards.yml) run shards that cover every case exactly once
// with flags `npuverify check` accepts, and their merge steps read exactly the
// files the shards write. These files are not built by go build, so nothing
// else would notice them rot; docs/scale-out.md describes how to use them.
package deploy
