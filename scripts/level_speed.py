#!/usr/bin/env python3
"""The portable binary's fast path against native builds, side by side in one run.

The package's binary is built for any x86-64 and carries the fast kernels of every x86-64 level;
a native build has one level's kernels, compiled for it (-DFLASHDEMO_MARCH=x86-64-vN
-DFLASHDEMO_FAST_LEVELS=). For each native build given, the portable binary runs that level's
kernels (FLASHDEMO_FAST_LEVEL) and the two alternate, round after round, on the same cases of
`flashdemo bench --impl fast --json` (fp32; forward and backward; d = 64 and 128), the one that
goes first alternating; each case must come back verified. The ratio is native time / portable time, per round, then the median: 1.00
is "as fast as a native build".

    python3 scripts/level_speed.py --portable /usr/bin/flashdemo \\
        --native x86-64-v3=build/native-v3/flashdemo --native x86-64-v4=build/native-v4/flashdemo \\
        --threads 2 --n 2048 --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def env_with(level):
    """The environment with FLASHDEMO_FAST_LEVEL set to level, or unset for None."""
    env = dict(os.environ)
    env.pop("FLASHDEMO_FAST_LEVEL", None)
    if level:
        env["FLASHDEMO_FAST_LEVEL"] = level
    return env


def bench(exe, level, args, stat):
    env = env_with(level)
    cmd = [exe, "bench", "--impl", "fast", "--dtype", "fp32", "--json"] + args
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    rows = [json.loads(l) for l in run.stdout.splitlines() if l.startswith("{")]
    if run.returncode != 0 or not rows or not rows[-1].get("verified"):
        sys.exit(f"level_speed: failed or unverified: {' '.join(cmd)}\n{run.stderr[-1000:]}")
    ms = rows[-1][stat + "_ms"]
    return ms, rows[-1]["tflops"] * 1e3 * rows[-1]["median_ms"] / ms


def level_of(exe, forced):
    out = subprocess.run([exe, "info", "--json"], capture_output=True, text=True,
                         env=env_with(forced)).stdout
    return json.loads(out.splitlines()[-1])["fast_level"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--portable", required=True, help="the package's flashdemo")
    ap.add_argument("--native", action="append", required=True, metavar="LEVEL=EXE",
                    help="a native build of one level, e.g. x86-64-v4=build/native-v4/flashdemo")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--hd", default="64,128")
    ap.add_argument("--passes", default="fwd,bwd")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="a run's time: the median of its reps, or the fastest (on a machine "
                         "whose neighbours come and go, the fastest is the code's own speed)")
    a = ap.parse_args()
    print(f"portable: {a.portable}; threads {a.threads}, n = m = {a.n}, fp32, "
          f"{a.rounds} rounds, the {a.stat} of {a.reps} reps a run; ratio = native ms / portable ms")
    print(f"{'level':>10} {'pass':>4} {'d':>4} | {'portable GFLOP/s':>16} {'native GFLOP/s':>14} | "
          f"{'ratio (median)':>14} {'range':>12}")
    for spec in a.native:
        level, exe = spec.split("=", 1)
        got = level_of(a.portable, level)
        if got != level:
            sys.exit(f"level_speed: the portable binary runs {got}, not {level}")
        for pass_ in a.passes.split(","):
            for d in map(int, a.hd.split(",")):
                args = ["--threads", str(a.threads), "--n", str(a.n), "--d", str(d),
                        "--pass", pass_, "--reps", str(a.reps)]
                ratios, port_g, nat_g = [], [], []
                for r in range(a.rounds):  # who goes first alternates (warm caches, clocks)
                    if r % 2 == 0:
                        p_ms, p_g = bench(a.portable, level, args, a.stat)
                        n_ms, n_g = bench(exe, None, args, a.stat)
                    else:
                        n_ms, n_g = bench(exe, None, args, a.stat)
                        p_ms, p_g = bench(a.portable, level, args, a.stat)
                    ratios.append(n_ms / p_ms)
                    port_g.append(p_g)
                    nat_g.append(n_g)
                print(f"{level:>10} {pass_:>4} {d:>4} | {statistics.median(port_g):16.1f} "
                      f"{statistics.median(nat_g):14.1f} | {statistics.median(ratios):14.2f} "
                      f"{min(ratios):5.2f}-{max(ratios):.2f}", flush=True)


if __name__ == "__main__":
    main()
