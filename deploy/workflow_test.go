package deploy_test

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// shardWorkflow is the CI shard example, relative to root.
const shardWorkflow = ".github/workflows/shards.yml"

// workflow is the part of a GitHub Actions workflow the test reads.
type workflow struct {
	Jobs map[string]struct {
		Needs    any    `yaml:"needs"`
		If       string `yaml:"if"`
		Strategy struct {
			Matrix map[string]any `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// matrixShard is how the workflow spells the shard number in a job; it is
// replaced by shardWord, one word, before the command line is split.
const (
	matrixShard = "${{ matrix.shard }}"
	shardWord   = "@SHARD@"
)

// TestShardWorkflow parses the CI shard workflow and checks that its matrix
// runs `check --shard I/N` for I = 1…N exactly once (N the one in the
// command), with flags `check -h` lists; that every shard uploads the result
// file it writes; and that the merge job, after the shards and even when one
// failed, downloads every shard's artifact and passes `report --merge` a glob
// matching every shard's results.
func TestShardWorkflow(t *testing.T) {
	wf := decodeYAML[workflow](t, shardWorkflow)[0]
	shardJob := ""
	for name, j := range wf.Jobs {
		if _, ok := j.Strategy.Matrix["shard"]; ok {
			if shardJob != "" {
				t.Fatalf("%s: jobs %s and %s both have a shard matrix", shardWorkflow, shardJob, name)
			}
			shardJob = name
		}
	}
	if shardJob == "" {
		t.Fatalf("%s: no job with strategy.matrix.shard", shardWorkflow)
	}
	job := wf.Jobs[shardJob]
	list, ok := job.Strategy.Matrix["shard"].([]any)
	if !ok {
		t.Fatalf("%s: job %s: matrix.shard is %T, want a list", shardWorkflow, shardJob, job.Strategy.Matrix["shard"])
	}
	var shards []int
	for _, v := range list {
		i, ok := v.(int)
		if !ok {
			t.Fatalf("%s: job %s: matrix.shard value %v is %T, want an integer", shardWorkflow, shardJob, v, v)
		}
		shards = append(shards, i)
	}

	var run, upload, uploadPath string
	for _, s := range job.Steps {
		if strings.Contains(s.Run, "npuverify check") {
			run = strings.ReplaceAll(s.Run, matrixShard, shardWord)
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			upload, uploadPath = s.With["name"], s.With["path"]
		}
	}
	inv := findInvocation(t, shardWorkflow, run, "check")
	checkFlags(t, shardWorkflow, inv)
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(shardWord) + `/(\d+)$`).FindStringSubmatch(strings.Join(inv.flags["shard"], " "))
	if m == nil {
		t.Fatalf("%s: job %s: check --shard %q, want %s/N", shardWorkflow, shardJob, inv.flags["shard"], matrixShard)
	}
	n, _ := strconv.Atoi(m[1])
	got := slices.Clone(shards)
	slices.Sort(got)
	var want []int
	for i := 1; i <= n; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: job %s: matrix.shard %v runs --shard I/%d for I in %v, want %v (1-based, each exactly once)", shardWorkflow, shardJob, shards, n, got, want)
	}

	// Per shard: the file it writes, the artifact it uploads.
	if len(inv.flags["json"]) != 1 || upload == "" {
		t.Fatalf("%s: job %s: want check --json FILE and an upload-artifact step, got --json %q, upload %q", shardWorkflow, shardJob, inv.flags["json"], upload)
	}
	var jsonFiles, artifacts []string
	for _, i := range shards {
		expand := strings.NewReplacer(matrixShard, fmt.Sprint(i), shardWord, fmt.Sprint(i)).Replace
		f := expand(inv.flags["json"][0])
		if ok, err := path.Match(expand(uploadPath), f); err != nil || !ok {
			t.Errorf("%s: shard %d writes %s, but uploads %s", shardWorkflow, i, f, expand(uploadPath))
		}
		jsonFiles = append(jsonFiles, path.Base(f))
		artifacts = append(artifacts, expand(upload))
	}

	// The merge job.
	mergeJob := ""
	for name, j := range wf.Jobs {
		for _, s := range j.Steps {
			if strings.Contains(s.Run, "npuverify report") {
				mergeJob = name
			}
		}
	}
	if mergeJob == "" {
		t.Fatalf("%s: no job runs npuverify report", shardWorkflow)
	}
	mj := wf.Jobs[mergeJob]
	if needs := fmt.Sprint(mj.Needs); needs != shardJob && needs != "["+shardJob+"]" {
		t.Errorf("%s: job %s needs %v, want %s", shardWorkflow, mergeJob, mj.Needs, shardJob)
	}
	if !strings.Contains(mj.If, "always()") {
		t.Errorf("%s: job %s: if %q: without always() a shard with failing cases skips the merged report", shardWorkflow, mergeJob, mj.If)
	}
	dir := ""
	var mergeRun string
	for _, s := range mj.Steps {
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			for _, a := range artifacts {
				if ok, err := path.Match(s.With["pattern"], a); err != nil || !ok {
					t.Errorf("%s: job %s downloads artifacts %q, which misses shard artifact %s", shardWorkflow, mergeJob, s.With["pattern"], a)
				}
			}
			if s.With["merge-multiple"] != "true" {
				t.Errorf("%s: job %s: download-artifact without merge-multiple: true puts each shard in its own directory", shardWorkflow, mergeJob)
			}
			dir = s.With["path"]
		}
		if strings.Contains(s.Run, "npuverify report") {
			mergeRun = s.Run
		}
	}
	minv := findInvocation(t, shardWorkflow, mergeRun, "report")
	checkFlags(t, shardWorkflow, minv)
	globs := minv.flags["merge"]
	for _, f := range jsonFiles {
		p := path.Join(dir, f)
		matched := false
		for _, g := range globs {
			if ok, err := path.Match(g, p); err == nil && ok {
				matched = true
			}
		}
		if !matched {
			t.Errorf("%s: job %s: report --merge %v does not read shard results %s", shardWorkflow, mergeJob, globs, p)
		}
	}
}
