#!/usr/bin/env python3
"""docs_test.py — the numbers in README.md and docs/*.md cannot go stale.

Every code block of a document is one of:
  - ```python: run in order, in the document's scratch directory (it makes the arrays later
    blocks read); one whose first line is `# file: NAME.py` is saved as NAME.py instead, for a
    later `$ python3 NAME.py`;
  - a text block (```text or ```) whose lines start with `$ COMMAND`: the command runs (bash, the
    build's flashdemo first on PATH, stdout and stderr together) and its output must equal the
    lines under it. A line `...` stands for any number of lines, `<...>` inside a line for any text;
    a command ending in `# excerpt` shows some of its lines: they must appear in that order;
    a number may differ from the one written by its rounding (a unit of its last digit, one part
    in 1e9, or 1e-17 absolute): what legitimately varies between machines is compared by value;
  - a block preceded by `<!-- not run: REASON -->` (a diagram drawn by hand, a measurement
    taken on another machine, with its command beside it in the prose);
  - a ```sh block of README.md: each of its `flashdemo ...` lines (a trailing backslash continues
    a line) runs in order and must exit 0, so the examples a newcomer copies all work;
  - any other block must hold no digit (commands to type, say).
With --update, blocks whose output changed are rewritten in place (those with `...` or `<...>` are
only reported). Usage: docs_test.py FLASHDEMO REPO [--update] [FILE ...]
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:.*?-->\s*\n$", re.S)


def segments(block):
    """[(command, expected lines)] of a text block whose lines start with `$ `."""
    out = []
    for line in block.split("\n")[:-1] if block.endswith("\n") else block.split("\n"):
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def last_digit_unit(token):
    """The value of one unit in the last digit written: 0.01 for "2.34", 1e-17 for "2.3e-16"."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_close(expected, got):
    """Two printings of one value that may legitimately differ in its rounding: within a unit of
    the last digit written, one part in 1e9, or 1e-17 (an fp64 error one rounding away)."""
    if expected == got:
        return True
    try:
        e, g = float(expected), float(got)
    except ValueError:
        return False
    return abs(e - g) <= 1.001 * max(last_digit_unit(expected), 1e-9 * abs(e), 1e-17)


def same_but_rounding(expected, got):
    """The lines are the same text, and their numbers the same values within their rounding."""
    e_nums, g_nums = NUMBER.findall(expected), NUMBER.findall(got)
    return (len(e_nums) == len(g_nums) and NUMBER.sub("#", expected) == NUMBER.sub("#", got)
            and all(numbers_close(a, b) for a, b in zip(e_nums, g_nums)))


def line_matches(expected, got):
    if "<...>" not in expected:
        return expected == got or same_but_rounding(expected, got)
    parts = [re.escape(p) for p in expected.split("<...>")]
    return re.fullmatch(".*".join(parts), got) is not None


