#!/usr/bin/python3
"""The walkthrough and colour on a real (pseudo-)terminal. Run by ctest: terminal_test.py FLASHDEMO

On a terminal the walkthrough reads single keys, no Enter: Enter, space, n and the right arrow go
on, b and the left arrow go back, q, Esc and Ctrl-D quit, Ctrl-C quits with exit code 130, and any
other key only shows the list of keys. After every way out (those keys, and SIGINT, SIGTERM,
SIGHUP from outside) the terminal's attributes are those it had before, echo and canonical mode
on, the hint line is cleared and the output ends with a newline. With stdin not a terminal it
never waits. memory and backward, taller than a 30 x 100 terminal, are shown a page at a time
with the same keys, every page with its hint within the terminal, the pages together what a pipe
gets; output that fits, stdin not a terminal or --json is not paged. Colour is on by default on
a terminal, off with NO_COLOR=1 or TERM=dumb. Prints 'N passed, N failed'.
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import expect, finish  # noqa: E402

exe = sys.argv[1]
PROMPT = b"[Enter] next"  # the hint at each pause
KEYS = b"keys: Enter"  # the hint after a key it does not know
CLEAR_LINE = b"\x1b[K"


class Session:
    """flashdemo (or a shell command) on a fresh pty; the test reads its output and types."""

    def __init__(self, args, env_extra=None, shell=None, stdin=None, size=None):
        env = dict(os.environ, LC_ALL="C", LANG="C", TERM="xterm")
        env.pop("NO_COLOR", None)
        env.update(env_extra or {})
        self.master, slave = pty.openpty()
        if size:  # rows, columns (else the pty's 0 x 0: a size unknown, and nothing is paged)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
        self.before = termios.tcgetattr(self.master)  # the slave's attributes, as the child sees
        cmd = ["sh", "-c", shell, exe] if shell else [exe] + args
        self.proc = subprocess.Popen(cmd, stdin=slave if stdin is None else stdin, stdout=slave,
                                     stderr=slave, env=env)
        os.close(slave)
        self.out = b""

    def pump(self, wait=0.1):
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every slave descriptor is closed
            return False
        self.out += chunk
        return bool(chunk)

    def wait_for(self, text, count=1, timeout=20):
        """True once `text` has appeared `count` times in the output."""
        deadline = time.time() + timeout
        while self.out.count(text) < count and time.time() < deadline:
            if not self.pump() and self.proc.poll() is not None:
                break
        return self.out.count(text) >= count

    def settle(self, seconds=0.3):
        """Reads whatever comes within `seconds`: to see that nothing more comes."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            self.pump(0.05)

    def send(self, data):
        os.write(self.master, data)

    def lflag(self):
        return termios.tcgetattr(self.master)[3]

    def finish(self, timeout=10):
        """The exit code (negative: the signal) once it has ended within `timeout`, else None."""
        deadline = time.time() + timeout
        while self.proc.poll() is None and time.time() < deadline:
            self.pump()
        while self.pump(0.05):
            pass
        code = self.proc.poll()
        if code is None:
            self.proc.kill()
            self.proc.wait()
        self.after = termios.tcgetattr(self.master)
        os.close(self.master)
        return code

    def text(self):
        return self.out.decode("utf-8", "replace")


def walk(keys, args=("walkthrough",), size=None, prompt=PROMPT):
    """Types each key at its own pause, waiting for the pause first; returns the session."""
    s = Session(list(args), size=size)
    for k, key in enumerate(keys):
        if not s.wait_for(prompt, k + 1):
            break
        s.send(key)
    return s


def left_cleanly(s, code, expected_code, how):
    """After quitting: the exit code, the attributes as before, the hint gone, a fresh line."""
    expect(code == expected_code, f"{how}: exit code {code}, expected {expected_code}")
    expect(s.after == s.before, f"{how}: the terminal's attributes are as before")
    expect(s.after[3] & termios.ECHO and s.after[3] & termios.ICANON,
           f"{how}: echo and canonical mode are back on")
    expect(s.out.rfind(CLEAR_LINE) > s.out.rfind(PROMPT), f"{how}: the hint line is cleared")
    expect(s.out.endswith(b"\n"), f"{how}: the output ends with a newline")


# At the pause the terminal reads key by key without echo; q quits at once, no Enter. The
# attributes are read at the pause, before the key: after it the program may already have put
# the terminal back (it did, on a loaded machine, and the check saw cooked mode).
s = Session(["walkthrough"])
s.wait_for(PROMPT)
raw = s.lflag()
s.send(b"q")
code = s.finish(timeout=5)
expect(not raw & termios.ICANON and not raw & termios.ECHO, "at the pause: no echo, no lines")
expect("step 1/12" in s.text() and "step 2/12" not in s.text(), "q quits on step 1")
left_cleanly(s, code, 0, "q")

