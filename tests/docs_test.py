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
  - a ```sh block of README.md or docs/teaching-guide.md (SH_RUN): each of its `flashdemo ...`
    lines (a trailing backslash continues a line) runs in order and must exit 0, so the examples a
    newcomer copies, and the commands a teacher runs in class, all work;
  - any other block must hold no digit (commands to type, say).
With --update, blocks whose output changed are rewritten in place (those with `...` or `<...>` are
only reported). Usage: docs_test.py FLASHDEMO REPO [--update] [FILE ...]

`docs_test.py --names REPO [FILE ...]` checks instead that every file path and identifier the
prose names in backticks, every relative link and every entry of a source-tree map exists in
the tree (the rules are above `check_names` below), and prints each that does not as
DOC:LINE: `SPAN`; `docs_test.py --self-test` shows that check failing on
names that do not exist. Neither needs the binary.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

SH_RUN = ("README.md", "teaching-guide.md")  # documents whose ```sh commands run (above)
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


def run_in_env(command, cwd, bindir, stdout, extra):
    """Runs a documented command as a reader would: this build's flashdemo first on PATH, no
    colour, the C.UTF-8 locale. Its own TMPDIR: an `mpirun` among the documented commands makes
    Open MPI's session directory there, and two mpiruns of parallel tests that share /tmp race
    to create theirs (tests/mpirun_isolated.sh)."""
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), NO_COLOR="1",
               TERM="dumb", LANG="C.UTF-8", **extra)
    env.pop("LC_ALL", None)
    env.pop("LC_MESSAGES", None)
    with tempfile.TemporaryDirectory(prefix="fdmpi.", dir="/tmp") as tmp:
        env["TMPDIR"] = tmp
        return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=stdout,
                              stderr=subprocess.STDOUT if stdout == subprocess.PIPE
                              else subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=600)


def run(command, cwd, bindir):
    p = run_in_env(command, cwd, bindir, subprocess.PIPE, {"COLUMNS": "100"})
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
    p = run_in_env(command, cwd, bindir, subprocess.DEVNULL, {})
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
            elif lang == "sh" and os.path.basename(path) in SH_RUN:
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


# --- Names: every backticked file path and identifier of the prose exists in the tree ----------
#
# The prose of README.md and docs/*.md (outside fenced blocks and HTML comments) names code in
# `backticks`. Each span is one of (checked in this order):
#   - not code, left alone: a command line or anything with a space (`flashdemo forward`,
#     `max |O - O_ref|`), an option or a flag (starts with `-`), a number, a span holding any of
#     = " ' | \ $ , + ; { } [ ] @ # % ^ or a `.` outside a file name (math, JSON, shell, Python's
#     dotted names), a machine's path (starts with `/` or `~`), a build output (`build/...`), a
#     file type (`.npy`), a word in capitals alone (`SIGINT`, `HGMMA`: signals, environment,
#     SASS), a name in another library's namespace (`std::`, `CLI::`, `fmt::`, `Eigen::`,
#     `nlohmann::`), the JSON fields of a schema table (the first column of a table after
#     `<!-- schema: ... -->`: tests/json_schema_test.py holds those against the program's output);
#   - a file path: it holds a `/`, or ends in one of SOURCE_EXTENSIONS. With a `/`, it must exist
#     relative to the document's folder, to the repository root, or to src/ (in that order;
#     `flashdemo/judge/verdict.hpp` is src/flashdemo/judge/verdict.hpp); a bare file name must
#     be the name of a file somewhere in the tree. A `/` span whose first part is neither `..`
#     nor a top-level entry of the repository or of src/ (`en/zh`, `fp32/fp64`) and that has no
#     source extension is prose, not a path;
#   - an identifier: C++-like (`fd::name`, `name()`, `name(args)`, `Name`, `snake_case_name`,
#     `kConstant`, `Struct::member`, `inputs_for<T>`): each part between `::` must appear as a
#     whole word in a file of CODE_TREES (strings and comments count: an option value such as
#     `teaching` is a string there; this file does not count, it names what does not exist);
# `<...>` (`setup_<name>`, `demos/<name>.cpp`) and `*` stand for any text, and must match
# something. Relative links, [text](../src/...), must name an existing file too, and so must the
# entries of a source-tree map (a block after `<!-- not run: a map of the source tree -->`:
# tree_map_failures). Every failure reads DOC:LINE: `SPAN`: why.
SOURCE_EXTENSIONS = (".cpp", ".hpp", ".cuh", ".cu", ".inc", ".py", ".sh", ".md", ".json", ".txt",
                     ".cmake", ".zsh")
