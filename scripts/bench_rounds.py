#!/usr/bin/env python3
"""Several builds of flashdemo timed side by side, in rounds, each run its own process.

For each case (the arguments of `flashdemo bench` after `--device cuda --impl hopper --dtype bf16
--json`), every round runs each build once, in the order given, so that a drift of the machine
(its clock, its neighbours) falls on all builds alike. Prints, for each case and build, the
TFLOP/s of each round and its ratio to the first build's in the same round:

  python3 scripts/bench_rounds.py --exe OLD --exe NEW [--exe ...] [--rounds 3] \
      --case "--pass fwd --b 16 --h 32 --n 1024 --d 64 --causal" [--case ...]

(A case of one word is written --case=--causal.) Builds are named by their place and file name,
`1:flashdemo`, `2:flashdemo`, ...; the same build may be given twice (an A/A check of the noise).
A run that failed (a bench whose check fails exits 1; one that printed no result, or 0 TFLOP/s
in the first build) prints nan. Exit 2, with one line on stderr, where an --exe is not an
executable file, a case is empty or --rounds is under 1 (each checked before any run).
"""
import argparse
import json
import math
import os
import shlex
import subprocess
import sys


def tflops(exe, case):
    """One run's TFLOP/s, or nan where the run failed or printed no result."""
    cmd = [exe, "bench", "--device", "cuda", "--impl", "hopper", "--dtype", "bf16", "--json"] + case
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
        result = json.loads(out.stdout) if out.returncode == 0 else {}
        return float(result["tflops"]) if result.get("verified") else math.nan
    except (OSError, ValueError, KeyError, TypeError):
        return math.nan


def ratio(x, first):
    return x / first if first else math.nan


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):  # one line, as the script's own errors
        sys.exit(f"bench_rounds: {message}")


def main():
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", action="append", required=True, help="a flashdemo build (repeat)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--case", action="append", required=True, help="bench arguments (repeat)")
    args = ap.parse_args()
    for exe in args.exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            sys.exit(f"bench_rounds: {exe}: not an executable file")
    if args.rounds < 1:
        sys.exit("bench_rounds: --rounds must be 1 or more")
    cases = [shlex.split(text) for text in args.case]
    if not all(cases):
        sys.exit("bench_rounds: an empty --case")
    names = [f"{k + 1}:{os.path.basename(exe)}" for k, exe in enumerate(args.exe)]
    for text, case in zip(args.case, cases):
        times = [[] for _ in args.exe]
        for _ in range(args.rounds):
            for k, exe in enumerate(args.exe):
                times[k].append(tflops(exe, case))
        print(text, flush=True)
        for name, runs in zip(names, times):
            values = " ".join(f"{x:.1f}" for x in runs)
            ratios = " ".join(f"{ratio(x, f):.3f}" for x, f in zip(runs, times[0]))
            print(f"  {name:20} {values} | /first {ratios}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:  # a message: one line on stderr, exit 2
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
