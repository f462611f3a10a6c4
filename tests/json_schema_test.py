#!/usr/bin/python3
"""json_schema_test.py — every JSON object flashdemo prints is the one docs/trace-format.md
describes (run by ctest; python3 stdlib only).

Usage: json_schema_test.py FLASHDEMO REPO WORKDIR

The schema is read from docs/trace-format.md itself: each `<!-- schema: EVENT [FIELD=V1,V2 ...] -->`
comment is followed by a table whose rows name fields (`a`, `b` in the first column) and their
type (second column; "*(optional)*" marks a field that is sometimes absent). The selectors tell
apart the shapes one event name has (`problem subcommand=forward,backward`, `tile pass=forward`).
Then every subcommand that takes --json runs (softmax, forward, backward, memory, check, bench,
decode, walkthrough, info, in several variants, plus a --trace-json file), and for every line
printed:
  - it is one JSON object with a string "event";
  - exactly one documented schema matches it (its event, and its selectors);
  - every required field of that schema is present, no undocumented field appears, and each value
    has the documented type;
and at the end every documented schema and every documented field was seen at least once, so the
page lists nothing that the program no longer prints (`flashdemo ladder` runs only where a GPU
answers; without one, what only it prints is exempt: GPU_ONLY). Prints 'N passed, N failed'.
"""
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import expect, finish  # noqa: E402

SCHEMA = re.compile(r"^<!--\s*schema:\s*(\S+)((?:\s+\w+=\S+)*)\s*-->\s*$")
NONFINITE = ("inf", "-inf", "nan")


def cells(row):
    """The cells of a Markdown table row; `\\|` inside a cell is a literal bar."""
    parts = re.split(r"(?<!\\)\|", row.strip().strip("|"))
    return [p.replace("\\|", "|").strip() for p in parts]


def read_schemas(path):
    """[{event, select: {field: [values]}, fields: {name: type}, optional: {names}, line}]."""
    lines = open(path, encoding="utf-8").read().split("\n")
    schemas = []
    for k, line in enumerate(lines):
        m = SCHEMA.match(line)
        if not m:
            continue
        select = {}
        for pair in m.group(2).split():
            field, values = pair.split("=", 1)
            select[field] = values.split(",")
        t = k + 1
        while t < len(lines) and not lines[t].startswith("|"):
            t += 1
        rows = []
        while t < len(lines) and lines[t].startswith("|"):
            rows.append(cells(lines[t]))
            t += 1
        expect(len(rows) >= 3 and rows[0][:2] == ["field", "type"],
               f"trace-format.md:{k + 1}: the schema comment is followed by a field | type table")
        fields, optional = {}, set()
        for row in rows[2:]:
            names = re.findall(r"`([^`]+)`", row[0])
            expect(names, f"trace-format.md: a row with no `field` name: {row}")
            for name in names:
                expect(name not in fields, f"trace-format.md:{k + 1}: {name} listed twice")
                fields[name] = row[1]
                if "*(optional)*" in row[1]:
                    optional.add(name)
        schemas.append({"event": m.group(1), "select": select, "fields": fields,
                        "optional": optional, "line": k + 1, "seen": False, "fields_seen": set()})
    return schemas


def type_ok(type_cell, v):
    """Whether the value v fits the documented type (a known word, or a list of literals)."""
    t = type_cell.replace("*(optional)*", "").strip()
    if v is None:
        return "or null" in t
    literals = re.findall(r'`"([^"`]*)"`', t)
    if literals and re.fullmatch(r'`"[^"`]*"`(\s*\|\s*`"[^"`]*"`)*', t):
        return v in literals
    low = t.lower()
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    if low.startswith("integer"):
        return isinstance(v, int) and not isinstance(v, bool)
    if low.startswith("number"):
        return number or v in NONFINITE
    if low.startswith("boolean"):
        return isinstance(v, bool)
    if low.startswith("string"):
        return isinstance(v, str)
    if low.startswith("`[begin, end)`"):
        return isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)
    if low.startswith("`[row, col]`"):
        return isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)
    if low.startswith("array"):
        return isinstance(v, list)
    if low.startswith("object"):
        return isinstance(v, dict)
    expect(False, f"trace-format.md: a type the test does not know: {type_cell!r}")
    return True


