#!/usr/bin/env python3
"""flashdemo's GPU rungs beside PyTorch's attention backends, timed in one run on one GPU.

    python3 scripts/torch_compare.py --flashdemo build/release/flashdemo --impl mma --dtype bf16

Needs a CUDA GPU and PyTorch (not a dependency of flashdemo; the GPU machine has it).
Shapes: b * n = 16384 tokens and h * d = 2048 (FlashAttention's benchmark convention), so
b = max(1, 16384 / n) and h = 2048 / d. FLOPs of the forward: 4 b h n^2 d, halved when causal;
the backward counts 2.5 times the forward. flashdemo's time is `bench --json`'s median_ms, taken
only when bench verified its output first ("verified": true); anything else counts as 0.
PyTorch's times: as flashdemo times its own (gpu_timing.py: L2 flushed before each call, the
calls queued, CUDA events around each), median of --reps after --warmup, one backend at a
time (torch.nn.attention.sdpa_kernel); a backend that refuses the case is left blank.

--runs N times every case N times, each run on fresh arrays (a new `flashdemo bench` process and
new PyTorch tensors): on an H100 one kernel's speed at some shapes depends on where its arrays
land (docs/gpu-ladder.md, session 29: 660 or 707 TFLOP/s by allocation at (1, 16, 16384, 128)),
and cuDNN's moves as much, so a single run's verdict can flip. Each column is then the median of
the runs that bench verified (the line says how many were not), the ratios the median of each such
run's own ratio against the backends every run had, and "range" their least and greatest.
"""
import argparse
import json
import statistics
import subprocess
import sys
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import gpu_timing  # beside this script

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
BACKENDS = [("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def torch_ms(b, h, n, d, causal, dtype, pass_, warmup, reps):
    """{backend: median ms} for every backend that takes the case."""
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    out = {}
    for name, backend in BACKENDS:
        try:
            with sdpa_kernel([backend]):
                def forward():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                if pass_ == "fwd":
                    with torch.no_grad():
                        out[name] = gpu_timing.median_ms(torch, forward, warmup, reps)
                else:
                    o = forward()
                    g = torch.randn_like(o)
                    out[name] = gpu_timing.median_ms(
                        torch, lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True),
                        warmup, reps)
        except RuntimeError:
            pass  # this backend does not take this dtype, shape or pass
    del q, k, v
    torch.cuda.empty_cache()
    return out


def flashdemo_ms(exe, impl, dtype, b, h, n, d, causal, pass_):
    """bench's verified median ms, or None (with bench's own message on stderr)."""
    cmd = [exe, "bench", "--device", "cuda", "--impl", impl, "--dtype", dtype, "--b", str(b),
           "--h", str(h), "--n", str(n), "--d", str(d), "--pass", pass_, "--json"]
    cmd += ["--causal"] if causal else []
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    bench = [e for e in events if e.get("event") == "bench"]
    if run.returncode != 0 or not bench or not bench[-1].get("verified"):
        sys.stderr.write(f"not counted: {' '.join(cmd)}\n{run.stderr.strip()[-1000:]}\n")
        return None
    return bench[-1]["median_ms"]


def one_run(a, flops, b, h, n, d, causal, pass_):
    """One run of a case on fresh arrays: flashdemo's and each backend's TFLOP/s (0 for ours when
    bench did not verify)."""
    peers = torch_ms(b, h, n, d, causal, DTYPES[a.dtype], pass_, a.warmup, a.reps)
    ours = flashdemo_ms(a.flashdemo, a.impl, a.dtype, b, h, n, d, causal, pass_)
    return dict(flashdemo=flops / ours / 1e9 if ours else 0.0,
                peers={k: flops / ms / 1e9 for k, ms in peers.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flashdemo", required=True, help="the flashdemo binary")
    ap.add_argument("--impl", required=True, help="the rung: teaching, simt, tc, mma, hopper")
    ap.add_argument("--dtype", default="bf16", choices=DTYPES)
    ap.add_argument("--hd", default="64,128", help="head dimensions")
    ap.add_argument("--n", default="1024,4096,16384", help="sequence lengths")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--passes", default="fwd", help="fwd, bwd or fwd,bwd")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--runs", type=int, default=1,
                    help="times each case is run on fresh arrays; medians are reported")
    ap.add_argument("--out", help="also write every row as JSON here")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error(f"--runs: must be at least 1, got {a.runs}")
    warnings.filterwarnings("ignore")  # PyTorch explains every backend it skips; blanks say it
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, flashdemo --impl {a.impl} "
          f"--dtype {a.dtype}, TFLOP/s", flush=True)
    head = (f"{'pass':>4} {'d':>4} {'causal':>6} {'n':>6} | {'flashdemo':>9} {'fa2':>7} "
            f"{'cudnn':>7} {'effic.':>7} | {'/fa2':>5} {'/cudnn':>6} {'/best':>5}")
    head += f" | {'/best range':>11}" if a.runs > 1 else ""
    print(head + "\n" + "-" * len(head), flush=True)
    rows = []
    for pass_ in a.passes.split(","):
        for d in map(int, a.hd.split(",")):
            for causal in (c == "1" for c in a.causal.split(",")):
                for n in map(int, a.n.split(",")):
                    b, h = max(1, 16384 // n), 2048 // d
                    flops = 4.0 * b * h * n * n * d / (2 if causal else 1)
                    flops *= 2.5 if pass_ == "bwd" else 1.0
                    runs = [one_run(a, flops, b, h, n, d, causal, pass_) for _ in range(a.runs)]
                    # A run that bench did not verify counts as 0 alone (as with one run); with
                    # several, the medians are of the verified runs and the line says how many failed.
                    verified = [r for r in runs if r["flashdemo"] > 0]
                    failed, good = len(runs) - len(verified), verified or runs
                    mine = statistics.median(r["flashdemo"] for r in good)
                    # the backends every run had (one refused in a run: left out of the columns)
                    kept = [k for k in runs[0]["peers"] if all(k in r["peers"] for r in runs)]
                    tf = {k: statistics.median(r["peers"][k] for r in good) for k in kept}
                    ratio = {k: statistics.median(r["flashdemo"] / r["peers"][k] for r in good)
                             for k in kept}
                    by_best = [r["flashdemo"] / max(r["peers"][k] for k in kept) for r in good] \
                        if kept else []
                    best = statistics.median(by_best) if by_best else float("nan")
                    rows.append(dict(pass_=pass_, d=d, causal=causal, n=n, b=b, h=h,
                                     flashdemo=mine, **tf, ratio_vs_best=best,
                                     ratio_vs_best_runs=by_best, not_verified=failed, runs=runs))

                    def cell(key, width=7, table=tf):
                        return f"{table[key]:{width}.1f}" if key in table else f"{'-':>{width}}"

                    def frac(key, width):
                        return f"{ratio[key]:{width}.2f}" if key in ratio else f"{'-':>{width}}"

                    spread = ""
                    if a.runs > 1:
                        spread = (f" | {min(by_best):5.2f} {max(by_best):5.2f}" if by_best
                                  else f" | {'-':>5} {'-':>5}")
                        spread += f"  ({failed} of {a.runs} not verified)" if failed else ""
                    print(f"{pass_:>4} {d:>4} {int(causal):>6} {n:>6} | {mine:9.1f} {cell('fa2')} "
                          f"{cell('cudnn')} {cell('efficient')} | {frac('fa2', 5)} "
                          f"{frac('cudnn', 6)} {best:5.2f}{spread}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
