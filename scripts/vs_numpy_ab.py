#!/usr/bin/python3
"""../shared/bench/vs_numpy.py's inputs and timing for several prebuilt CLIs side by side: each CLI's
whole `run` and numpy's operation alternated N times in one run, min (and median) of each, ratio of the
minimums. Higher is better. OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are unset, as vs_numpy.py does.

Usage:  /usr/bin/python3 scripts/vs_numpy_ab.py gemm|vector_add N CLI...
e.g.    go build -o /tmp/new ./cmd/npuverify
        git worktree add /tmp/old-wt HEAD~1 && (cd /tmp/old-wt && go build -o /tmp/old ./cmd/npuverify)
        /usr/bin/python3 scripts/vs_numpy_ab.py gemm 7 /tmp/old /tmp/new
"""
import os, subprocess, sys, tempfile, time
if any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
import numpy as np
what, n_rep, clis = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
d = tempfile.mkdtemp(prefix="bench-")
rng = np.random.default_rng(1)
def run(cli, args):
    r = subprocess.run([cli, "run"] + args + ["--out", os.path.join(d, "o")], capture_output=True, text=True)
    if r.returncode: sys.exit(f"{cli} run failed: {r.stderr.strip()[-300:]}")
if what == "gemm":
    n = 1024
    a = rng.standard_normal((n, n)).astype(np.float16); b = rng.standard_normal((n, n)).astype(np.float16)
    np.save(f"{d}/a.npy", a); np.save(f"{d}/b.npy", b)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    args = ["gemm", "--param", "mode=fp16_fp32acc", "--in", f"a={d}/a.npy", "--in", f"b={d}/b.npy"]
    f_np = lambda: a32 @ b32
else:
    n = 1 << 24
    x = rng.standard_normal(n).astype(np.float16); y = rng.standard_normal(n).astype(np.float16)
    np.save(f"{d}/x.npy", x); np.save(f"{d}/y.npy", y)
    args = ["vector_add", "--param", "dtype=fp16", "--in", f"x={d}/x.npy", "--in", f"y={d}/y.npy"]
    f_np = lambda: x + y
ts = {c: [] for c in clis}; tn = []
for _ in range(n_rep):
    for c in clis:
        t = time.perf_counter(); run(c, args); ts[c].append(time.perf_counter() - t)
    t = time.perf_counter(); f_np(); tn.append(time.perf_counter() - t)
np_t = min(tn)
print(f"{what}: numpy min {np_t*1000:.1f} ms over {n_rep}" + (f" ({2*n**3/np_t/1e9:.1f} GFLOP/s)" if what == "gemm" else f" ({n/np_t/1e6:.1f} M elem/s)"))
for c in clis:
    m = min(ts[c]); med = sorted(ts[c])[len(ts[c])//2]
    print(f"  {os.path.basename(c):10s} min {m*1000:6.1f} ms  median {med*1000:6.1f} ms  ratio (min/min) {np_t/m:.3f}")
