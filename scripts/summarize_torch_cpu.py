#!/usr/bin/env python3
"""Summarize several runs of the CPU comparison against PyTorch (docs/performance.md).

Two formats of run:
  * scripts/cpu_compare.py --out RUN.json: {"rows": [...]}, one row per (binary, case) with
    threads, heads, binary, pass_, d, causal, n, flashdemo, torch_flash, torch_math (GFLOP/s) and
    ratio_vs_best (flashdemo / the faster PyTorch backend, in the same run);
  * the older list of cases (one binary, 2 threads, one head) with ratio_vs_torch_flash, which
    stands in for the ratio there (those runs compared against PyTorch's flash backend).

    python3 scripts/summarize_torch_cpu.py [--binary new] docs/data/cpu_medians_run*.json

Prints, per case, the median over the runs of each side's GFLOP/s and of flashdemo's ratio to the
faster PyTorch backend (each ratio taken within one run, side by side), the ratios' range, and how
many cases reach 1.2x by their median.
"""
import argparse
import json
import statistics


def rows_of(run, binary):
    """The run's rows of one binary, keyed by case."""
    if isinstance(run, dict):
        rows = [r for r in run["rows"] if binary is None or r.get("binary") == binary]
    else:  # the older format: one binary, 2 threads, one head, ratio against torch flash
        rows = [dict(r, threads=2, heads=1, ratio_vs_best=r["ratio_vs_torch_flash"]) for r in run]
    return {(r["threads"], r["heads"], r["pass_"], r["d"], r["causal"], r["n"]): r for r in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", help="the binary's label in cpu_compare.py runs (default: all)")
    ap.add_argument("--target", type=float, default=1.2)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    runs = [rows_of(json.load(open(path)), a.binary) for path in a.runs]
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    print(f"{len(runs)} runs; GFLOP/s and ratios are medians over the runs; ratio: flashdemo over "
          f"the faster PyTorch backend, within each run\n")
    print("| threads | heads | pass | d | causal | n | flashdemo | torch flash | torch math "
          "| ratio (median) | ratio (range) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    met = 0
    for k in keys:
        cases = [r[k] for r in runs]
        med = lambda key: statistics.median(c[key] for c in cases)
        ratios = [c["ratio_vs_best"] for c in cases]
        ratio = statistics.median(ratios)
        met += ratio >= a.target
        t, h, p, d, c, n = k
        print(f"| {t} | {h} | {p} | {d} | {'yes' if c else 'no'} | {n} | {med('flashdemo'):.0f} | "
              f"{med('torch_flash'):.0f} | {med('torch_math'):.0f} | **{ratio:.2f}** | "
              f"{min(ratios):.2f} to {max(ratios):.2f} |")
    print(f"\n{met} of {len(keys)} cases at {a.target}x or more by their median ratio")


if __name__ == "__main__":
    main()
