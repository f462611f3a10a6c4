#!/usr/bin/python3
"""The --html replay page shows what the terminal shows, fits the screen, and speaks the run's
language (run by ctest; python3 stdlib only).

Usage: html_replay_test.py FLASHDEMO WORKDIR
1. The numbers. For softmax, forward and backward: runs flashdemo with --html page.html
   (capturing the terminal), opens the page in headless Chromium at #end (the last step), dumps
   the DOM and compares the elements id="final-m" and id="final-l" (and id="final-row") with the
   terminal, as strings:
     softmax   "online:  m = 7.705, l = 1.0410"           m with 3 decimals, l with 4
     forward   last "q   19:  L = <m> + log(<l>) = ..."  of --trace rows: m and l with 4 decimals
     backward  last "q   19:  L = <L>  D = <D>  P in ..." of --trace rows: L and D with 4 decimals
   The page formats numbers as ui::fixed does (exact ties to even), so equal strings are expected.
   The result panel lists O before L (dQ, dK, dV before D) with the terminal's verdicts.
   Also checks that the page is offline (no http:// or https://, no src/href to load), that no
   placeholder is left, that the grid has Tr x Tc tiles and that nothing is set in uppercase.
2. The layout. For the lecture's runs (softmax, forward, forward --causal, backward, backward
   --causal) the page is opened at #layout-check inside a frame of exactly 1024 x 768, of
   1024 x 625 (what a 1024 x 768 browser window leaves the page) and of 1920 x 1080: the page
   visits every step and reports where its parts lay. At every step the page must not scroll,
   the grid (or vector) and the panel must lie in the viewport, the grid inside its stage, every
   row of the panel's table must show, no expression may break across lines, the tiles must be
   at least 30 px and the table's text at least 12 px. One screenshot per size is left in WORKDIR.
3. The steps. forward --causal makes one step per line of the terminal's --trace tiles: a run of
   skipped tiles, "(0,1..4) skipped", is one step.
4. The words. With --lang zh (and with LANG=zh_CN.UTF-8) the page is Chinese: lang="zh-CN" and no
   English word on any step, outside symbols, code and key caps. The softmax page does not talk
   of O; with no rescale it says so and names a run that rescales, which has no such note.
5. The fonts. The Chinese page's font stacks (--sans, --mono) name the common CJK fonts (Noto Sans
   CJK SC, Source Han Sans SC, PingFang SC, Microsoft YaHei, WenQuanYi Micro Hei) before the
   generic family, Chromium computes them so, and a Chinese font fontconfig lists here is among
   them.
Without /usr/bin/chromium it fails, unless FLASHDEMO_ALLOW_NO_CHROMIUM=1 (then it says so and
passes). Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import html
import json
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
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--virtual-time-budget=5000"]

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


def flashdemo(args, page, run_env=None):
    """Runs flashdemo ARGS --html PAGE; returns the terminal output ('' on failure)."""
    if os.path.exists(page):
        os.remove(page)
    run = subprocess.run([exe] + args + ["--html", page], capture_output=True, text=True,
                         env=run_env or env, timeout=300)
    ok = expect(run.returncode == 0 and os.path.isfile(page),
                f"flashdemo {' '.join(args)} --html {page}: exit {run.returncode}, "
                f"stderr: {run.stderr.strip()[:400]}")
    return run.stdout if ok else ""


def chromium(url, *args, window=None):
    """Headless Chromium on URL with ARGS (--dump-dom, --screenshot=...); its stdout."""
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=work)
    try:
        size = [f"--window-size={window[0]},{window[1]}"] if window else []
        run = subprocess.run([CHROMIUM] + CHROMIUM_FLAGS + size +
                             [f"--user-data-dir={profile}"] + list(args) + [url],
                             capture_output=True, text=True, timeout=300)
        expect(run.returncode == 0, f"chromium {' '.join(args)} {url}: exit {run.returncode}, "
               f"stderr: {run.stderr.strip()[-400:]}")
        return run.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(page):
    """The page's DOM after its script ran, opened at its last step (#end)."""
    dom = chromium(pathlib.Path(os.path.abspath(page)).as_uri() + "#end", "--dump-dom")
    expect("</html>" in dom, f"chromium --dump-dom {page}: no page came back")
    return dom