def check_object(obj, where, schemas):
    if not expect(isinstance(obj, dict) and isinstance(obj.get("event"), str),
                  f"{where}: an object with a string \"event\": {str(obj)[:120]}"):
        return
    matching = [s for s in schemas if s["event"] == obj["event"] and all(
        str(obj.get(f)) in values for f, values in s["select"].items())]
    shape = ", ".join(f"{f}={obj[f]}" for f in ("subcommand", "pass") if f in obj)
    if not expect(len(matching) == 1,
                  f"{where}: event {obj['event']!r}{f' ({shape})' if shape else ''} has "
                  f"{len(matching)} schemas in trace-format.md, wants exactly 1"):
        return
    s = matching[0]
    s["seen"] = True
    present = set(obj) - {"event"}
    s["fields_seen"] |= present
    required = set(s["fields"]) - s["optional"]
    expect(not (required - present),
           f"{where}: {obj['event']} lacks documented fields {sorted(required - present)}")
    expect(not (present - set(s["fields"])),
           f"{where}: {obj['event']} has undocumented fields {sorted(present - set(s['fields']))}")
    for name in present & set(s["fields"]):
        expect(type_ok(s["fields"][name], obj[name]),
               f"{where}: {obj['event']}.{name} = {str(obj[name])[:60]} is not "
               f"{s['fields'][name]}")


