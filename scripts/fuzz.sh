#!/usr/bin/env bash
# Runs every native fuzz target in the module for FUZZTIME each and prints
# each target's exec rate. A run that fails without writing a new crasher
# under testdata/fuzz is the Go fuzz runner's own shutdown race
# ("context deadline exceeded", golang/go#75804): reported, not fatal.
set -uo pipefail
FUZZTIME=${FUZZTIME:-30s}
status=0
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($FUZZTIME)"
    dir=$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$target
    before=$(ls "$dir" 2>/dev/null | wc -l)
    log=$(mktemp)
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" 2>&1 | tee "$log" | grep -E 'execs:|PASS|FAIL|panic|failure' | tail -3
    rc=${PIPESTATUS[0]}
    after=$(ls "$dir" 2>/dev/null | wc -l)
    if [ "$rc" -ne 0 ]; then
      if [ "$after" -gt "$before" ]; then
        echo "!! $target: new crasher in $dir"; tail -40 "$log"; status=1
      else
        echo "~~ $target: fuzz runner exited $rc without a crasher (golang/go#75804); ignored"
      fi
    fi
    rm -f "$log"
  done
done
exit $status
