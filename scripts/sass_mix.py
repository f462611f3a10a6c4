#!/usr/bin/env python3
"""Two kernels' SASS instruction mix side by side, from ncu's source page.

Each input is `ncu -i REPORT --page source --print-source sass --csv` of one kernel (a profile
with the SourceCounters section). For each opcode (its first name, without predicate or
modifiers): the instructions executed by each kernel (warp-level, summed over the kernel's
lines), their difference, and the warp-state samples that ncu took at those lines. Sorted by
the size of the difference: where two builds of one loop differ, and what it costs.

With --stalls, then the warp-state samples by ncu's stall reason (the `stall_*` columns, all
samples) for each kernel, sorted by the size of their difference, and for each of the reasons
that changed most, the opcodes whose lines hold those samples: which wait grew, and at what.

  python3 scripts/sass_mix.py A.csv B.csv [--top 25] [--stalls]

A file whose name ends in .gz is read through gzip (the pages kept in docs/data are).

Exit 2, with one line on stderr, where a file cannot be read or holds no SASS lines.
"""
import argparse
import collections
import csv
import gzip
import re
import sys
import zlib


def count(text):
    return int(text.replace(",", "") or 0)  # ncu may print 1,234


def read_rows(path):
    """The rows of ncu's CSV page at path (through gzip where the name ends in .gz)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return list(csv.reader(f))


def opcode(text):
    """A SASS line's opcode: its first name, without predicate or modifiers."""
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0] if text else "?"


def load(path):
    """(opcode, instructions executed, samples, {stall reason: samples}) for each SASS line; a
    file of several kernels is read as one (each kernel's header row starts its lines again)."""
    rows = read_rows(path)
    out, columns, stalls = [], None, {}
    for r in rows:
        if "Source" in r and "Instructions Executed" in r:  # a kernel's header row
            if "Warp Stall Sampling (All Samples)" not in r:
                raise ValueError("no warp-state samples (profile with --section SourceCounters)")
            columns = (r.index("Source"), r.index("Instructions Executed"),
                       r.index("Warp Stall Sampling (All Samples)"))
            stalls = {c[len("stall_"):]: i for i, c in enumerate(r)
                      if c.startswith("stall_") and "Not Issued" not in c}
            continue
        if columns is None or len(r) <= max(columns):
            continue  # the "Kernel Name" line, or a short one
        src, execd, samples = columns
        text = r[src].strip()
        op = opcode(text)
        waits = {k: count(r[i]) for k, i in stalls.items() if i < len(r)}
        out.append((op, count(r[execd]), count(r[samples]), waits))
    return out


def print_stalls(lines_a, lines_b, top):
    """The samples by stall reason in A and B, and where the reasons that changed most sit."""
    by = {}
    for name, lines in (("a", lines_a), ("b", lines_b)):
        total, at = collections.Counter(), collections.defaultdict(collections.Counter)
        for op, _, _, waits in lines:
            for k, v in waits.items():
                total[k] += v
                at[k][op] += v
        by[name] = (total, at)
    (ta, aa), (tb, ab) = by["a"], by["b"]
    reasons = sorted(set(ta) | set(tb), key=lambda k: (-abs(tb[k] - ta[k]), k))
    print()
    print("%-20s %9s %9s %9s" % ("stall reason", "A samples", "B samples", "B - A"))
    for k in reasons[:top]:
        print("%-20s %9d %9d %9d" % (k, ta[k], tb[k], tb[k] - ta[k]))
    for k in reasons[:min(3, top)]:
        print(f"{k}: at A's " + ", ".join(f"{op} {v}" for op, v in aa[k].most_common(4)) +
              "; at B's " + ", ".join(f"{op} {v}" for op, v in ab[k].most_common(4)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--top", type=int, default=25, help="rows to print (at least 1)")
    ap.add_argument("--stalls", action="store_true", help="the samples by stall reason too")
    args = ap.parse_args()
    if args.top < 1:
        sys.stderr.write(f"sass_mix.py: --top must be at least 1, got {args.top}\n")
        return 2
    mix, lines_of = {}, {}
    for name in ("a", "b"):
        path = getattr(args, name)
        try:
            lines = load(path)
        except (OSError, EOFError, zlib.error, csv.Error, UnicodeDecodeError, ValueError) as e:
            sys.stderr.write(f"sass_mix.py: cannot read {path}: {e}\n")
            return 2
        if not lines:
            sys.stderr.write(f"sass_mix.py: {path}: no SASS lines "
                             "(not ncu's source page as CSV?)\n")
            return 2
        lines_of[name] = lines
        execd, samples = collections.Counter(), collections.Counter()
        for op, e, s, _ in lines:
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
    if args.stalls:
        print_stalls(lines_of["a"], lines_of["b"], args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
