#!/usr/bin/env python3
"""flashdemo's CPU paths beside PyTorch's CPU attention (SDPA, flash and math), timed in one run.

    python3 scripts/cpu_compare.py --flashdemo old=device/old/flashdemo \\
        --flashdemo new=device/new/flashdemo --threads 16,2 --heads 1,16 --out cpu.json

Needs PyTorch (not a dependency of flashdemo; the GPU machine's image has it, its CPU is used).
Every side gets the same number of threads, fp32, b = 1 and h = --heads (b*h heads). PyTorch's
`flash` backend is its fused CPU kernel, `math` the materializing one. FLOPs as FlashAttention's
benchmarks count them: forward 4*h*n*n*d, halved when causal; backward 2.5x forward.
flashdemo's time is `bench --json`'s median_ms, taken only when bench verified its output first
("verified": true); anything else counts as 0. PyTorch's: wall time around each call, median of
--reps after one warm-up call. The binaries run one after the other on each case, so a slow
moment of the machine falls on all of them alike.

Each row of --out is one (binary, case): the keys of the older one-binary runs in docs/data (pass_,
d, causal, n, flashdemo, torch_flash, torch_math, ratio_vs_torch_flash, in GFLOP/s) plus threads,
heads, binary, ratio_vs_best (against the faster PyTorch backend) and bench (bench's own JSON).
Cases whose heads exceed 1 run only for n <= --heads-max-n, and with --heads-reps reps; once
--budget seconds have passed the remaining cases are listed as skipped, not run.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = [("torch_flash", SDPBackend.FLASH_ATTENTION), ("torch_math", SDPBackend.MATH)]


def median_s(fn, reps):
    """Median wall time of reps calls of fn() after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def torch_ms(heads, n, d, causal, pass_, reps):
    """{backend: ms} for one pass of one case; a backend that refuses it is left out."""
    q, k, v = (torch.randn(1, heads, n, d, requires_grad=True) for _ in range(3))
    out = {}
    for name, backend in BACKENDS:
        try:
            with sdpa_kernel([backend]):
                def fwd():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                if pass_ == "fwd":  # with autograd on (q, k, v require grad), as the older runs were timed
                    out[name] = median_s(fwd, reps) * 1e3
                else:
                    o = fwd()
                    g = torch.randn_like(o)
                    out[name] = median_s(
                        lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True), reps) * 1e3
                    del o, g
        except RuntimeError as e:
            sys.stderr.write(f"{name} refused h={heads} n={n} d={d} causal={causal}: {e}\n")
    return out


def bench(exe, impl, threads, heads, n, d, causal, pass_, reps):
    """bench's JSON object for one case, or None when it failed or was not verified."""
    cmd = [exe, "bench", "--device", "cpu", "--impl", impl, "--threads", str(threads), "--dtype",
           "fp32", "--b", "1", "--h", str(heads), "--n", str(n), "--d", str(d), "--pass", pass_,
           "--reps", str(reps), "--json"] + (["--causal"] if causal else [])
    env = dict(os.environ)  # the binary's own directory first: its libfmt.so.9 lies beside it
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        x for x in [os.path.dirname(os.path.abspath(exe)), env.get("LD_LIBRARY_PATH")] if x)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not rows or not rows[-1].get("verified"):
        sys.stderr.write(f"flashdemo failed or unverified: {' '.join(cmd)}\n{run.stderr[-2000:]}\n")
        return None
    return rows[-1]


