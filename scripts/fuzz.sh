#!/usr/bin/env bash
# Runs every native fuzz target in the module for FUZZTIME each and prints
# each target's exec rate; exits 1 if any target failed.
#
# One failure is not a finding: Go's fuzz coordinator (go1.26 and older,
# golang/go#75804, fixed in go1.27) can report its own -fuzztime deadline
# as the target's failure, "--- FAIL: FuzzX (30.01s)" followed by nothing
# but "context deadline exceeded", with no failing input written. A run
# that ends exactly so is reported and ignored; any other failure (a
# crasher, a failing seed, a panic, a build error) fails the script.
#
#   scripts/fuzz.sh --classify TARGET LOG RC NEW
# prints how a run of TARGET that exited RC with output LOG, having
# written NEW crashers, is judged (pass, race or fail), and exits 1 for
# fail: what the loop below does, for the test that holds it to it
# (fuzz/script_test.go).
set -uo pipefail

# verdict TARGET LOG RC NEW prints pass, race or fail.
verdict() {
  local target=$1 log=$2 rc=$3 new=$4
  if [ "$new" -gt 0 ]; then
    echo fail
  elif [ "$rc" -eq 0 ]; then
    echo pass
  elif [ "$(race_lines "$target" "$log")" = "    context deadline exceeded" ]; then
    echo race
  else
    echo fail
  fi
}

# race_lines TARGET LOG prints what follows the target's "--- FAIL" line,
# without the go command's closing lines ("FAIL", "exit status N",
# "FAIL<tab>package …"), or "no --- FAIL line" when there is none.
race_lines() {
  awk -v t="--- FAIL: $1 (" '
    index($0, t) == 1 { seen = 1; next }
    seen && !/^FAIL$/ && !/^exit status [0-9]+$/ && !/^FAIL\t/ { print }
    END { if (!seen) print "no --- FAIL line" }
  ' "$2"
}

if [ "${1:-}" = "--classify" ]; then
  v=$(verdict "$2" "$3" "$4" "$5")
  echo "$v"
  [ "$v" != fail ]
  exit
fi

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
    case $(verdict "$target" "$log" "$rc" $((after - before))) in
    race)
      echo "~~ $target: the fuzz runner reported its own deadline as a failure, no input written (golang/go#75804); ignored" ;;
    fail)
      echo "!! $target failed (exit $rc, $((after - before)) new inputs in $dir):"; tail -40 "$log"; status=1 ;;
    esac
    rm -f "$log"
  done
done
exit $status