# Enter (as a terminal sends it, \r, and as \n), space, n and the right arrow each go on.
s = walk([b"\r", b"\n", b" ", b"n", b"\x1b[C", b"q"])
code = s.finish()
expect(all(f"step {k}/12" in s.text() for k in range(1, 7)), "Enter, space, n, -> go on")
expect("step 7/12" not in s.text(), "one step per key")
left_cleanly(s, code, 0, "q after five steps")

# b and the left arrow go back one step: 1, 2, 1, 2, 1.
s = walk([b" ", b"b", b" ", b"\x1b[D", b"q"])
code = s.finish()
expect(s.text().count("step 1/12") == 3 and s.text().count("step 2/12") == 2,
       "b and <- go back one step")
left_cleanly(s, code, 0, "q after going back")

# A key it does not know stays on the step and shows the list of keys; so does Ctrl-Z.
s = walk([b"x"])
shown = s.wait_for(KEYS)
s.send(b"\x1a")
s.settle()
stayed = "step 2/12" not in s.text() and s.proc.poll() is None
s.send(b" ")
moved = s.wait_for(b"step 2/12")
s.send(b"q")
code = s.finish()
expect(shown, "an unknown key shows the list of keys")
expect(stayed, "unknown keys do not move")
expect(moved, "a known key after them does")
left_cleanly(s, code, 0, "q after unknown keys")

# Esc, Ctrl-D and Ctrl-C quit; Ctrl-C with 130, as a shell reports an interrupted command.
for key, how, want in [(b"\x1b", "Esc", 0), (b"\x04", "Ctrl-D", 0), (b"\x03", "Ctrl-C", 130)]:
    s = walk([key])
    code = s.finish(timeout=5)
    expect("step 2/12" not in s.text(), f"{how} quits on step 1")
    left_cleanly(s, code, want, how)

# Signals from outside at the pause: the attributes are restored and the signal ends it.
for sig in [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]:
    s = Session(["walkthrough"])
    s.wait_for(PROMPT)
    s.proc.send_signal(sig)
    code = s.finish(timeout=5)
    left_cleanly(s, code, -sig, sig.name)

# Stdout on a second pty that goes away at the pause: the next screen cannot be written; the
# walkthrough stops with exit code 4 and its message, and the keyboard's pty is put back.
keyboard, keyboard_slave = pty.openpty()
screen, screen_slave = pty.openpty()
before = termios.tcgetattr(keyboard)
proc = subprocess.Popen([exe, "walkthrough"], stdin=keyboard_slave, stdout=screen_slave,
                        stderr=keyboard_slave, env=dict(os.environ, LC_ALL="C", TERM="xterm"))
os.close(keyboard_slave)
os.close(screen_slave)
shown, deadline = b"", time.time() + 20
while PROMPT not in shown and time.time() < deadline:
    if select.select([screen], [], [], 0.2)[0]:
        shown += os.read(screen, 65536)
os.close(screen)
os.write(keyboard, b" ")
try:
    code = proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    proc.kill()
    code = proc.wait()
err = b""
while select.select([keyboard], [], [], 0.2)[0]:
    try:
        err += os.read(keyboard, 65536)
    except OSError:
        break
expect(code == 4 and b"cannot write to standard output" in err, f"stdout gone: exit {code}")
expect(termios.tcgetattr(keyboard) == before, "stdout gone: the attributes are as before")
os.close(keyboard)

# As the shell sees it: `stty -g` before and after are the same, its next line starts anew.
s = Session([], shell='stty -g; "$0" walkthrough; echo "rc=$?"; stty -g')
s.wait_for(PROMPT)
s.send(b"q")
code = s.finish()
lines = s.text().replace("\r", "").split("\n")
expect(code == 0 and "rc=0" in lines, "sh: the walkthrough exits 0 on q")
expect(len(lines) > 3 and lines[0] == lines[-2] and lines[-1] == "", "sh: stty -g as before")
expect(b"\nrc=0" in s.out, "sh: the next output starts on a fresh line")

# The whole lecture to its end: the last key ends it with the closing words.
s = walk([b" "] * 3, ["walkthrough", "--section", "memory"])
code = s.finish()
expect("That is the lecture" in s.text(), "the last step goes on to the end")
expect(code == 0 and s.after == s.before, "the end: exit 0, attributes as before")

# --no-pause never waits, even on a terminal; neither does a walkthrough whose stdin is not one.
s = Session(["walkthrough", "--no-pause", "--section", "memory"])
code = s.finish()
expect(code == 0 and "step 12/12" in s.text() and "[Enter]" not in s.text(),
       "--no-pause runs through")
expect(s.after == s.before, "--no-pause leaves the attributes alone")
s = Session(["walkthrough", "--section", "memory"], stdin=subprocess.DEVNULL)
code = s.finish()
expect(code == 0 and "step 12/12" in s.text() and "[Enter]" not in s.text(),
       "stdin not a terminal: no waiting")


# Pages: memory and backward are longer than a projector's 30 rows; on a terminal they are shown
# a page at a time, each on a cleared screen with the hint below it, with the walkthrough's keys;
# the last page ends the run. What the pages show, put together, is what a pipe gets.
CLEAR = "\x1b[2J\x1b[H"
PROJECTOR = (30, 100)


