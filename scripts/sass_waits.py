#!/usr/bin/env python3
"""A kernel's mbarrier waits, try by try, from ncu's source page.

The input is `ncu -i REPORT --page source --print-source sass --csv` of one kernel (a profile
with the SourceCounters section; a .gz file is read through gzip). An mbarrier wait compiles to a
first try (`SYNCS.PHASECHK.TRANS64.TRYWAIT`) and a branch, taken while the phase is not complete,
to a retry block out of line: the try again (after a `YIELD` in some kernels) and a branch back.
For each first try in the kernel's order, this prints:

  tries     the first try's instructions executed (warp-level: one a warp a wait)
  retries   the retry block's try, executed (0 where no wait of that line ever retried)
  a try     retries / tries
  samples   ncu's warp-state samples at the first try and its branch (the waiting warps' time,
            before any retry), then at the retry block's lines

and above it the kernel's totals: instructions executed, the SYNCS among them, the retry blocks'
instructions (try, branch and any YIELD) and their share, and the samples. A retry block is told
from a first try by where it is: the target of a first try's branch.

  python3 scripts/sass_waits.py PAGE.csv[.gz]

Exit 2, with one line on stderr, where the file cannot be read or holds no SASS lines.
"""
import csv
import re
import sys
import zlib

from sass_mix import count, opcode, read_rows  # (this script's directory is on sys.path)

TRY = "SYNCS.PHASECHK.TRANS64.TRYWAIT"


def load(path):
    """The kernel's name and its SASS lines as (address, text, executed, samples)."""
    rows = read_rows(path)
    name, columns, lines = "?", None, []
    for r in rows:
        if r and r[0] == "Kernel Name" and len(r) > 1:
            name = r[1]
            continue
        if "Source" in r and "Instructions Executed" in r and "Address" in r:
            columns = (r.index("Address"), r.index("Source"), r.index("Instructions Executed"),
                       r.index("Warp Stall Sampling (All Samples)")
                       if "Warp Stall Sampling (All Samples)" in r else None)
            continue
        if columns is None or len(r) <= max(c for c in columns if c is not None):
            continue
        address, src, execd, samples = columns
        lines.append((int(r[address], 16), r[src].strip(), count(r[execd]),
                      count(r[samples]) if samples is not None else 0))
    return name, lines


def branch(text):
    """(predicate, target address) of a predicated `@!Pn BRA` line, else None."""
    m = re.match(r"^@!(U?P\w+)\s+BRA\s+(0x[0-9a-fA-F]+)", text)
    return (m.group(1), int(m.group(2), 16)) if m else None


def waits(lines):
    """For each first try: (its index, the index of its branch, the retry block's indices, the
    retry try's index, the block's exit index). A try's branch is the next `@!P BRA` on its
    predicate (ptxas may schedule other instructions between); a first try's jumps forward, out
    of line, a retry try's back to its own block. The block runs from that target to its exit,
    the unconditional `BRA` back into the code, executed once a wait that retried."""
    at = {address: k for k, (address, _, _, _) in enumerate(lines)}
    found = []
    for k, (address, text, _, _) in enumerate(lines):
        if not text.startswith(TRY):
            continue
        pred = text[len(TRY):].split(",")[0].strip()
        j = None
        for m in range(k + 1, min(k + 65, len(lines))):
            if lines[m][1].startswith(TRY):
                break  # the next wait's try: this one's predicate is not branched on before it
            b = branch(lines[m][1])
            if b and b[0] == pred:
                j = m
                break
        if j is None:
            continue
        target = branch(lines[j][1])[1]
        if target <= address or target not in at:
            continue  # a retry try: its branch loops back
        block, try_at, exit_at = [], None, None
        for m in range(at[target], len(lines)):
            block.append(m)
            if try_at is None and lines[m][1].startswith(TRY):
                try_at = m
            if re.match(r"^BRA\s", lines[m][1]):
                exit_at = m
                break
        found.append((k, j, block, try_at, exit_at))
    return found


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: sass_waits.py PAGE.csv[.gz]", file=sys.stderr)
        return 2
    try:
        name, lines = load(sys.argv[1])
    except (OSError, UnicodeDecodeError, csv.Error, ValueError, EOFError, zlib.error) as e:
        print(f"sass_waits.py: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    if not lines:
        print(f"sass_waits.py: {sys.argv[1]} holds no SASS lines (ncu's --page source --csv)",
              file=sys.stderr)
        return 2
    total = sum(x[2] for x in lines)
    samples = sum(x[3] for x in lines)
    syncs = sum(x[2] for x in lines if opcode(x[1]) == "SYNCS")
    found = waits(lines)
    in_retries = sum(lines[m][2] for w in found for m in w[2])
    print(f"kernel: {name[:100]}")
    print(f"instructions executed {total:,}; SYNCS {syncs:,}; in retry blocks {in_retries:,} "
          f"({100.0 * in_retries / total:.1f} %); samples {samples:,}")
    print(f"{'first try (address, operands)':<38} {'tries':>9} {'retried':>9} {'retries':>11} "
          f"{'a try':>7} {'samples':>8} {'retry samples':>14}")
    for k, j, block, try_at, exit_at in found:
        address, text, tries, _ = lines[k]
        retries = lines[try_at][2] if try_at is not None else 0
        retried = lines[exit_at][2] if exit_at is not None else 0
        first = lines[k][3] + lines[j][3]
        again = sum(lines[m][3] for m in block)
        operands = text[len(TRY):].strip()
        per = f"{retries / tries:.2f}" if tries else "-"
        print(f"{hex(address & 0xFFFFF) + '  ' + operands:<38} {tries:>9,} {retried:>9,} "
              f"{retries:>11,} {per:>7} {first:>8,} {again:>14,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
