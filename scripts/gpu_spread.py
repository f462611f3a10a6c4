#!/usr/bin/env python3
"""The spread of a GPU timing, launch by launch, beside the SM clock and power.

`flashdemo bench --json` lists every launch's milliseconds in the order they ran (`times_ms`).
This script runs one bench command R times while `nvidia-smi` samples the GPU's SM clock, power
draw and clock-event reasons, keeps everything in one log, and prints for each run:

  median, min, max, max / min   of the run's launches  (a bimodal case shows as a large max / min
                                and as two levels in the list of launches)
  SM clock min .. max (median), power up to P W, the clock-event reasons seen
                                over the samples taken between the run's start and end

so that a slow stretch can be set beside the clock: if the clock falls under a power cap while the
launches are slow, the spread is the card's, not the kernel's. nvidia-smi updates its values about
every 100 ms whatever it is asked, so a sample covers several launches of a long kernel.

  python3 scripts/gpu_spread.py --exe build/flashdemo [--runs 4] [--log FILE] -- bench --device \
      cuda --impl hopper --dtype bf16 --pass bwd --b 1 --h 16 --n 16384 --d 128 --reps 40
  python3 scripts/gpu_spread.py --from FILE      # the report again, from a log (no GPU needed)

Log lines: `=== bench ARGS T0`, the bench's JSON line, `=== end T1` (T in Unix seconds), and the
samples as nvidia-smi prints them (`timestamp, clocks.sm, clocks.mem, power.draw, temperature.gpu,
clocks_event_reasons.active`). Other lines are ignored, so a log may sit inside a longer file.
Exit 2, with one line on stderr, where the arguments name no bench command, nvidia-smi is absent,
or the log cannot be read or holds no run.
"""
import argparse
import datetime
import json
import re
import shutil
import statistics
import subprocess
import sys
import time

QUERY = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"
REASONS = {  # nvidia-smi's clocks_event_reasons bits
    0x1: "idle", 0x2: "applications clocks", 0x4: "software power cap", 0x8: "hardware slowdown",
    0x10: "sync boost", 0x20: "software thermal", 0x40: "hardware thermal",
    0x80: "hardware power brake", 0x100: "display clocks"}
SAMPLE = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+), (\d+) MHz, \d+ MHz, ([\d.]+) W, \d+, "
                    r"(0x[0-9a-fA-F]+)$")
MARK = re.compile(r"^=== (.*?) ?(\d{9,}\.\d+)$")


def reason_names(mask):
    names = [name for bit, name in REASONS.items() if mask & bit]
    return ", ".join(names) if names else "none"


def parse(lines):
    """(runs, samples): runs as dicts with label, t0, t1, bench (the JSON object); samples as
    (t, clock MHz, power W, reason mask)."""
    runs, samples, current = [], [], None
    for line in lines:
        line = line.rstrip("\n")
        s = SAMPLE.match(line)
        if s:
            t = datetime.datetime.strptime(s.group(1), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, int(s.group(2)), float(s.group(3)), int(s.group(4), 16)))
            continue
        m = MARK.match(line)
        if m and m.group(1) == "end" and current is not None:
            current["t1"] = float(m.group(2))
            if "bench" in current:
                runs.append(current)
            current = None
        elif m:
            current = {"label": m.group(1), "t0": float(m.group(2))}
        elif current is not None and line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if obj.get("event") == "bench" and "times_ms" in obj:
                current["bench"] = obj
    return runs, samples


def report(runs, samples, out=sys.stdout):
    out.write("run  label                               median ms   min ms   max ms  max/min  "
              "SM clock MHz (median)   power W  reasons\n")
    for k, r in enumerate(runs, 1):
        b = r["bench"]
        inside = [s for s in samples if r["t0"] <= s[0] <= r["t1"]]
        busy = [s for s in inside if not s[3] & 0x1] or inside  # not idle, where any
        clock = "no samples"
        power, reasons = "", ""
        if busy:
            clocks = [s[1] for s in busy]
            clock = f"{min(clocks)} .. {max(clocks)} ({statistics.median(clocks):.0f})"
            power = f"{max(s[2] for s in busy):.0f}"
            mask = 0
            for s in busy:
                mask |= s[3]
            reasons = reason_names(mask)
        label = r["label"] if len(r["label"]) <= 34 else "..." + r["label"][-31:]  # its tail
        out.write(f"{k:<4} {label:<34} {b['median_ms']:>10.3f} {b['min_ms']:>8.3f} "
                  f"{b['max_ms']:>8.3f} {b['max_ms'] / b['min_ms']:>8.3f}  {clock:<23} "
                  f"{power:>7}  {reasons}\n")
        out.write("     launches, ms: " + " ".join(f"{t:.2f}" for t in b["times_ms"]) + "\n")


def live(exe, args, runs, log):
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader",
                            "-lms", "20"], stdout=log, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        for _ in range(runs):
            log.write(f"=== {' '.join(args)} {time.time():.6f}\n")
            log.flush()
            p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            for line in p.stdout.splitlines():
                if line.startswith("{"):
                    log.write(line + "\n")
            if p.returncode != 0:
                sys.stderr.write(p.stderr)
            log.write(f"=== end {time.time():.6f}\n")
            log.flush()
            time.sleep(0.5)
    finally:
        smi.terminate()
        smi.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", help="the flashdemo binary")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--log", default="gpu_spread.log", help="where the samples and runs go")
    ap.add_argument("--from", dest="source", help="report on a log instead of running")
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- bench ARGS (with --json added)")
    o = ap.parse_args()
    if o.source is None:
        args = [a for a in o.bench if a != "--"]
        if not o.exe or not args or args[0] != "bench":
            sys.stderr.write("gpu_spread: give --exe EXE -- bench ARGS, or --from LOG\n")
            sys.exit(2)
        if "--json" not in args:
            args.append("--json")
        if shutil.which("nvidia-smi") is None:
            sys.stderr.write("gpu_spread: nvidia-smi is not on the PATH (a GPU machine's tool)\n")
            sys.exit(2)
        try:
            with open(o.log, "w") as log:
                live(o.exe, args, o.runs, log)
        except OSError as e:
            sys.stderr.write(f"gpu_spread: {e}\n")
            sys.exit(2)
        o.source = o.log
    try:
        with open(o.source) as f:
            runs, samples = parse(f)
    except OSError as e:
        sys.stderr.write(f"gpu_spread: {e}\n")
        sys.exit(2)
    if not runs:
        sys.stderr.write(f"gpu_spread: {o.source} holds no bench run with its launch times\n")
        sys.exit(2)
    try:
        report(runs, samples)
    except BrokenPipeError:  # the reader stopped early (| head): nothing more to say
        sys.stderr.close()


if __name__ == "__main__":
    main()