def cases(a):
    """(threads, heads, pass, d, causal, n) in the order they run: the thread counts as given."""
    ints = lambda s: [int(x) for x in s.split(",")]
    for threads in ints(a.threads):
        for heads in ints(a.heads):
            for pass_ in a.passes.split(","):
                for d in ints(a.hd):
                    for causal in [c == "1" for c in a.causal.split(",")]:
                        for n in ints(a.n):
                            if heads == 1 or n <= a.heads_max_n:
                                yield threads, heads, pass_, d, causal, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flashdemo", action="append", required=True,
                    help="LABEL=PATH (or PATH), repeatable: each binary runs every case")
    ap.add_argument("--impl", default="fast")
    ap.add_argument("--threads", default="16,2")
    ap.add_argument("--heads", default="1,16")
    ap.add_argument("--heads-max-n", type=int, default=4096)
    ap.add_argument("--hd", default="64,128")
    ap.add_argument("--n", default="4096,8192")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--passes", default="fwd,bwd")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--heads-reps", type=int, default=2)
    ap.add_argument("--budget", type=float, default=1e9, help="seconds; later cases are skipped")
    ap.add_argument("--out")
    a = ap.parse_args()
    bins = [b.split("=", 1) if "=" in b else [b, b] for b in a.flashdemo]
    print(torch.__version__, torch.backends.cpu.get_cpu_capability(), flush=True)
    start, rows, skipped = time.perf_counter(), [], []
    for threads, heads, pass_, d, causal, n in cases(a):
        case = dict(threads=threads, heads=heads, pass_=pass_, d=d, causal=causal, n=n)
        if time.perf_counter() - start > a.budget:
            skipped.append(case)
            continue
        reps = a.reps if heads == 1 else a.heads_reps
        torch.set_num_threads(threads)
        flops = 4 * heads * n * n * d / (2 if causal else 1) * (2.5 if pass_ == "bwd" else 1)
        peers = {k: flops / ms / 1e6 for k, ms in torch_ms(heads, n, d, causal, pass_, reps).items()}
        best = max(peers.values(), default=0.0)
        for label, exe in bins:
            j = bench(exe, a.impl, threads, heads, n, d, causal, pass_, reps)
            mine = flops / j["median_ms"] / 1e6 if j else 0.0
            rows.append(dict(case, binary=label, flashdemo=mine, **peers,
                             ratio_vs_torch_flash=mine / peers["torch_flash"] if peers.get("torch_flash") else 0.0,
                             ratio_vs_best=mine / best if best else 0.0, bench=j))
        line = " ".join(f"{r['binary']} {r['flashdemo']:.0f} ({r['ratio_vs_best']:.2f}x)" for r in rows[-len(bins):])
        print(f"[{time.perf_counter() - start:5.0f} s] t={threads} h={heads} {pass_} d={d} c={int(causal)} "
              f"n={n}: {line} | flash {peers.get('torch_flash', 0):.0f} math {peers.get('torch_math', 0):.0f}",
              flush=True)
    if a.out:
        json.dump({"rows": rows, "skipped": skipped, "torch": torch.__version__,
                   "seconds": time.perf_counter() - start}, open(a.out, "w"), indent=1)
    summary(rows, [label for label, _ in bins], skipped)


def summary(rows, labels, skipped):
    """One short table: GFLOP/s per binary and PyTorch backend, and each binary / the faster one."""
    key = lambda r: (r["threads"], r["heads"], r["pass_"], r["d"], r["causal"], r["n"])
    by_case = {}
    for r in rows:
        by_case.setdefault(key(r), {})[r["binary"]] = r
    head = (f"{'thr':>3} {'h':>2} {'pass':>4} {'d':>3} {'c':>1} {'n':>5} |"
            + "".join(f" {l[:7]:>7}" for l in labels) + f" {'flash':>6} {'math':>6} |"
            + "".join(f" {l[:6] + '/best':>11}" for l in labels))
    print("\nGFLOP/s (fp32); x/best = against the faster PyTorch backend (target >= 1.20)")
    print(head + "\n" + "-" * len(head))
    for k, rs in by_case.items():
        r0 = next(iter(rs.values()))
        print(f"{k[0]:>3} {k[1]:>2} {k[2]:>4} {k[3]:>3} {int(k[4]):>1} {k[5]:>5} |"
              + "".join(f" {rs[l]['flashdemo']:7.0f}" if l in rs else f" {'-':>7}" for l in labels)
              + f" {r0.get('torch_flash', 0):6.0f} {r0.get('torch_math', 0):6.0f} |"
              + "".join(f" {rs[l]['ratio_vs_best']:11.2f}" if l in rs else f" {'-':>11}" for l in labels))
    for l in labels:
        rs = [r["ratio_vs_best"] for r in rows if r["binary"] == l]
        if rs:
            print(f"{l}: {sum(x >= 1.2 for x in rs)} of {len(rs)} cases >= 1.2x, min {min(rs):.2f}x")
    if skipped:
        print(f"skipped (time budget): {len(skipped)} cases, e.g. "
              + ", ".join(f"t={s['threads']} h={s['heads']} {s['pass_']} d={s['d']} n={s['n']}" for s in skipped[:4]))


if __name__ == "__main__":
    main()
