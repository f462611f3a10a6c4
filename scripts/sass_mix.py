#!/usr/bin/env python3
"""Two kernels' SASS instruction mix side by side, from ncu's source page.

Each input is `ncu -i REPORT --page source --print-source sass --csv` of one kernel (a profile
with the SourceCounters section). For each opcode (its first name, without predicate or
modifiers): the instructions executed by each kernel (warp-level, summed over the kernel's
lines), their difference, and the warp-state samples that ncu took at those lines. Sorted by
the size of the difference: where two builds of one loop differ, and what it costs.

  python3 scripts/sass_mix.py A.csv B.csv [--top 25]

Exit 2, with one line on stderr, where a file cannot be read or holds no SASS lines.
"""
import argparse
import collections
import csv
import re
import sys


def count(text):
    return int(text.replace(",", "") or 0)  # ncu may print 1,234


def load(path):
    """(opcode, instructions executed, samples) for each SASS line; a file of several kernels is
    read as one (each kernel's header row starts its lines again)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    out, columns = [], None
    for r in rows:
        if "Source" in r and "Instructions Executed" in r:  # a kernel's header row
            columns = (r.index("Source"), r.index("Instructions Executed"),
                       r.index("Warp Stall Sampling (All Samples)"))
            continue
        if columns is None or len(r) <= max(columns):
            continue  # the "Kernel Name" line, or a short one
        src, execd, samples = columns
        text = r[src].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0] if text else "?"
        out.append((op, count(r[execd]), count(r[samples])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    mix = {}
    for name in ("a", "b"):
        path = getattr(args, name)
        try:
            lines = load(path)
        except (OSError, csv.Error, UnicodeDecodeError) as e:
            sys.stderr.write(f"sass_mix.py: cannot read {path}: {e}\n")
            return 2
        if not lines:
            sys.stderr.write(f"sass_mix.py: {path}: no SASS lines "
                             "(not ncu's source page as CSV?)\n")
            return 2
        execd, samples = collections.Counter(), collections.Counter()
        for op, e, s in lines:
            execd[op] += e
            samples[op] += s
        mix[name] = (execd, samples)
        print(f"{name.upper()}: {sum(execd.values())} instructions executed, "
              f"{sum(samples.values())} samples, {len(lines)} SASS lines")
    (ea, sa), (eb, sb) = mix["a"], mix["b"]
    ops = sorted(set(ea) | set(eb), key=lambda k: (-abs(eb[k] - ea[k]), k))
    print("%-10s %12s %12s %11s | %8s %8s" %
          ("opcode", "A executed", "B executed", "B - A", "A samples", "B samples"))
    for k in ops[:args.top]:
        print("%-10s %12d %12d %11d | %8d %8d" % (k, ea[k], eb[k], eb[k] - ea[k], sa[k], sb[k]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
