#!/usr/bin/python3
"""The --html replay page shows what the terminal shows (run by ctest; python3 stdlib only).

Usage: html_replay_test.py FLASHDEMO WORKDIR
For softmax, forward and backward: runs flashdemo with --html page.html (capturing the terminal),
opens the page in headless Chromium at #end (the last step), dumps the DOM and compares the
elements id="final-m" and id="final-l" (and id="final-row") with the terminal, as strings:
  softmax   "online:  m = 7.705, l = 1.0410"           m with 3 decimals, l with 4
  forward   last "q   19:  L = <m> + log(<l>) = ..."  of --trace rows: m and l with 4 decimals
  backward  last "q   19:  L = <L>  D = <D>  P in ..." of --trace rows: L and D with 4 decimals
The page formats numbers as ui::fixed does (exact ties to even), so equal strings are expected.
Also checks that the page is offline (no http:// or https://, no src/href to load), that no
placeholder is left, and that the grid has Tr x Tc tiles.
Without /usr/bin/chromium it fails, unless FLASHDEMO_ALLOW_NO_CHROMIUM=1 (then it says so and
passes). Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import html
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import expect, finish  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--virtual-time-budget=5000"]

exe, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
os.makedirs(work, exist_ok=True)
os.chdir(work)
env = dict(os.environ, LC_ALL="C", LANG="C", NO_COLOR="1")  # English, no colour codes


if not os.access(CHROMIUM, os.X_OK):
    if os.environ.get("FLASHDEMO_ALLOW_NO_CHROMIUM") == "1":
        print(f"{CHROMIUM} not found: the HTML replay page is not checked "
              "(FLASHDEMO_ALLOW_NO_CHROMIUM=1)")
        print("0 passed, 0 failed")
        sys.exit(0)
    print(f"FAILED: {CHROMIUM} not found (install chromium, or set FLASHDEMO_ALLOW_NO_CHROMIUM=1 "
          "to skip this test)")
    print("0 passed, 1 failed")
    sys.exit(1)


def flashdemo(args, page):
    """Runs flashdemo ARGS --html PAGE; returns the terminal output ('' on failure)."""
    if os.path.exists(page):
        os.remove(page)
    run = subprocess.run([exe] + args + ["--html", page], capture_output=True, text=True,
                         env=env, timeout=300)
    ok = expect(run.returncode == 0 and os.path.isfile(page),
                f"flashdemo {' '.join(args)} --html {page}: exit {run.returncode}, "
                f"stderr: {run.stderr.strip()[:400]}")
    return run.stdout if ok else ""


def dump_dom(page):
    """The page's DOM after its script ran, opened at its last step (#end)."""
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=work)
    try:
        url = pathlib.Path(os.path.abspath(page)).as_uri() + "#end"
        run = subprocess.run([CHROMIUM] + CHROMIUM_FLAGS +
                             [f"--user-data-dir={profile}", "--dump-dom", url],
                             capture_output=True, text=True, timeout=300)
        expect(run.returncode == 0 and "</html>" in run.stdout,
               f"chromium --dump-dom {page}: exit {run.returncode}, "
               f"stderr: {run.stderr.strip()[-400:]}")
        return run.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def element_text(dom, element_id):
    m = re.search(r'\bid="' + re.escape(element_id) + r'"[^>]*>([^<]*)<', dom)
    return html.unescape(m.group(1)).strip() if m else None


def check_page(name, page, dom, tiles=None):
    text = pathlib.Path(page).read_text(encoding="utf-8")
    expect(not re.search(r"https?://", text, re.I), f"{name}: the page refers to http(s)://")
    expect(not re.search(r"<(script|link|img|iframe|object|embed)\b[^>]*\b(src|href)\s*=",
                         text, re.I), f"{name}: the page loads a file")
    expect("FLASHDEMO_TITLE" not in text and "/*FLASHDEMO_EVENTS*/[]" not in text,
           f"{name}: a placeholder was left in the page")
    if tiles is not None:
        found = len(re.findall(r'\bid="tile-\d+-\d+"', dom))
        expect(found == tiles, f"{name}: the grid has {found} tiles, expected {tiles}")


def compare(name, dom, expected):
    for element_id, want in expected.items():
        got = element_text(dom, element_id)
        expect(got == want, f"{name}: id={element_id} shows {got!r}, the terminal {want!r}")


# softmax (the lecture's defaults): the result line
out = flashdemo(["softmax"], "softmax.html")
m = re.search(r"online:\s+m = (\S+), l = ([^\s;]+);", out)
if expect(m, f"softmax: no 'online:  m = ..., l = ...' line in:\n{out}"):
    dom = dump_dom("softmax.html")
    check_page("softmax", "softmax.html", dom)
    compare("softmax", dom, {"final-m": m.group(1), "final-l": m.group(2)})

# forward and backward, causal, 20 rows in tiles of 8: 3 x 3 tiles, the last row is q 19
small = ["--causal", "--n", "20", "--d", "4", "--block-q", "8", "--block-k", "8", "--trace", "rows"]
out = flashdemo(["forward"] + small, "forward.html")
rows = re.findall(r"^\s*q\s+(\d+):\s+L = (\S+) \+ log\((\S+)\) = \S+\s*$", out, re.M)
if expect(rows, f"forward: no 'q N:  L = m + log(l) = ...' line in:\n{out}"):
    q, m_text, l_text = rows[-1]
    expect(q == "19", f"forward: the last finished row is {q}, expected 19")
    dom = dump_dom("forward.html")
    check_page("forward", "forward.html", dom, tiles=9)
    compare("forward", dom, {"final-row": q, "final-m": m_text, "final-l": l_text})

out = flashdemo(["backward"] + small, "backward.html")
rows = re.findall(r"^\s*q\s+(\d+):\s+L = (\S+)\s+D = (\S+)\s+P in", out, re.M)
if expect(rows, f"backward: no 'q N:  L = ...  D = ...' line in:\n{out}"):
    q, L_text, D_text = rows[-1]
    dom = dump_dom("backward.html")
    check_page("backward", "backward.html", dom, tiles=9)
    compare("backward", dom, {"final-row": q, "final-m": L_text, "final-l": D_text})

finish()
