package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// k8sManifest is the Kubernetes manifest, relative to root.
const k8sManifest = "deploy/k8s/check-job.yaml"

// k8sObject is the part of a Kubernetes object the tests read.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string   `yaml:"completionMode"`
		Completions    *int     `yaml:"completions"`
		Parallelism    *int     `yaml:"parallelism"`
		AccessModes    []string `yaml:"accessModes"`
		Template       struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// podSpec is the part of a pod template the tests read.
type podSpec struct {
	RestartPolicy  string      `yaml:"restartPolicy"`
	InitContainers []container `yaml:"initContainers"`
	Containers     []container `yaml:"containers"`
	Volumes        []struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	} `yaml:"volumes"`
}

// container is the part of a container the tests read.
type container struct {
	Name         string   `yaml:"name"`
	Image        string   `yaml:"image"`
	Command      []string `yaml:"command"`
	Args         []string `yaml:"args"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// script returns the shell script c runs: command must be a shell's -c and
// args one script, the form every container of the manifest uses.
func (c container) script(t *testing.T, job string) string {
	t.Helper()
	if len(c.Command) != 2 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || len(c.Args) != 1 {
		t.Fatalf("%s: job %s container %s: want command [/bin/sh -c] and one script in args, got command %q args %q", k8sManifest, job, c.Name, c.Command, c.Args)
	}
	return c.Args[0]
}

// stub is a stand-in npuverify for running the manifest's scripts: it logs
// its arguments, creates the files --json and --junit name, and exits with
// $STUB_RC.
const stub = `#!/bin/sh
echo "$*" >> "$STUB_LOG"
prev=
for a in "$@"; do
  case "$prev" in --json|-json|--junit|-junit) : > "$a" ;; esac
  prev=$a