def matches(expected, got):
    """Lines match one to one; a `...` line takes any run of lines (shortest first)."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and line_matches(expected[0], got[0]) and matches(expected[1:], got[1:])


def in_order(expected, got):
    """Each expected line matches a later line of got than the one before (an excerpt)."""
    k = 0
    for e in expected:
        while k < len(got) and not line_matches(e, got[k]):
            k += 1
        if k == len(got):
            return False
        k += 1
    return True


def shape(line):
    """A line with its numbers blanked: the same line of another run has the same shape."""
    return re.sub(r"[-+]?[0-9][0-9.,e+-]*", "#", line)


def key(line):
    """What a line is about: its first word with any indices ("dQ(35,8)"), and the text up to its
    first '=' or digit ("  max |dQ - dQ_ref| = ")."""
    words = line.split()
    head = re.match(r"[^=0-9]*=?", line).group(0)
    return (words[0] if words else "", head if len(head.strip()) >= 6 else "")


def refresh_excerpt(expected, got):
    """The excerpt with each line replaced by the next output line of the same shape (numbers
    aside), else by the next about the same thing (key), else by the one most like it."""
    out, k = [], 0
    for e in expected:
        same = [j for j in range(k, len(got)) if shape(got[j]) == shape(e)]
        same = same or [j for j in range(k, len(got)) if key(got[j]) == key(e) and key(e)[1]]
        same = same or [j for j in range(k, len(got))
                        if key(got[j])[0] == key(e)[0] and "(" in key(e)[0]]
        if same:
            j = same[0]
        else:
            ratios = [(difflib.SequenceMatcher(None, e, got[j]).ratio(), j)
                      for j in range(k, len(got))]
            best, j = max(ratios, default=(0.0, None))
            if j is None or best < 0.6:
                out.append(e)
                continue
        out.append(got[j])
        k = j + 1
    return out


def run(command, cwd, bindir):
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), NO_COLOR="1",
               TERM="dumb", LANG="C.UTF-8", COLUMNS="100")
    env.pop("LC_ALL", None)
    env.pop("LC_MESSAGES", None)
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600)
    text = p.stdout.decode("utf-8", "replace").rstrip("\n")
    return [line.rstrip() for line in text.split("\n")] if text else []


def sh_commands(block):
    """The `flashdemo ...` commands of a ```sh block, continuation lines joined."""
    joined, out = block.replace("\\\n", " "), []
    for line in joined.split("\n"):
        if line.strip().startswith("flashdemo "):
            out.append(line.strip())
    return out


def run_sh(command, cwd, bindir):
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), NO_COLOR="1",
               TERM="dumb", LANG="C.UTF-8")
    env.pop("LC_ALL", None)
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=600)
    return p.returncode, p.stderr.decode("utf-8", "replace").strip()


def check_file(path, bindir, update):
    text = open(path, encoding="utf-8").read()
    failures, pieces, last = [], [], 0
    scratch = tempfile.mkdtemp(prefix="docs_test_")
    try:
        for m in FENCE.finditer(text):
            lang, block = m.group(1), m.group(2)
            where = f"{os.path.basename(path)}:{text[:m.start()].count(chr(10)) + 1}"
            pieces.append(text[last:m.start()])
            last = m.end()
            new_block = block
            if NOT_RUN.search(text[:m.start()][-300:]):
                pass
            elif lang == "python" and re.match(r"# file: (\S+)", block):
                name = re.match(r"# file: (\S+)", block).group(1)
                open(os.path.join(scratch, name), "w", encoding="utf-8").write(block)
            elif lang == "python":
                p = subprocess.run(["/usr/bin/python3", "-c", block], cwd=scratch,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                if p.returncode != 0:
                    failures.append(f"{where}: the python block failed:\n{p.stdout.decode()}")
            elif lang in ("text", "", "json") and block.startswith("$ "):
                out_lines = []
                for command, expected in segments(block):
                    expected = [line.rstrip() for line in expected]
                    while expected and expected[-1] == "":
                        expected.pop()
                    got = run(command, scratch, bindir)
                    excerpt = command.rstrip().endswith("# excerpt")
                    ok = in_order(expected, got) if excerpt else matches(expected, got)
                    if not ok and excerpt:
                        missing = next(e for i, e in enumerate(expected)
                                       if not in_order(expected[:i + 1], got))
                        failures.append(f"{where}: `{command}` printed no line\n    {missing}\n"
                                        "    (in this excerpt's order)")
                    elif not ok:
                        diff = "\n".join(f"    - {e}" for e in expected[:40])
                        diff += "\n" + "\n".join(f"    + {g}" for g in got[:40])
                        failures.append(f"{where}: `{command}` printed otherwise:\n{diff}")
                    keep_expected = any(e == "..." or "<...>" in e for e in expected)
                    shown = (expected if keep_expected or ok else
                             refresh_excerpt(expected, got) if excerpt else got)
                    out_lines += ["$ " + command] + shown
                new_block = "\n".join(out_lines) + "\n"
            elif lang == "sh" and os.path.basename(path) == "README.md":
                for command in sh_commands(block):
                    code, err = run_sh(command, scratch, bindir)
                    if code != 0:
                        failures.append(f"{where}: `{command}` exited {code}: {err}")
            elif re.search(r"\d", block) and lang not in ("sh", "python"):
                failures.append(f"{where}: a block with numbers has no `$ command` line and no "
                                "`<!-- not run: REASON -->` before it")
            pieces.append(f"```{lang}\n{new_block}```\n")
        pieces.append(text[last:])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if update:
        new_text = "".join(pieces)
        if new_text != text:
            open(path, "w", encoding="utf-8").write(new_text)
            print(f"updated {path}")
    return failures


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv
    exe, repo, files = os.path.abspath(args[0]), args[1], args[2:]
    bindir = tempfile.mkdtemp(prefix="docs_bin_")
    os.symlink(exe, os.path.join(bindir, "flashdemo"))
    os.symlink("/usr/bin/python3", os.path.join(bindir, "python3"))  # Debian's, with NumPy
    if not files:
        docs = os.path.join(repo, "docs")
        files = [os.path.join(repo, "README.md")] + sorted(
            os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    failures = []
    for f in files:
        failures += check_file(f, bindir, update)
    shutil.rmtree(bindir, ignore_errors=True)
    for f in failures:
        print(f)
    print(f"docs_test: {len(files)} files, {len(failures)} problems")
    return 1 if failures and not update else 0


if __name__ == "__main__":
    sys.exit(main())
