#!/usr/bin/env python3
"""kernel_resources.py — what ptxas gives each GPU kernel: registers, spills, static shared memory.

For each CUDA launch file of a CUDA build (its compile command from compile_commands.json), it
compiles the file again with `-Xptxas -v` into a throwaway object and reads ptxas's lines:

  Compiling entry function 'MANGLED' for 'sm_90a'
  N bytes stack frame, S bytes spill stores, L bytes spill loads
  Used R registers, used B barriers, X bytes smem, ...

and prints one line per kernel instance: the kernel's demangled name (template arguments
shortened), its registers, spill stores and loads, and static shared memory (the kernels' tiles
live in dynamic shared memory, which the launchers set; ptxas does not see it).

Registers are at launch: the hopper kernels then move them between warpgroups with setmaxnreg
(the producer down to 24, the consumers up to 240), which ptxas does not report.

Usage (no GPU needed; nvcc of the build):
    python3 scripts/kernel_resources.py --build build/cuda [--filter hopper] [--files hopper.cu]
Exit 0, or 1 when a compile failed, 2 for a bad command line.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
# The enums of the kernels' template arguments, as c++filt prints them, by value (rungs/*.cuh).
ENUMS = {"DqWay": ("separate", "atomics", "bulk_add"), "DqCut": ("columns", "rows", "keys"),
         "DqStaging": ("swizzled", "spread", "groups")}
USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--build", required=True, help="a CUDA build folder (compile_commands.json)")
    ap.add_argument("--files", default="", help="launch files to compile, comma list "
                    "(base names, e.g. hopper.cu,mma.cu) [every .cu of the build]")
    ap.add_argument("--filter", default="", help="only kernels whose name contains this text")
    return ap.parse_args(argv)


def cu_commands(build, files):
    path = os.path.join(build, "compile_commands.json")
    try:
        with open(path) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        print(f"kernel_resources.py: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    wanted = {x.strip() for x in files.split(",") if x.strip()}
    out = [e for e in entries if e["file"].endswith(".cu")
           and (not wanted or os.path.basename(e["file"]) in wanted)]
    missing = wanted - {os.path.basename(e["file"]) for e in out}
    if not out or missing:
        print(f"kernel_resources.py: no .cu file {sorted(missing) or 'at all'} in {path}",
              file=sys.stderr)
        sys.exit(2)
    return out


def verbose_command(entry, obj):
    """The build's command for the file, ptxas verbose, its object and dependency file elsewhere."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    args = [a for a in args if a not in ("ccache", "sccache")]
    keep, skip = [], 0
    for a in args:
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-MF", "-MT"):
            skip = 1
            continue
        if a == "-MD":
            continue
        keep.append(a)
    return keep + ["-o", obj, "-Xptxas", "-v"]


def short_name(mangled):
    """The demangled kernel name with its namespace and parameter list dropped."""
    try:
        name = subprocess.run(["c++filt", mangled], stdout=subprocess.PIPE, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return mangled
    name = name[5:] if name.startswith("void ") else name
    depth = 0
    for k, ch in enumerate(name):  # the parameter list: the first "(" outside the template's <>
        depth += (ch == "<") - (ch == ">")
        if ch == "(" and depth == 0:
            name = name[:k]
            break
    for enum, values in ENUMS.items():  # (fd::cuda::DqWay)2 -> bulk_add
        name = re.sub(r"\(fd::cuda::%s\)(\d+)" % enum, lambda m: values[int(m.group(1))], name)
    for ns in ("fd::cuda::", "fd::"):
        name = name.replace(ns, "")
    return name.replace("__nv_bfloat16", "bf16").replace("__half", "fp16")


def kernels_of(entry, tmp):
    obj = os.path.join(tmp, os.path.basename(entry["file"]) + ".o")
    p = subprocess.run(verbose_command(entry, obj), cwd=entry["directory"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:], file=sys.stderr)
        return None
    found, current = [], None
    for line in p.stdout.splitlines():
        if m := ENTRY.search(line):
            current = {"kernel": m.group(1), "arch": m.group(2)}
            found.append(current)
        elif current and (m := SPILL.search(line)):
            current.update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        elif current and (m := USED.search(line)):
            current.update(registers=int(m.group(1)), smem=int(m.group(3) or 0))
    return found


def main(argv):
    a = parse_args(argv)
    failed, commands = False, cu_commands(a.build, a.files)
    print(f"{'file':<11} {'registers':>9} {'spill st/ld':>12} {'smem':>6}  kernel")
    with tempfile.TemporaryDirectory() as tmp:
        for entry in commands:
            rows = kernels_of(entry, tmp)
            if rows is None:
                print(f"kernel_resources.py: compiling {entry['file']} failed", file=sys.stderr)
                failed = True
                continue
            for r in rows:
                name = short_name(r["kernel"])
                if a.filter and a.filter not in name:
                    continue
                spills = f"{r.get('spill_st', 0)}/{r.get('spill_ld', 0)}"
                print(f"{os.path.basename(entry['file']):<11} {r.get('registers', 0):>9} "
                      f"{spills:>12} {r.get('smem', 0):>6}  {name}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stderr.close()
        sys.exit(0)
