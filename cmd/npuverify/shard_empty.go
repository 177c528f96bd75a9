package main

import (
	"fmt"

	"github.com/npuverify/npuverify/golden"
)

// emptyBazelShard reports whether the shard Bazel's environment chose
// selects none of the cases the run's other filters select, with the line
// to print. Bazel starts shard_count processes whatever the number of
// tests, so a shard past the last case is normal there: it has nothing to
// run and passes (its status file is already touched), where a --shard
// given by hand that selects nothing is still a usage error. A selection
// that is empty before sharding is not this case: that is a wrong filter.
func emptyBazelShard(s *golden.Store, opt golden.CheckOptions) (string, bool) {
	sel, err := golden.Select(s, opt)
	if err != nil || len(sel) > 0 {
		return "", false
	}
	all := opt
	all.Shard, all.Shards = 0, 0
	sel, err = golden.Select(s, all)
	if err != nil || len(sel) == 0 {
		return "", false
	}
	return fmt.Sprintf("shard %d/%d (from %s) selects none of the %d cases: nothing to run, which passes (Bazel may start more shards than there are cases)",
		opt.Shard, opt.Shards, envTotalShards, len(sel)), true
}
