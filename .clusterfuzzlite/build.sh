#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: every native Go fuzz target of the
# repository (`func FuzzXxx(f *testing.F)` in a _test.go file) as a libFuzzer
# binary in $OUT. Runs inside gcr.io/oss-fuzz-base/base-builder-go on a copy of
# the source, so the edits below never reach the repository.
#
# deploy/clusterfuzzlite_test.go fails when a fuzz target of the tree has no
# compile_native_go_fuzzer_v2 line here (or one naming the wrong package); a new
# operator's fuzz/<op>_test.go target needs one more line at the end.
#
# compile_native_go_fuzzer_v2 (go-118-fuzz-build_v2) is used rather than the
# older compile_native_go_fuzzer because the targets live in _test.go files and
# call helpers from sibling _test.go files (fuzz/fuzz_test.go's fuzzOp): v2
# loads the package with its test files and rewrites their `testing` import,
# the v1 script rewrites only the file holding the target.
set -o pipefail
cd "$SRC/npuverify"

module=github.com/npuverify/npuverify

# go.mod may ask for a newer Go than the image ships; the toolchain Go then
# downloads lands in the read-only module cache, where go-118-fuzz-build_v2
# cannot overlay its testing/fuzz.go. Work on a writable copy of that GOROOT.
goroot=$(go env GOROOT)
if [[ "$goroot" == "$(go env GOMODCACHE)"* ]]; then
  copy=$(mktemp -d)/goroot
  cp -r "$goroot" "$copy"
  chmod -R u+w "$copy"
  export GOROOT="$copy" PATH="$copy/bin:$PATH" GOTOOLCHAIN=local
fi

# The rewritten targets import go-118-fuzz-build's testing package.
go get github.com/AdamKorcz/go-118-fuzz-build/testing

# fold_external_tests PKG: go-118-fuzz-build imports the target from PKG's
# import path, but a target in an external test package (package foo_test, as
# in fuzz/) is not part of PKG, and v2 turning the test files into non-test
# files would give the directory two packages. Make PKG's external test files
# part of PKG. That is only sound while they do not import PKG itself (a cycle
# after folding): checked, not assumed.
fold_external_tests() {
  local pkg=$1 dir name f
  dir=$(go list -tags gofuzz -f '{{.Dir}}' "$pkg")
  name=$(go list -tags gofuzz -f '{{.Name}}' "$pkg")
  for f in $(go list -tags gofuzz -f '{{range .XTestGoFiles}}{{.}} {{end}}' "$pkg"); do
    if grep -q "\"$pkg\"" "$dir/$f"; then
      echo "build.sh: $dir/$f imports $pkg: cannot fold it into package $name" >&2
      exit 1
    fi
    sed -i "s/^package ${name}_test\$/package ${name}/" "$dir/$f"
  done
}

fold_external_tests $module/fuzz

compile_native_go_fuzzer_v2 $module/tensor FuzzReadNpy fuzz_read_npy
compile_native_go_fuzzer_v2 $module/npu/kernels FuzzGEMMKernel fuzz_gemm_kernel
compile_native_go_fuzzer_v2 $module/verify FuzzCompute fuzz_compute
compile_native_go_fuzzer_v2 $module/ops FuzzGEMMExpect fuzz_gemm_expect
compile_native_go_fuzzer_v2 $module/ops FuzzDecodeExpect fuzz_decode_expect
compile_native_go_fuzzer_v2 $module/ops FuzzKVUpdateExpect fuzz_kv_update_expect
compile_native_go_fuzzer_v2 $module/fuzz FuzzVectorAdd fuzz_vector_add
compile_native_go_fuzzer_v2 $module/fuzz FuzzGEMM fuzz_gemm
compile_native_go_fuzzer_v2 $module/fuzz FuzzSparse24Prune fuzz_sparse24_prune
compile_native_go_fuzzer_v2 $module/fuzz FuzzTransData fuzz_transdata
compile_native_go_fuzzer_v2 $module/fuzz FuzzSparseGEMM24 fuzz_sparse_gemm24
compile_native_go_fuzzer_v2 $module/fuzz FuzzSparseCompress fuzz_sparse_compress
compile_native_go_fuzzer_v2 $module/fuzz FuzzKVUpdate fuzz_kv_update
compile_native_go_fuzzer_v2 $module/fuzz FuzzDecodeAttention fuzz_decode_attention

# compile_native_go_fuzzer_v2 only prints a message when it cannot find a
# target; a fuzzer missing from $OUT is a build failure here.
missing=0
for name in $(grep -o '^compile_native_go_fuzzer_v2 .*' "${BASH_SOURCE[0]}" | awk '{print $4}'); do
  if [ ! -x "$OUT/$name" ]; then
    echo "build.sh: fuzzer $name was not built" >&2
    missing=1
  fi
done
exit $missing
