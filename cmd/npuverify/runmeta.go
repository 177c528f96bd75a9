package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/report"
)

// addRunMeta records in meta (check's --json and --junit) which part of
// which run the file holds, so that report --merge can tell a whole run
// from a part of one: the shard "I/N" when sharded, the number of cases
// the whole run selects, and a run ID. The ID is a digest of what decides
// the run's cases and how they are judged (backend, profile, store, the
// selection before sharding, policy, repeat and the shard count), not of
// time or host: every shard of one run computes the same ID on its own
// (a Kubernetes pod or Bazel shard knows nothing of the others), and a
// shard of another store, selection or shard count differs.
func addRunMeta(meta map[string]string, store *golden.Store, opt golden.CheckOptions) {
	all := opt
	all.Shard, all.Shards = 0, 0
	sel, err := golden.Select(store, all)
	if err != nil {
		return // golden.Check has reported it
	}
	h := sha256.New()
	for _, s := range []string{meta["backend"], meta["profile"], store.Where(), opt.Policy, strconv.Itoa(max(opt.Repeat, 1)), strconv.Itoa(opt.Shards)} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	for _, c := range sel {
		b, _ := json.Marshal(c.File) // a case's content: a store edited between shards is another run
		fmt.Fprintf(h, "%d:%s\n%d:%s\n", len(c.ID), c.ID, len(b), b)
	}
	meta[report.MetaRun] = hex.EncodeToString(h.Sum(nil))[:16]
	meta[report.MetaRunCases] = strconv.Itoa(len(sel))
	if opt.Shards > 0 {
		meta[report.MetaShard] = fmt.Sprintf("%d/%d", opt.Shard, opt.Shards)
	}
}