def frame(page, width, height, name, hash="#layout-check"):
    """A page holding PAGE#layout-check in a frame of exactly WIDTH x HEIGHT (a browser window
    leaves the page less than its size; a frame's viewport is its size). The page posts its
    report to the frame's parent, which writes it into <pre id="report">."""
    path = os.path.join(work, name)
    src = pathlib.Path(os.path.abspath(page)).as_uri() + hash
    pathlib.Path(path).write_text(
        "<!doctype html><html><body style=\"margin:0\">"
        f"<iframe src=\"{src}\" width=\"{width}\" height=\"{height}\" "
        "style=\"border:0;display:block\"></iframe><pre id=\"report\"></pre><script>"
        "addEventListener('message', e => { document.getElementById('report').textContent = "
        "e.data; });</script></body></html>", encoding="utf-8")
    return pathlib.Path(path).as_uri()


def layout_report(page, width, height):
    """What the page reported at #layout-check in a WIDTH x HEIGHT frame (None if nothing)."""
    url = frame(page, width, height, f"frame-{page}-{width}x{height}.html")
    dom = chromium(url, "--dump-dom", window=(width + 40, height + 200))
    m = re.search(r'<pre id="report">(.+?)</pre>', dom, re.S)
    if not expect(m, f"{page} at {width}x{height}: the page reported no layout"):
        return None
    return json.loads(html.unescape(m.group(1)))


def element_text(dom, element_id):
    m = re.search(r'\bid="' + re.escape(element_id) + r'"[^>]*>([^<]*)<', dom)
    return html.unescape(m.group(1)).strip() if m else None


def check_page(name, page, dom, tiles=None):
    text = pathlib.Path(page).read_text(encoding="utf-8")
    expect(not re.search(r"https?://", text, re.I), f"{name}: the page refers to http(s)://")
    expect(not re.search(r"<(script|link|img|iframe|object|embed)\b[^>]*\b(src|href)\s*=",
                         text, re.I), f"{name}: the page loads a file")
    expect(not any(mark in text for mark in ("FLASHDEMO_TITLE", "FLASHDEMO_LANG",
                                             "/*FLASHDEMO_EVENTS*/[]", "/*FLASHDEMO_TEXT*/{}")),
           f"{name}: a placeholder was left in the page")
    expect("uppercase" not in text.lower(), f"{name}: the page sets text in uppercase")
    if tiles is not None:
        found = len(re.findall(r'\bid="tile-\d+-\d+"', dom))
        expect(found == tiles, f"{name}: the grid has {found} tiles, expected {tiles}")


def compare(name, dom, expected):
    for element_id, want in expected.items():
        got = element_text(dom, element_id)
        expect(got == want, f"{name}: id={element_id} shows {got!r}, the terminal {want!r}")


def check_result_panel(name, dom, out, arrays):
    """The result panel at #end: ARRAYS in this order, each 'max |X − X_ref|' with the verdict the
    terminal printed for it."""
    body = re.search(r'id="panel-body"[^>]*>(.*?)</table>', dom, re.S)
    if not expect(body, f"{name}: no result table in the panel"):
        return
    labels = re.findall(r"max \|(\w+) − \1<sub>ref</sub>\|", body.group(1))
    expect(labels == arrays, f"{name}: the result panel lists {labels}, expected {arrays}")
    verdicts = re.findall(r'<td class="(pass|fail)">', body.group(1))
    terminal = [v.lower() for v in re.findall(r"^\s*max \|\w+ - \w+_ref\| *= .*: (pass|FAIL)\s*$",
                                               out, re.M)]
    expect(verdicts == terminal and len(verdicts) == len(arrays),
           f"{name}: the panel's verdicts {verdicts}, the terminal's {terminal}")


# 1. The numbers, as the terminal prints them.
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
    check_result_panel("forward", dom, out, ["O", "L"])

out = flashdemo(["backward"] + small, "backward.html")
rows = re.findall(r"^\s*q\s+(\d+):\s+L = (\S+)\s+D = (\S+)\s+P in", out, re.M)
if expect(rows, f"backward: no 'q N:  L = ...  D = ...' line in:\n{out}"):
    q, L_text, D_text = rows[-1]
    dom = dump_dom("backward.html")
    check_page("backward", "backward.html", dom, tiles=9)
    compare("backward", dom, {"final-row": q, "final-m": L_text, "final-l": D_text})
    check_result_panel("backward", dom, out, ["dQ", "dK", "dV", "D"])