CODE_TREES = ("src", "demos", "tests", "scripts", "cmake", ".ci", "CMakeLists.txt",
              "CMakePresets.json")
EXTERNAL_NAMESPACES = ("std", "CLI", "fmt", "Eigen", "nlohmann")
# Names of what is not in this tree, each named as someone else's by the sentence around it.
NOT_IN_TREE = {
    "05_flash_attention.py",  # the lecture's script: the course's, not this repository's
    "standard_attention", "block_q", "block_k",  # the lecture script's names (backward.md)
    "num_splits_heuristic",  # FlashAttention's split-KV heuristic (at-scale.md)
    "do_bench",  # Triton's timer (gpu-ladder.md)
    "ncu", "short_scoreboard", "long_scoreboard", "dispatch_stall",  # Nsight Compute's
    "IADD3", "LOP3", "UIADD3", "ULOP3",  # SASS mnemonics with digits (gpu-glossary.md)
    "gpu_compare.py",  # the GPU machine's comparison harness, said not to be here (gpu-ladder.md)
    "nokc", "t128x256",  # row labels of docs/data/cpu_tiles_2026-12-02.txt (performance.md)
}
NOT_CODE = re.compile(r"""\s|^-|^[/~]|^build/|["'|\\$,+;{}\[\]@#%^=]|^[A-Z]+$""")
NUMBERISH = re.compile(r"^[-+]?[\d.]+(?:[eE][-+]?\d+)?[a-zA-Z%]{0,3}$|^\d+x\d+")
IDENTIFIER = re.compile(r"^~?[A-Za-z_<][\w<>*]*(?:::~?[A-Za-z_<][\w<>*]*)*(?:<[^<>]*>)?"
                        r"(?:\(.*\))?(?:&|\*)?$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


class Tree:
    """The repository's files and the words of its code."""

    def __init__(self, repo):
        self.repo = os.path.abspath(repo)
        self.files, self.words = set(), set()
        for top in os.listdir(self.repo):
            if top.startswith("build") or top in (".git", "out", ".cache", "device"):
                continue
            path = os.path.join(self.repo, top)
            walk = os.walk(path) if os.path.isdir(path) else [(self.repo, [], [top])]
            for folder, dirs, names in walk:
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for name in names:
                    rel = os.path.relpath(os.path.join(folder, name), self.repo)
                    self.files.add(rel)
                    if rel.split(os.sep)[0] in CODE_TREES and "/fuzz/corpus/" not in rel \
                            and rel != os.path.join("tests", "docs_test.py"):
                        with open(os.path.join(self.repo, rel), "rb") as f:
                            text = f.read(2_000_000).decode("utf-8", "replace")
                        self.words.update(re.findall(r"\w+", text))
        self.dirs = {os.path.dirname(f) for f in self.files}
        for d in list(self.dirs):
            while d:
                d = os.path.dirname(d)
                self.dirs.add(d)
        self.dirs.discard("")
        self.basenames = {os.path.basename(f) for f in self.files}
        self.tops = {f.split("/")[0] for f in self.files} | {
            f.split("/")[1] for f in self.files if f.startswith("src/")}

    def path_exists(self, span, doc_dir):
        """span relative to the document's folder, the root or src/; `<...>` and `*` stand for
        any text within one folder's name."""
        for base in (doc_dir, "", "src"):
            full = os.path.normpath(os.path.join(base, span))
            if "<" not in full and "*" not in full:
                if full in self.files or full in self.dirs:
                    return True
                continue
            rx = re.compile(re.sub(r"<[^<>/]*>|\\\*", "[^/]*", re.escape(full)) + "$")
            if any(rx.match(f) for f in self.files | self.dirs):
                return True
        return False

    def file_named(self, span):
        """A file of this name anywhere in the tree (`<...>` and `*` any text)."""
        rx = re.compile(re.sub(r"<[^<>/]*>|\\\*", ".*", re.escape(span)) + "$")
        return any(rx.match(b) for b in self.basenames)

    def word_exists(self, part):
        """part as a whole word; `<...>` and `*` any text, a trailing `_` a prefix (`setup_`)."""
        if "<" not in part and "*" not in part and not part.endswith("_"):
            return part in self.words
        rx = re.compile(re.sub(r"<[^<>]*>|\\\*", r"\\w*", re.escape(part))
                        + (r"\w*" if part.endswith("_") else "") + "$")
        return any(rx.match(w) for w in self.words)


def span_kind(span):
    """'path', 'name', or None (not code: see the rules above)."""
    if NOT_CODE.search(span) or NUMBERISH.match(span) or span in (".", ".."):
        return None
    if span.startswith(".") and "/" not in span:  # a file type (`.npy`, `.inc`), not a file
        return None
    if "/" in span or span.endswith(SOURCE_EXTENSIONS):
        return "path"
    if span.split("::")[0] in EXTERNAL_NAMESPACES:
        return None
    return "name" if IDENTIFIER.match(span) else None


def name_parts(span):
    """The words an identifier span names: `fd::Grader::diagnose(...)` -> fd, Grader, diagnose."""
    span = re.sub(r"\(.*\)$", "", span).rstrip("&*")
    span = re.sub(r"(?<=[A-Za-z0-9])<[^<>]*>$", "", span)  # a template argument: `inputs_for<T>`
    return [p.lstrip("~") for p in span.split("::") if p]


def prose_lines(text):
    """(line number, line) of the text outside fenced blocks and HTML comments; in the tables of
    JSON fields (after `<!-- schema: ... -->`) without their first cell."""
    fenced, schema, out = False, False, []
    text = re.sub(r"<!--(?! schema:).*?-->", lambda m: "\n" * m.group(0).count("\n"), text,
                  flags=re.S)
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("<!-- schema:"):
            schema = True
            continue
        if schema and line.startswith("|"):
            line = "|" + "|".join(re.split(r"(?<!\\)\|", line)[2:])
        elif line.strip():
            schema = False
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


TREE_MAP = re.compile(r"<!--\s*not run: a map of the source tree\s*-->\s*\n```\w*\n(.*?)^```",
                      re.S | re.M)


def tree_map_failures(text, doc, tree):
    """The entries of a source-tree map (a block after `<!-- not run: a map of the source tree
    -->`): each line whose first word starts left of the descriptions' column names a file or a
    folder (ending in `/`) inside the folder above it at a smaller indent; each must exist."""
    failures = []
    for m in TREE_MAP.finditer(text):
        first_line = text[:m.start(1)].count("\n") + 1
        lines = m.group(1).split("\n")
        column = re.match(r"\S+\s+", lines[0].lstrip()) if lines else None
        column = len(lines[0]) - len(lines[0].lstrip()) + column.end() if column else 1 << 30
        stack = []  # (indent, folder)
        for k, line in enumerate(lines):
            entry = re.match(r"( *)(\S+)", line)
            if not entry or len(entry.group(1)) >= column:
                continue
            indent, name = len(entry.group(1)), entry.group(2)
            if not (name.endswith("/") or "." in name):
                continue
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = os.path.normpath(os.path.join(stack[-1][1] if stack else "", name))
            if path not in tree.files and path not in tree.dirs:
                failures.append(f"{doc}:{first_line + k}: `{path}` (in the tree map): no such "
                                "file or folder")
            if name.endswith("/"):
                stack.append((indent, path))
    return failures


def check_names(path, tree, doc=None):
    """Every backticked path and identifier, and every relative link, of one document (doc: the
    path it is read as, relative to the repository; by default where it is)."""
    doc = doc or os.path.relpath(os.path.abspath(path), tree.repo)
    doc_dir = os.path.dirname(doc)
    text = open(path, encoding="utf-8").read()
    failures = tree_map_failures(text, doc, tree)
    for number, line in prose_lines(text):
        for m in INLINE_CODE.finditer(line):
            span = m.group(2).strip()
            kind = span_kind(span)
            if span in NOT_IN_TREE or kind is None:
                continue
            if kind == "path":
                top = span.split("/")[0]
                if "/" in span and top not in tree.tops and top != ".." \
                        and not span.endswith(SOURCE_EXTENSIONS) \
                        and not tree.path_exists(os.path.join(doc_dir, top), ""):
                    continue  # `en/zh`: prose with a slash
                ok = tree.path_exists(span, doc_dir) if "/" in span else tree.file_named(span)
                if not ok:
                    failures.append(f"{doc}:{number}: `{span}`: no such file in the tree")
            else:
                missing = [p for p in name_parts(span) if not tree.word_exists(p)]
                if missing:
                    failures.append(f"{doc}:{number}: `{span}`: no `{missing[0]}` in "
                                    + ", ".join(CODE_TREES[:4]) + " (nor the CMake files)")
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"\w+:", target):
                continue
            if not tree.path_exists(os.path.normpath(os.path.join(doc_dir, target)), ""):
                failures.append(f"{doc}:{number}: link ({target}): no such file in the tree")
    return failures