done
exit "${STUB_RC:-0}"
`

// shellRun runs script under /bin/sh with the stub npuverify first on PATH,
// /results (mount) rewritten to dir, env added; it returns the exit code.
func shellRun(ctx context.Context, t *testing.T, script, mount, dir string, env ...string) int {
	t.Helper()
	bin := filepath.Join(filepath.Dir(dir), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "npuverify"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	script = strings.ReplaceAll(script, mount+"/", dir+"/")
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "STUB_LOG="+filepath.Join(filepath.Dir(dir), "log"))
	cmd.Env = append(cmd.Env, env...)
	// A cancelled script leaves its `sleep` holding the output pipe; do not
	// wait for it.
	cmd.WaitDelay = 100 * time.Millisecond
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return -1
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatalf("running the script: %v\n%s\nscript:\n%s", err, out, script)
	}
	return 0
}

// stubLog returns the command lines the stub logged under base, and clears it.
func stubLog(t *testing.T, base string) []string {
	t.Helper()
	p := filepath.Join(base, "log")
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	os.Remove(p)
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

// files returns the names in dir matching the glob pat.
func files(t *testing.T, dir, pat string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pat))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	slices.Sort(m)
	return m
}

// TestK8sIndexedJob parses the Kubernetes manifest and checks that it does
// what docs/scale-out.md says: an Indexed Job of N pods, N written the same
// in completions, parallelism and --shard I/N; each pod's script, run under
// /bin/sh with a stub npuverify for every JOB_COMPLETION_INDEX 0…N−1, passes
// `check` flags the real `check -h` lists and shards 1/N … N/N each exactly
// once, writing N distinct result files; a verification failure (exit 1)
// still counts the shard done and a usage error (2) fails the pod; the
// collector waits until all N shards are done; the merge step's glob expands
// to exactly the N result files; every container mounts the one claim at
// one path.
func TestK8sIndexedJob(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skipf("no /bin/sh to run the manifest's scripts: %v", err)
	}
	docs := decodeYAML[k8sObject](t, k8sManifest)
	var check, merge *k8sObject
	claims := map[string]bool{}
	for i := range docs {
		d := &docs[i]
		switch {
		case d.Kind == "PersistentVolumeClaim":
			claims[d.Metadata.Name] = true
			if !slices.Contains(d.Spec.AccessModes, "ReadWriteMany") {
				t.Errorf("%s: claim %s: access modes %v, want ReadWriteMany (shard pods run on several nodes)", k8sManifest, d.Metadata.Name, d.Spec.AccessModes)
			}
		case d.Kind == "Job" && d.Spec.CompletionMode == "Indexed":
			if check != nil {
				t.Fatalf("%s: two Indexed Jobs (%s, %s)", k8sManifest, check.Metadata.Name, d.Metadata.Name)
			}
			check = d
		case d.Kind == "Job":
			merge = d
		}
	}
	if check == nil || merge == nil {
		t.Fatalf("%s: want a Job with completionMode Indexed and a merge Job, got %d documents", k8sManifest, len(docs))
	}
	if check.APIVersion != "batch/v1" || merge.APIVersion != "batch/v1" {
		t.Errorf("%s: Job apiVersion %q / %q, want batch/v1", k8sManifest, check.APIVersion, merge.APIVersion)
	}
	if check.Spec.Completions == nil || check.Spec.Parallelism == nil {
		t.Fatalf("%s: job %s: completions and parallelism must both be set", k8sManifest, check.Metadata.Name)
	}
	n := *check.Spec.Completions
	if n < 2 || *check.Spec.Parallelism != n {
		t.Errorf("%s: job %s: completions %d, parallelism %d: want equal and ≥ 2 (one pod per shard, all at once)", k8sManifest, check.Metadata.Name, n, *check.Spec.Parallelism)
	}

	// Every container mounts the one claim at one path.
	mount := ""
	for _, job := range []*k8sObject{check, merge} {
		ps := job.Spec.Template.Spec
		if ps.RestartPolicy != "Never" {
			t.Errorf("%s: job %s: restartPolicy %q, want Never (a failed shard is retried as a new pod)", k8sManifest, job.Metadata.Name, ps.RestartPolicy)
		}
		vols := map[string]string{}
		for _, v := range ps.Volumes {
			vols[v.Name] = v.PersistentVolumeClaim.ClaimName
			if !claims[v.PersistentVolumeClaim.ClaimName] {
				t.Errorf("%s: job %s: volume %s claims %q, which the manifest does not define", k8sManifest, job.Metadata.Name, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
		for _, c := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
			if len(c.VolumeMounts) != 1 || vols[c.VolumeMounts[0].Name] == "" {
				t.Fatalf("%s: job %s container %s: want one mount of the results claim, got %+v", k8sManifest, job.Metadata.Name, c.Name, c.VolumeMounts)
			}
			if mount == "" {
				mount = c.VolumeMounts[0].MountPath
			} else if c.VolumeMounts[0].MountPath != mount {
				t.Errorf("%s: job %s container %s mounts the results at %s, others at %s", k8sManifest, job.Metadata.Name, c.Name, c.VolumeMounts[0].MountPath, mount)
			}
		}
	}
	if len(check.Spec.Template.Spec.Containers) != 1 || len(merge.Spec.Template.Spec.Containers) != 1 || len(merge.Spec.Template.Spec.InitContainers) != 1 {
		t.Fatalf("%s: want one check container, and one collector init container and one merge container", k8sManifest)
	}

	// The shard script: real flags, N as in completions.
	shardScript := check.Spec.Template.Spec.Containers[0].script(t, check.Metadata.Name)
	inv := findInvocation(t, k8sManifest, shardScript, "check")
	checkFlags(t, k8sManifest, inv)
	shard := inv.flags["shard"]
	m := regexp.MustCompile(`^\S+/(\d+)$`).FindStringSubmatch(strings.Join(shard, " "))
	if m == nil {
		t.Fatalf("%s: check --shard %q: want I/N", k8sManifest, shard)
	}
	if got, _ := strconv.Atoi(m[1]); got != n {
		t.Errorf("%s: check --shard %s: N = %d, but completions = parallelism = %d", k8sManifest, shard[0], got, n)
	}
	if len(inv.flags["json"]) != 1 {
		t.Fatalf("%s: check needs --json FILE on the shared volume, got %q", k8sManifest, inv.flags["json"])
	}

	// Run it for every index: shards 1/N … N/N once each, N distinct files.
	base := t.TempDir()
	results := filepath.Join(base, "results")
	if err := os.Mkdir(results, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var shards []string
	for idx := range n {
		if rc := shellRun(ctx, t, shardScript, mount, results, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", idx), "STUB_RC=0"); rc != 0 {
			t.Fatalf("%s: shard script, JOB_COMPLETION_INDEX=%d, npuverify exit 0: script exit %d, want 0", k8sManifest, idx, rc)
		}
		for _, line := range stubLog(t, base) {
			got := findInvocation(t, k8sManifest, "npuverify "+line, "check")
			shards = append(shards, strings.Join(got.flags["shard"], " "))
		}
	}
	slices.Sort(shards)
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("%d/%d", i, n))
	}
	slices.Sort(want)
	if !slices.Equal(shards, want) {
		t.Errorf("%s: JOB_COMPLETION_INDEX 0…%d ran check --shard %v, want %v (each shard exactly once)", k8sManifest, n-1, shards, want)
	}
	jsonName := filepath.Base(inv.flags["json"][0])
	jsonPat := regexp.MustCompile(`\$\w+|\$\{\w+\}|\$\(\([^)]*\)\)`).ReplaceAllString(jsonName, "*")
	written := files(t, results, jsonPat)
	if len(written) != n {
		t.Errorf("%s: %d shards wrote %d result files matching %s: %v", k8sManifest, n, len(written), jsonPat, written)
	}

	// The collector is done waiting once (and only once) all N are done.
	wait := merge.Spec.Template.Spec.InitContainers[0].script(t, merge.Metadata.Name)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	if rc := shellRun(wctx, t, wait, mount, results); rc != 0 {
		t.Errorf("%s: collector with all %d shards done: exit %d (-1: still waiting after 5 s), want 0", k8sManifest, n, rc)
	}
	wcancel()

	// A verification failure (1) is a finished shard; a usage error (2) is not.
	for _, tc := range []struct {
		rc      int
		podDone bool
	}{{1, true}, {2, false}} {
		fresh := filepath.Join(t.TempDir(), "results")
		if err := os.Mkdir(fresh, 0o755); err != nil {
			t.Fatal(err)
		}
		rc := shellRun(ctx, t, shardScript, mount, fresh, "JOB_COMPLETION_INDEX=0", fmt.Sprintf("STUB_RC=%d", tc.rc))
		if (rc == 0) != tc.podDone {
			t.Errorf("%s: shard script, npuverify exit %d: script exit %d; want the pod to succeed: %v", k8sManifest, tc.rc, rc, tc.podDone)
		}
		// With only this one shard done, the collector must still wait.
		wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		if got := shellRun(wctx, t, wait, mount, fresh); got != -1 {
			t.Errorf("%s: collector with at most 1 of %d shards done: exit %d, want it still waiting", k8sManifest, n, got)
		}
		wcancel()
	}

	// The merge step reads exactly the files the shards wrote.
	mergeScript := merge.Spec.Template.Spec.Containers[0].script(t, merge.Metadata.Name)
	minv := findInvocation(t, k8sManifest, mergeScript, "report")
	checkFlags(t, k8sManifest, minv)
	if rc := shellRun(ctx, t, mergeScript, mount, results); rc != 0 {
		t.Fatalf("%s: merge script with a stub npuverify: exit %d", k8sManifest, rc)
	}
	log := stubLog(t, base)
	if len(log) != 1 {
		t.Fatalf("%s: merge script ran npuverify %d times, want once: %q", k8sManifest, len(log), log)
	}
	ran := findInvocation(t, k8sManifest, "npuverify "+log[0], "report")
	var merged []string
	for _, f := range ran.flags["merge"] {
		merged = append(merged, filepath.Base(f))
	}
	slices.Sort(merged)
	if !slices.Equal(merged, written) {
		t.Errorf("%s: report --merge %s expanded to %v, but the shards wrote %v", k8sManifest, strings.Join(minv.flags["merge"], " "), merged, written)
	}
}