# 2. The layout: the lecture's runs at projector and full-HD sizes, every step in view.
LECTURE = {"softmax": ["softmax"], "forward": ["forward"], "forward-causal": ["forward", "--causal"],
           "backward": ["backward"], "backward-causal": ["backward", "--causal"]}
SIZES = [(1024, 768), (1024, 625), (1920, 1080)]
MIN_CELL, MIN_FONT = 30, 12


def inside(box, width, height):
    return box is None or (box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height)


def check_layout(name, report, width, height):
    if report is None:
        return
    where = f"{name} at {width}x{height}"
    if not expect(report["viewport"] == [width, height],
                  f"{where}: the page's viewport is {report['viewport']}"):
        return
    problems = []
    for s in report["steps"]:
        at = f"step {s['step']} ({s['event']})"
        if s["scroll"][0] > width or s["scroll"][1] > height:
            problems.append(f"{at}: the page scrolls, its size is {s['scroll']}")
        for part in ("figure", "panel", "caption", "nav", "final", "footer"):
            if not inside(s[part], width, height):
                problems.append(f"{at}: {part} at {s[part]} is out of view")
        fig, stage = s["figure"], s["stage"]
        if fig and not (fig[0] >= stage[0] - 1 and fig[1] >= stage[1] - 1 and
                        fig[2] <= stage[2] + 1 and fig[3] <= stage[3] + 1):
            problems.append(f"{at}: the figure {fig} is cut by its stage {stage}")
        if max(s["panelOverflow"]) > 1:
            problems.append(f"{at}: the panel's table is cut by {s['panelOverflow']} px")
        if s["brokenMath"]:
            problems.append(f"{at}: {s['brokenMath']} expressions break across lines")
        if s["cell"] is not None and s["cell"] < MIN_CELL:
            problems.append(f"{at}: tiles of {s['cell']} px (at least {MIN_CELL})")
        if s["panelFont"] < MIN_FONT:
            problems.append(f"{at}: the table's text is {s['panelFont']} px (at least {MIN_FONT})")
    expect(not problems, f"{where}: " + "; ".join(problems[:6]))


for name, args in LECTURE.items():
    page = name + ".html"
    if not flashdemo(args, page):
        continue
    for width, height in SIZES:
        check_layout(name, layout_report(page, width, height), width, height)

for width, height in SIZES[::2]:  # for a person to look at: forward --causal, step 5
    shot = os.path.join(work, f"forward-causal-{width}x{height}.png")
    url = frame("forward-causal.html", width, height, "frame-shot.html", "#step=5")
    chromium(url, f"--screenshot={shot}", window=(width, height))
    expect(os.path.isfile(shot), f"no screenshot {shot}")

# 3. The steps: one per line of the terminal's trace, a run of skipped tiles being one line.
out = flashdemo(["forward", "--causal", "--trace", "tiles"], "forward-causal.html")
report = layout_report("forward-causal.html", 1024, 768)
if report:
    trace = [line for line in out.splitlines() if re.match(r"^\s+(\(\d+,\d+(\.\.\d+)?\)|→)", line)]
    skipped = [line for line in trace if "skipped" in line]
    steps = [s["event"] for s in report["steps"]]
    expect(len(steps) == len(trace) + 2,
           f"forward --causal: {len(steps)} steps, the terminal's trace has {len(trace)} lines "
           "(+ problem and result expected)")
    expect(steps.count("tile_skipped") == len(skipped),
           f"forward --causal: {steps.count('tile_skipped')} skipped steps, the terminal prints "
           f"{len(skipped)} skipped lines")
    expect(any("(0, 1..4)" in s["words"] for s in report["steps"]),
           "forward --causal: no step shows the skipped tiles (0, 1..4) together")

# 4. The words: Chinese throughout with --lang zh; the right notes in English.
ALLOWED = {"flashdemo", "softmax", "forward", "backward", "FlashAttention", "top", "left",
           "bottom", "right", "fp64", "fp32", "bf16", "fp16", "inf", "nan", "long", "double",
           "Home", "End"}


