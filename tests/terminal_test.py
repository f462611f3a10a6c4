#!/usr/bin/python3
"""The walkthrough and colour on a real (pseudo-)terminal. Run by ctest: terminal_test.py FLASHDEMO

On a terminal the walkthrough waits for Enter between steps, goes back one step on 'b' and
quits on 'q'; colour is on by default there, off with NO_COLOR=1 or TERM=dumb.
Prints 'N passed, N failed'.
"""
import os
import pty
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import expect, finish  # noqa: E402

exe = sys.argv[1]


def session(args, keys, env_extra=None, timeout=20):
    """Runs flashdemo on a pty, sends each key after the prompt appears; returns the output."""
    env = dict(os.environ, LC_ALL="C", LANG="C", TERM="xterm")
    env.pop("NO_COLOR", None)
    env.update(env_extra or {})
    master, slave = pty.openpty()
    proc = subprocess.Popen([exe] + args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    deadline = time.time() + timeout
    pending = list(keys)
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if pending and out.count(b"> ") > len(keys) - len(pending):
            os.write(master, pending.pop(0).encode())
        if proc.poll() is not None and not ready:
            break
    proc.wait(timeout=5)
    os.close(master)
    return proc.returncode, out.decode("utf-8", "replace")


# Enter twice, then quit: three screens shown, then it stops.
code, out = session(["walkthrough"], ["\n", "\n", "q\n"])
expect(code == 0, f"walkthrough exit code {code}")
expect("step 1/12" in out and "step 2/12" in out and "step 3/12" in out, "three screens shown")
expect("step 4/12" not in out, "q quits before step 4")
expect("[Enter] next" in out, "the prompt is shown")

# b goes back one step: 1, 2, back to 1, then quit.
code, out = session(["walkthrough"], ["\n", "b\n", "q\n"])
expect(out.count("step 1/12") == 2, "b shows step 1 again")

# --no-pause never waits, even on a terminal.
code, out = session(["walkthrough", "--no-pause", "--section", "memory"], [])
expect(code == 0 and "step 12/12" in out and "[Enter]" not in out, "--no-pause runs through")

# Colour on a terminal, and the two ways to turn it off.
code, out = session(["forward", "--causal", "--trace", "tiles"], [])
expect("\x1b[" in out, "colour on a terminal")
code, out = session(["forward", "--causal"], [], {"NO_COLOR": "1"})
expect("\x1b[" not in out, "NO_COLOR=1 turns colour off")
code, out = session(["forward", "--causal"], [], {"TERM": "dumb"})
expect("\x1b[" not in out, "TERM=dumb turns colour off")
code, out = session(["forward", "--causal", "--color", "always"], [], {"NO_COLOR": "1"})
expect("\x1b[" in out, "--color always wins over NO_COLOR")

finish()
