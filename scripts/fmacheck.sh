#!/usr/bin/env bash
# Fails when the compiler fused a multiply and an add that the source did
# not ask to fuse. The Go spec lets an implementation compute x*y + z with
# one rounding (a fused multiply-add) unless the product is explicitly
# converted, float64(x*y) + z; arm64 does so by default, amd64 from
# GOAMD64=v3. The emulator, the references, the bounds and the metrics
# promise exact bits (a Go twin equal to its assembly, a reference equal
# to a plain loop, a rounding-error argument that counts each rounding),
# and a fusion the source did not write changes them on those machines
# only. So every fused instruction in the module's compiled code must come
# from a source line that calls math.FMA.
#
# It compiles the module's non-test packages for amd64 (GOAMD64=v3) and
# arm64, printing the compiler's assembly (replayed from the build cache
# when unchanged), and lists each fused instruction whose source line has
# no math.FMA.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
status=0
check() {
  local what=$1 pattern=$2
  shift 2
  local out
  out=$(mktemp)
  env "$@" go build -gcflags="$mod/...=-S" ./... 2>"$out" || { cat "$out"; exit 1; }
  # Lines look like: 0x0054 00084 (/path/file.go:293)	VFMADD231SD	X4, X3, X2
  { grep -E "$pattern" "$out" || true; } | sed -E 's/^.*\(([^()]+\.go):([0-9]+)\).*\t([A-Z0-9]+)\t.*$/\1 \2 \3/' | sort -u |
    while read -r file line insn; do
      if ! sed -n "${line}p" "$file" | grep -q 'math\.FMA('; then
        echo "fmacheck: $what: ${file#"$PWD"/}:$line: $insn fused where the source has no math.FMA (write float64(x*y) + z, or call math.FMA)"
        echo x >>"$out.bad"
      fi
    done
  if [ -e "$out.bad" ]; then status=1; fi
  rm -f "$out" "$out.bad"
}
check "amd64 GOAMD64=v3" $'\tV?F(N?M(ADD|SUB))[0-9A-Z]*\t' GOARCH=amd64 GOAMD64=v3
check "arm64" $'\tF(N?M(ADD|SUB))[DS]\t' GOARCH=arm64
exit $status
