#!/usr/bin/env python3
"""Random small problems through flashdemo's subcommands: every correct run must pass the rule.

    python3 scripts/verdict_sweep.py build/release/flashdemo --kind small --seed 11 --runs 1200

Each run is a correct path (no --break) on a random problem, so anything but a pass with exit 0 is
the judge failing a right answer (or a path computing a wrong one): the sweep prints those runs'
command lines and their error / bound per array, then the count. Exit 2 (a refused option
combination, such as bf16 on the fast path) is skipped, not counted. Kinds:
  small     forward and backward, teaching and fast, n and m from 1 to 700, d 1 to 64, every mask,
            fp64, fp32, and (teaching) bf16 and fp16 through --precision
  tiny-d    backward at d = 1 to 3 in fp32 and fp64, scales 0.1 to 10
  scales    forward, backward, ring and decode at scales 0.01 to 1000
  merged    decode (splits) and ring (ranks, layouts, both passes) in fp32 and fp64
  long-rows forward (teaching and fast) and decode with one split, fp64 and fp32, a few rows of
            d 4 to 16 against 500 to 5,000 keys at scales 1 to 3: sharp rows that sum over many
            keys (docs/correctness.md, "Still open")
  mistakes  forward and backward with a random --break mistake, every precision: the opposite
            count, how many of them the rule fails (a mistake that changes nothing there, such as
            finite-mask on rows that all see a key, passes rightly); exit 0 either way
docs/correctness.md, section 2, gives what these found and what changed.
"""
import argparse
import json
import os
import random
import subprocess
import sys


def masks(rng):
    c = rng.random()
    if c < 0.3:
        return ["--causal"]
    if c < 0.5:
        return ["--causal-align", "bottom-right"]
    return []


def small(rng):
    sub = rng.choice(["forward", "backward", "backward"])
    n = rng.choice([1, 2, 3, 5, 17, 64, 129, 300])
    m = rng.choice([n, 1, 2, 7, 128, 257, 700])
    impl = rng.choice(["teaching", "fast"])
    dt = rng.choice(["fp64", "fp32", "bf16", "fp16"] if impl == "teaching" else ["fp64", "fp32"])
    args = [sub, "--n", str(n), "--m", str(m), "--d", str(rng.choice([1, 2, 3, 4, 8, 16, 32, 64])),
            "--impl", impl, "--trace", "none"]
    args += ["--precision", dt] if dt in ("bf16", "fp16") else ["--dtype", dt]
    if impl == "teaching":
        args += ["--block-q", str(rng.randint(1, 40)), "--block-k", str(rng.randint(1, 40))]
    return args + masks(rng)


def tiny_d(rng):
    n = rng.choice([1, 2, 5, 17, 64, 129, 300])
    m = rng.choice([n, 7, 128, 257, 700])
    impl = rng.choice(["teaching", "fast"])
    args = ["backward", "--n", str(n), "--m", str(m), "--d", str(rng.choice([1, 2, 3])), "--impl",
            impl, "--trace", "none", "--dtype", rng.choice(["fp64", "fp32"])]
    if impl == "teaching":
        args += ["--block-q", str(rng.randint(1, 40)), "--block-k", str(rng.randint(1, 40))]
    if rng.random() < 0.3:
        args += ["--scale", rng.choice(["0.1", "2.0", "10.0"])]
    return args + masks(rng)


def merged(rng, scales=None):
    dt, d = rng.choice(["fp64", "fp32"]), str(rng.choice([1, 2, 3, 8, 32, 64, 128]))
    if rng.random() < 0.5:
        args = ["decode", "--n", str(rng.choice([1, 1, 2, 5])), "--m",
                str(rng.choice([1, 7, 100, 300, 1000, 5000])), "--d", d, "--h",
                str(rng.choice([1, 2, 3])), "--reps", "1", "--threads", "2"]
        if rng.random() < 0.5:
            args += ["--splits", str(rng.choice([1, 2, 3, 7, 20]))]
    else:
        n = rng.choice([1, 5, 17, 64, 100, 257])
        args = ["ring", "--n", str(n), "--m", str(rng.choice([n, 7, 60, 300])), "--d", d,
                "--ranks", str(rng.choice([1, 2, 3, 4, 7])), "--pass", rng.choice(["fwd", "bwd"])]
        if rng.random() < 0.3:
            args += ["--layout", rng.choice(["zigzag", "contiguous"])]
    args += ["--dtype", dt]
    if rng.random() < 0.3:
        args += ["--causal"]
    if scales or rng.random() < 0.3:
        args += ["--scale", rng.choice(scales or ["0.1", "2.0", "10.0"])]
    return args