def english_words(report):
    found = set()
    for s in report["steps"]:
        found |= {w for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", s["words"]) if w not in ALLOWED}
    return found


zh_env = {k: v for k, v in env.items() if k not in ("LC_ALL", "LC_MESSAGES")}
zh_env["LANG"] = "zh_CN.UTF-8"
for name, args, run_env in [("softmax", ["softmax", "--lang", "zh"], None),
                            ("forward-causal", ["forward", "--causal", "--lang", "zh"], None),
                            ("backward-causal", ["backward", "--causal"], zh_env)]:
    page = f"zh-{name}.html"
    if not flashdemo(args, page, run_env):
        continue
    text = pathlib.Path(page).read_text(encoding="utf-8")
    en = pathlib.Path(name + ".html").read_text(encoding="utf-8")
    expect(text != en, f"zh {name}: the page is the English one")
    report = layout_report(page, 1024, 768)
    if report:
        expect(report["lang"] == "zh-CN", f"zh {name}: <html lang={report['lang']!r}>")
        words = english_words(report)
        expect(not words, f"zh {name}: English words on the page: {sorted(words)[:20]}")
        check_layout("zh " + name, report, 1024, 768)

# 5. The fonts. A Chinese page names the common CJK fonts of Linux, macOS and Windows in both of
# its font stacks, the text's (--sans) and the numbers' (--mono), before the generic family, so a
# machine with any of them shows Chinese instead of empty boxes; in Chromium the stacks compute
# (a stack that did not parse would leave the browser's default font); and where fontconfig
# lists Chinese fonts on this machine, the stack names one of them.
CJK_FONTS = ["Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei",
             "WenQuanYi Micro Hei"]
if os.path.isfile("zh-softmax.html"):
    text = pathlib.Path("zh-softmax.html").read_text(encoding="utf-8")
    stacks = dict(re.findall(r"--(cjk|sans|mono):\s*([^;]*);", text))
    for font in CJK_FONTS:
        expect(f'"{font}"' in stacks.get("cjk", ""), f"fonts: {font} is not in the CJK stack")
    for name, generic in [("sans", "sans-serif"), ("mono", "monospace")]:
        stack = " ".join(stacks.get(name, "").split())
        expect(stack.endswith(f"var(--cjk), {generic}"),
               f"fonts: --{name} does not end with the CJK fonts and {generic}: {stack!r}")
    probe = text.replace("</body>", "<script>const c = document.createElement('code'), "
                         "p = document.createElement('pre'); document.body.append(c, p); "
                         "p.id = 'fontcheck'; p.textContent = getComputedStyle(document.body)"
                         ".fontFamily + '|' + getComputedStyle(c).fontFamily;</script></body>")
    pathlib.Path("zh-fonts.html").write_text(probe, encoding="utf-8")
    found = re.search(r'<pre id="fontcheck">([^<]*)</pre>', dump_dom("zh-fonts.html"))
    computed = html.unescape(found.group(1)) if found else ""
    for part, generic in zip(computed.split("|") + ["", ""], ["sans-serif", "monospace"]):
        expect("Noto Sans CJK SC" in part and part.rstrip().endswith(generic),
               f"fonts: the computed font-family lacks the CJK fonts: {part!r}")
    fc = shutil.which("fc-list")
    installed = set()
    if fc:
        listed = subprocess.run([fc, ":lang=zh", "family"], capture_output=True, text=True)
        installed = {f.strip() for line in listed.stdout.splitlines() for f in line.split(",")}
    if installed:
        expect(any(f'"{f}"' in stacks.get("cjk", "") for f in installed),
               f"fonts: none of this machine's Chinese fonts is in the stack: {sorted(installed)}")

report = layout_report("softmax.html", 1024, 768)
if report:
    words = " ".join(s["words"] for s in report["steps"])
    expect("not recorded" not in words and " O " not in words,
           "softmax: the page talks of O, which softmax does not have")
    expect(all(s["rescaleNote"] for s in report["steps"]) and "No block rescales" in words,
           "softmax: the lecture's softmax never rescales and the page does not say so")
    expect("--values=1,3,2,6,0,8 --block 2" in pathlib.Path("softmax.html").read_text(
        encoding="utf-8"), "softmax: the page does not name a run that rescales")
if flashdemo(["softmax", "--values=1,3,2,6,0,8", "--block", "2"], "rescale.html"):
    report = layout_report("rescale.html", 1024, 768)
    if report:
        expect(not any(s["rescaleNote"] for s in report["steps"]),
               "softmax --values=1,3,2,6,0,8 --block 2 rescales, yet the page says nothing does")
        check_layout("softmax --values=1,3,2,6,0,8", report, 1024, 768)

finish()
