#!/usr/bin/env python3
"""Summarize several runs of the CPU comparison against PyTorch (docs/performance.md, "Against
PyTorch's fused CPU attention"): JSON files holding one object per case, with the fields pass_,
d, causal, n, flashdemo, torch_flash, torch_math (GFLOP/s) and ratio_vs_torch_flash.

    python3 scripts/summarize_torch_cpu.py docs/data/torch_cpu_kernel_run*.json

Prints, per case, the median over the runs of flashdemo's and PyTorch's GFLOP/s and of the ratio
flashdemo / torch_flash (each ratio taken within one run, side by side), and the ratios' range.
"""
import json
import statistics
import sys


def main():
    runs = [json.load(open(path)) for path in sys.argv[1:]]
    if not runs:
        sys.exit("usage: summarize_torch_cpu.py RUN.json [RUN.json ...]")
    print(f"{len(runs)} runs; GFLOP/s and ratios are medians over the runs\n")
    print("| pass | d | causal | n | flashdemo | torch flash | torch math | ratio (median) | ratio (range) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, row in enumerate(runs[0]):
        cases = [run[k] for run in runs]
        med = lambda key: statistics.median(c[key] for c in cases)
        ratios = [c["ratio_vs_torch_flash"] for c in cases]
        print(f"| {row['pass_']} | {row['d']} | {'yes' if row['causal'] else 'no'} | {row['n']} | "
              f"{med('flashdemo'):.1f} | {med('torch_flash'):.1f} | {med('torch_math'):.1f} | "
              f"**{statistics.median(ratios):.2f}** | {min(ratios):.2f} to {max(ratios):.2f} |")


if __name__ == "__main__":
    main()