def long_rows(rng):
    n, m, d = rng.choice([1, 5]), rng.choice([500, 2000, 5000]), rng.choice([4, 8, 16])
    path = rng.choice(["teaching", "fast", "decode"])  # forward's two CPU paths, or decode
    if path == "decode":
        args = ["decode", "--h", "3", "--reps", "1", "--threads", "2", "--splits", "1"]
    else:
        args = ["forward", "--impl", path, "--trace", "none"]
    return args + ["--n", str(n), "--m", str(m), "--d", str(d), "--dtype",
                   rng.choice(["fp64", "fp32"]), "--scale", rng.choice(["1.0", "2.0", "3.0"])]


def at_scales(rng):
    scales = ["0.01", "5", "30", "100", "1000"]
    if rng.random() < 0.5:
        return merged(rng, scales)
    args = small(rng)
    return args + ["--scale", rng.choice(scales)]


def mistakes(rng):
    sub = rng.choice(["forward", "backward"])
    names = ["no-max", "no-rescale", "l-starts-at-1", "finite-mask", "wrong-align"]
    mistake = rng.choice(names + (["no-d"] if sub == "backward" else []))
    n = rng.choice([8, 17, 64, 100, 129])
    args = [sub, "--break", mistake, "--n", str(n), "--m", str(rng.choice([n, 33, 60, 128])), "--d",
            str(rng.choice([4, 16, 32, 64])), "--trace", "none"]
    dt = rng.choice(["bf16", "fp16", "fp32", "fp64"])
    args += ["--precision", dt] if dt in ("bf16", "fp16") else ["--dtype", dt]
    if mistake in ("finite-mask", "wrong-align") or rng.random() < 0.3:
        args += ["--causal-align", "bottom-right"]
    if rng.random() < 0.3:
        args += ["--scale", rng.choice(["0.5", "2.0", "5.0"])]
    return args


KINDS = {"small": small, "tiny-d": tiny_d, "scales": at_scales, "merged": merged,
         "long-rows": long_rows, "mistakes": mistakes}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("flashdemo")
    ap.add_argument("--kind", choices=sorted(KINDS), default="small")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    if not os.access(a.flashdemo, os.X_OK):
        ap.error("%s: not an executable flashdemo" % a.flashdemo)
    if a.runs < 1:
        ap.error("--runs must be at least 1 (got %d)" % a.runs)
    rng = random.Random(a.seed)
    failed = judged = 0
    for _ in range(a.runs):
        args = KINDS[a.kind](rng) + ["--seed", str(rng.randint(0, 10**6)), "--json"]
        r = subprocess.run([a.flashdemo] + args, capture_output=True, text=True, timeout=600)
        if r.returncode == 2:
            continue  # a refused combination of options
        judged += 1
        result = None
        for line in r.stdout.splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if isinstance(j, dict) and "pass" in j:
                result = j
        passed = r.returncode == 0 and result and result.get("pass") is True
        if a.kind == "mistakes":  # --break exits 0 with its FAIL: count the runs the rule failed
            failed += result is not None and result.get("pass") is not True
            continue
        if passed:
            continue
        failed += 1
        ratios = {k[4:]: "%.2g" % (result[k] / result["bound_" + k[4:]])
                  for k in (result or {}) if k.startswith("err_") and result.get("bound_" + k[4:])}
        print("FAIL (exit %d) flashdemo %s | error / bound %s | %s" %
              (r.returncode, " ".join(args), ratios, r.stderr.strip()[:200]))
    if a.kind == "mistakes":
        print("%d of %d runs with a mistake failed by the rule (seed %d)" % (failed, judged, a.seed))
        sys.exit(0)
    print("%d of %d judged runs not a pass (%s, seed %d)" % (failed, judged, a.kind, a.seed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
