"""tally.py — the counting every script test here shares: expect() records a check, finish()
prints the closing 'N passed, N failed' line that CI reads and exits non-zero on any failure."""
import sys

passed = failed = 0


def expect(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what)
    return cond


def finish():
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