def write_npy_1d(path, values):
    """A float64 vector as .npy version 1.0 (what np.save writes), with the standard library."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%dd" % len(values), *values))


# Files: inputs written by flashdemo itself, a correct and a broken O, a vector for softmax.
SETUP = [
    "forward --causal --n 40 --d 16 --save-q q.npy --save-k k.npy --save-v v.npy --save-o o.npy "
    "--save-lse lse.npy",
    "forward --causal --n 40 --d 16 --break no-rescale --save-o o_bad.npy",
    "backward --q q.npy --k k.npy --v v.npy --causal --save-do do.npy --save-dq dq.npy "
    "--save-dk dk.npy --save-dv dv.npy",
]

# (arguments, exit code wanted). Each prints JSON Lines on stdout.
RUNS = [
    ("softmax --json", 0),
    ("softmax --seed 2 --block 2 --json", 0),
    ("softmax --values=1000,1001,999 --block 1 --dtype fp64 --json", 0),
    ("softmax --input x.npy --json", 0),
    ("forward --json", 0),
    ("forward --causal --json", 0),
    ("forward --causal --show-p 5 --dtype fp32 --json", 0),
    ("forward --n 8 --d 4 --block-q 4 --block-k 4 --causal --seed 7 --json", 0),
    ("forward --break no-rescale --json", 0),
    ("forward --n 4 --d 2 --block-q 4 --block-k 2 --break no-max --scale 1000 --json", 0),
    ("forward --impl fast --threads 1 --json", 0),
    ("forward --q q.npy --k k.npy --v v.npy --causal --json", 0),
    ("forward --precision bf16 --json", 0),
    ("forward --precision fp16 --scale 30000 --json", 1),  # no verdict: exit 1 after the events
    ("forward --n 6 --m 4 --d 2 --block-q 3 --block-k 2 --causal --causal-align bottom-right "
     "--json", 0),
    ("backward --json", 0),
    ("backward --causal --json", 0),
    ("backward --break no-d --json", 0),
    ("backward --impl fast --threads 1 --json", 0),
    ("backward --q q.npy --k k.npy --v v.npy --do do.npy --causal --json", 0),
    ("memory --json", 0),
    ("memory --n 1024,4096 --causal --batch 2 --heads 4 --json", 0),
    ("check --q q.npy --k k.npy --v v.npy --causal --o o.npy --lse lse.npy --json", 0),
    ("check --q q.npy --k k.npy --v v.npy --causal --do do.npy --dq dq.npy --dk dk.npy "
     "--dv dv.npy --json", 0),
    ("check --q q.npy --k k.npy --v v.npy --causal --o o_bad.npy --lse o.npy --json", 1),
    ("bench --impl fast --n 64 --d 16 --threads 1 --reps 1 --json", 0),
    ("bench --impl tiled --n 48 --m 40 --d 8 --causal --pass bwd --reps 1 --json", 0),
    ("bench --impl reference --n 32 --d 8 --dtype fp64 --reps 1 --json", 0),
    ("bench --impl gemm --n 64 --d 16 --threads 1 --reps 1 --json", 0),
    ("bench --n 64 --d 16 --dtype bf16 --reps 1 --json", 0),
    ("bench --n 48 --d 8 --dtype fp16 --causal --pass bwd --reps 1 --json", 0),
    ("decode --m 1000 --d 16 --n 2 --h 2 --threads 2 --reps 1 --json", 0),
    ("decode --m 300 --d 8 --n 3 --causal --causal-align top-left --splits 3 --dtype fp64 "
     "--reps 1 --json", 0),
    ("ring --n 40 --d 8 --ranks 3 --json", 0),
    ("ring --n 33 --m 20 --d 4 --ranks 4 --causal-align bottom-right --pass bwd --dtype fp64 "
     "--json", 0),
    ("walkthrough --no-pause --json", 0),
    ("info --json", 0),
]


# Only on a machine with a GPU: flashdemo ladder's objects, the GPU decode's and the GPU ring's. Without one, the schemas and fields that
# only they print are not required to have been seen (GPU_ONLY).
GPU_RUNS = [
    ("ladder --b 1 --h 2 --n 256 --d 64 --reps 2 --warmup 1 --json", (0, 1)),
    ("ladder --b 1 --h 1 --n 256 --d 48 --dtype fp16 --causal --reps 2 --warmup 1 --json", (0, 1)),
    ("ladder --b 1 --h 2 --n 256 --d 64 --pass bwd --steps --reps 2 --warmup 1 --json", (0, 1)),
    ("decode --device cuda --dtype bf16 --m 1000 --d 64 --h 2 --n 3 --causal --reps 2 --json",
     (0,)),
    ("ring --device cuda --n 40 --m 33 --d 8 --causal --pass bwd --dtype bf16 --json", (0,)),
]
# Keyed by the schema's name: its event, then its selectors ("result subcommand=decode device=cuda").
GPU_ONLY = {"gemm_ceiling": None, "rung_skipped": None, "hopper_step": None,
            "bench": {"rung", "idea", "of_ceiling", "speedup"},
            "result subcommand=decode device=cuda": None,
            "result subcommand=ring": {"gpu"}}

# Fields printed only when a GPU kernel fails its verification, which no run here makes happen
# (the verification itself is tested in tests/gpu): not required to have been seen.
ON_FAILURE = {"rung_skipped": {"verified_rows", "max_error", "error_bound"}}


def run(exe, args):
    env = dict(os.environ, LC_ALL="C", LANG="C", NO_COLOR="1")
    return subprocess.run([exe] + args.split(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, env=env, timeout=600)


def check_lines(text, where, schemas):
    lines = text.split("\n")
    expect(lines[-1] == "", f"{where}: the output ends with a newline")
    count = 0
    for k, line in enumerate(lines[:-1]):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            expect(False, f"{where}, line {k + 1}: not JSON ({e}): {line[:80]}")
            continue
        check_object(obj, f"{where}, line {k + 1}", schemas)
        count += 1
    expect(count > 0, f"{where}: printed at least one object")


def main():
    exe, repo, work = (os.path.abspath(a) for a in sys.argv[1:4])
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    schemas = read_schemas(os.path.join(repo, "docs", "trace-format.md"))
    expect(len(schemas) >= 10, f"trace-format.md has schema tables ({len(schemas)} found)")
    write_npy_1d("x.npy", [7.7, -1.5, -10.9, 2.8, -5.4, -7.0, 2.0, 4.2])
    for args in SETUP:
        p = run(exe, args + " --quiet")
        expect(p.returncode == 0, f"setup `flashdemo {args}` exits 0: {p.stderr.decode()}")
    for args, code in RUNS:
        p = run(exe, args)
        where = f"`flashdemo {args}`"
        if expect(p.returncode == code, f"{where} exits {code}, not {p.returncode}: "
                                        f"{p.stderr.decode().strip()}"):
            check_lines(p.stdout.decode("utf-8"), where, schemas)
    info = run(exe, "info --json")
    gpu = info.returncode == 0 and json.loads(info.stdout.decode("utf-8")).get("gpu", "") != ""
    for args, codes in GPU_RUNS if gpu else []:
        p = run(exe, args)
        where = f"`flashdemo {args}`"
        if expect(p.returncode in codes, f"{where} exits {codes}, not {p.returncode}: "
                                         f"{p.stderr.decode().strip()}"):
            check_lines(p.stdout.decode("utf-8"), where, schemas)
    p = run(exe, "forward --causal --trace none --trace-json fwd.jsonl")
    if expect(p.returncode == 0, "forward --trace-json exits 0"):
        check_lines(open("fwd.jsonl", encoding="utf-8").read(), "--trace-json fwd.jsonl", schemas)
    for s in schemas:
        name = s["event"] + "".join(f" {f}={','.join(v)}" for f, v in s["select"].items())
        exempt = not gpu and name in GPU_ONLY
        if exempt and GPU_ONLY[name] is None:
            continue  # printed only where a GPU runs
        expect(s["seen"], f"trace-format.md:{s['line']}: no run printed the documented {name}")
        unseen = (set(s["fields"]) - s["fields_seen"] - (GPU_ONLY[name] if exempt else set())
                  - ON_FAILURE.get(name, set()))
        expect(not unseen, f"trace-format.md:{s['line']}: {name}: documented fields no run "
                           f"printed: {sorted(unseen)}")
    finish()


if __name__ == "__main__":
    main()
