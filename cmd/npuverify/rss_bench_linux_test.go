package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkRunPeakRSS runs the built CLI's `run gemm` fp16_fp32acc at
// 1024³ as a process of its own, as a user does, and reports its peak
// resident memory (the kernel's maxrss, what `/usr/bin/time -f %M`
// prints) in MiB, binary pages and runtime included, and as a multiple of
// the bytes of its tensors (A, B and the output, 2 MiB each): issue 12
// asks for at most 4. peak-MiB is the mean over the iterations and
// max-peak-MiB the largest: a run's peak depends on when the collector
// runs. Compare runs with benchstat.
func BenchmarkRunPeakRSS(b *testing.B) {
	const n = 1024
	bin := cliBinary(b)
	dir := b.TempDir()
	a, bb := benchNpy(b, dir, "a", 1, n, n), benchNpy(b, dir, "b", 2, n, n)
	args := []string{"run", "gemm", "--param", "mode=fp16_fp32acc", "--in", "a=" + a, "--in", "b=" + bb, "--out", filepath.Join(dir, "o")}
	var mib, most float64
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("npuverify %v: %v\n%s", args, err, out)
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			b.Skip("the process's resource usage is not reported here")
		}
		peak := float64(ru.Maxrss) / 1024 // KiB on Linux
		mib, most = mib+peak, max(most, peak)
	}
	mib /= float64(b.N)
	b.ReportMetric(mib, "peak-MiB")
	b.ReportMetric(most, "max-peak-MiB")
	b.ReportMetric(mib*(1<<20)/(3*n*n*2), "x-tensors")
}