def self_test():
    """The name check fails on names that do not exist, and passes on ones that do."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = Tree(repo)
    scratch = tempfile.mkdtemp(prefix="docs_names_")
    try:
        doc = os.path.join(scratch, "selftest.md")  # read as docs/selftest.md
        good = ("Real: `fd::RowState`, `merge_splits()`, `Grader::diagnose`, `kMaxSplits`, "
                "`setup_<name>(CLI::App&)`, `src/flashdemo/judge/verdict.hpp`, `verdict.hpp`, "
                "`demos/<name>.cpp`, [x](../README.md); not code: `flashdemo forward --causal`, "
                "`--impl`, `1e-6`, `m = 7.705`, `en/zh`, `build/release/flashdemo`.\n")
        bad = ("`fd::no_such_function_zq()` `Grader::no_such_member_zq` `src/flashdemo/gone.hpp` "
               "`gone_zq.cpp` `tests/zq_<name>.cpp` [y](../src/nowhere_zq.hpp)\n")
        with open(doc, "w", encoding="utf-8") as f:
            f.write("# self-test\n\n" + good + "\n```text\n`fd::inside_a_block_zq`\n```\n" + bad
                    + "\n<!-- not run: a map of the source tree -->\n```text\n"
                    "src/flashdemo/   the library\n  judge/         the judge\n"
                    "    verdict.hpp  a run's verdict\n  gone_zq/       no such folder\n"
                    "tests/           the tests\n```\n")
        got = check_names(doc, tree, "docs/selftest.md")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    expected = ["no_such_function_zq", "no_such_member_zq", "gone.hpp", "gone_zq.cpp",
                "zq_<name>.cpp", "nowhere_zq.hpp", "src/flashdemo/gone_zq"]
    problems = []
    if len(got) != len(expected):
        problems.append(f"{len(got)} failures, expected {len(expected)}:\n  " + "\n  ".join(got))
    for name in expected:
        line = 15 if name == "src/flashdemo/gone_zq" else 8
        if not any(name in g and f":{line}:" in g for g in got):
            problems.append(f"no failure naming `{name}` at line {line} of the document")
    for p in problems:
        print("docs_test --self-test:", p)
    print(f"docs_test --self-test: {'FAILED' if problems else 'passed'}")
    return 1 if problems else 0


def main_names(repo, files):
    tree = Tree(repo)
    failures = [f for path in files for f in check_names(path, tree)]
    for f in failures:
        print(f)
    print(f"docs_test --names: {len(files)} files, {len(failures)} names not in the tree")
    return 1 if failures else 0


def doc_files(repo):
    docs = os.path.join(repo, "docs")
    return [os.path.join(repo, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    if sys.argv[1:2] == ["--names"]:
        repo = sys.argv[2]
        return main_names(repo, sys.argv[3:] or doc_files(repo))
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv
    exe, repo, files = os.path.abspath(args[0]), args[1], args[2:]
    bindir = tempfile.mkdtemp(prefix="docs_bin_")
    os.symlink(exe, os.path.join(bindir, "flashdemo"))
    os.symlink("/usr/bin/python3", os.path.join(bindir, "python3"))  # Debian's, with NumPy
    files = files or doc_files(repo)
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