def rows_of(line, cols):
    width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
    return max(1, -(-width // cols))


def pages_of(s):
    """The pages the session showed, each without its hint, and the hints' page numbers."""
    text = s.text().replace("\r", "")
    pages = text.split(CLEAR)[1:]
    shown = [p.split("\x1b[K")[0] for p in pages]
    hints = re.findall(r"page (\d+)/(\d+)", text) + re.findall(r"第 (\d+)/(\d+) 页", text)
    return shown, hints


def piped(args):
    run = subprocess.run([exe] + args, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         env=dict(os.environ, LC_ALL="C", LANG="C", TERM="xterm"))
    return run.stdout


for args in (["memory", "--color", "never"], ["memory", "--color", "never", "--lang", "zh"],
             ["backward", "--color", "never"]):
    name = " ".join(args)
    whole = piped(args)
    s = walk([b" "] * 6, args, size=PROJECTOR, prompt=b"[Enter]")  # zh: "[Enter] 下一页"
    code = s.finish(timeout=30)
    shown, hints = pages_of(s)
    expect(code == 0 and len(shown) >= 2, f"{name}: paged on a 30-row terminal ({len(shown)} pages)")
    expect(len(hints) == len(shown) - 1 and all(h[1] == str(len(shown)) for h in hints),
           f"{name}: a hint under every page but the last: {hints}")
    expect(all(sum(rows_of(line, PROJECTOR[1]) for line in page.split("\n")[:-1]) < PROJECTOR[0]
               for page in shown), f"{name}: every page fits above its hint")
    expect("".join(shown) == whole, f"{name}: the pages put together are not the piped output")
    expect(s.after == s.before, f"{name}: the attributes are as before")

# b goes back a page; q quits (exit 0, the hint cleared, a fresh line), Ctrl-C with 130.
s = walk([b" ", b"b", b"q"], ["memory"], size=PROJECTOR)
code = s.finish()
expect(s.text().count("page 1/") == 2 and s.text().count("page 2/") == 1, "pages: b goes back")
left_cleanly(s, code, 0, "pages: q")
s = walk([b"\x03"], ["backward"], size=PROJECTOR)
code = s.finish()
expect("finite differences" not in s.text(), "pages: Ctrl-C quits on the first page")
left_cleanly(s, code, 130, "pages: Ctrl-C")

# Nothing to page: output that fits the terminal, a terminal taller than the output, stdin not a
# terminal, --json.
for args, size, stdin in [(["memory", "--n", "4096", "--quiet"], PROJECTOR, None),
                          (["memory"], (120, 100), None),
                          (["memory"], PROJECTOR, subprocess.DEVNULL),
                          (["memory", "--json"], PROJECTOR, None)]:
    s = Session(args, size=size, stdin=stdin)
    code = s.finish()
    expect(code == 0 and "[Enter]" not in s.text() and CLEAR not in s.text(),
           f"{' '.join(args)} on {size[0]} rows, stdin {'not ' if stdin else ''}a terminal: "
           "not paged")


def colour(args, env_extra=None):
    s = Session(args, env_extra)
    s.finish()
    return s.text()


# Colour on a terminal, and the two ways to turn it off.
expect("\x1b[" in colour(["forward", "--causal", "--trace", "tiles"]), "colour on a terminal")
expect("\x1b[" not in colour(["forward", "--causal"], {"NO_COLOR": "1"}),
       "NO_COLOR=1 turns colour off")
expect("\x1b[" not in colour(["forward", "--causal"], {"TERM": "dumb"}),
       "TERM=dumb turns colour off")
expect("\x1b[" in colour(["forward", "--causal", "--color", "always"], {"NO_COLOR": "1"}),
       "--color always wins over NO_COLOR")


# The progress line: on stderr, a terminal, for runs past a second; redrawn in place, then erased.
# The terminal is drained while the run goes on (a thread): a slow run (under the sanitizers, on
# a loaded machine) redraws its line often enough to fill the terminal's buffer, and would then
# wait on its stderr while this waited on its stdout.
def stderr_on_pty(args):
    master, slave = pty.openpty()
    p = subprocess.Popen([exe] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=slave, env=dict(os.environ, LC_ALL="C", LANG="C"))
    os.close(slave)
    chunks = []

    def drain():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    out = p.stdout.read()
    p.wait()
    reader.join()
    os.close(master)
    return p.returncode, out.decode(), b"".join(chunks).decode()


code, out, err = stderr_on_pty(["backward", "--n", "1500", "--d", "64", "--trace", "none"])
expect(code == 0 and "max |dQ - dQ_ref|" in out, "a long backward runs")
expect("\r\033[K  flashdemo backward: " in err and " s" in err, "a long run shows a progress line")
expect(err.endswith("\r\033[K"), "the progress line is erased at the end")
expect("\033" not in out and "flashdemo backward:" not in out, "stdout never sees the progress line")
code, out, err = stderr_on_pty(["softmax"])
expect(code == 0 and err == "", "a short run shows no progress line")

finish()
