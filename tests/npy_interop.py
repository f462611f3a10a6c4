#!/usr/bin/python3
"""NumPy and flashdemo read each other's .npy files (run by ctest with Debian's python3-numpy).

Usage: npy_interop.py FLASHDEMO WORKDIR
NumPy writes Q, K, V and dO; flashdemo computes O, L, dQ, dK, dV and writes them; NumPy reads
them back and compares with attention written here in NumPy (float64): they must agree to 1e-12.
Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import expect, finish  # noqa: E402

exe, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
os.chdir(work)


def attention(Q, K, V, dO, causal):
    n, m, d = Q.shape[0], K.shape[0], Q.shape[1]
    S = Q @ K.T / np.sqrt(d)
    if causal:  # top-left: query q sees keys k <= q
        S = np.where(np.arange(m)[None, :] > np.arange(n)[:, None], -np.inf, S)
    M = S.max(axis=1, keepdims=True)
    P = np.exp(S - M)
    l = P.sum(axis=1, keepdims=True)
    P /= l
    O = P @ V
    L = (M + np.log(l))[:, 0]
    dP = dO @ V.T
    dS = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    return O, L, dS @ K / np.sqrt(d), dS.T @ Q / np.sqrt(d), P.T @ dO


rng = np.random.default_rng(7)
n, m, d = 45, 38, 12
arrays = {name: rng.standard_normal(shape) for name, shape in
          [("q", (n, d)), ("k", (m, d)), ("v", (m, d)), ("do", (n, d))]}
for name, a in arrays.items():
    np.save(f"np_{name}.npy", a)
np.save("np_q32.npy", arrays["q"].astype(np.float32))

for causal in (False, True):
    flags = ["--causal"] if causal else []
    run = subprocess.run([exe, "backward", "--q", "np_q.npy", "--k", "np_k.npy", "--v", "np_v.npy",
                          "--do", "np_do.npy", "--trace", "none", "--save-o", "fd_o.npy",
                          "--save-lse", "fd_l.npy", "--save-dq", "fd_dq.npy", "--save-dk",
                          "fd_dk.npy", "--save-dv", "fd_dv.npy"] + flags,
                         capture_output=True, text=True)
    expect(run.returncode == 0, f"backward causal={causal}: {run.stderr}")
    want = attention(arrays["q"], arrays["k"], arrays["v"], arrays["do"], causal)
    for name, ref in zip(["o", "l", "dq", "dk", "dv"], want):
        got = np.load(f"fd_{name}.npy")
        expect(got.dtype == np.float64 and got.shape == ref.shape, f"{name}: {got.dtype} {got.shape}")
        err = np.abs(got - ref).max() / max(1.0, np.abs(ref).max())
        expect(err < 1e-12, f"{name} causal={causal}: relative error {err:.1e}")
    check = subprocess.run([exe, "check", "--q", "np_q.npy", "--k", "np_k.npy", "--v", "np_v.npy",
                            "--do", "np_do.npy", "--o", "fd_o.npy", "--dq", "fd_dq.npy"] + flags,
                           capture_output=True, text=True)
    expect(check.returncode == 0, f"check causal={causal}: {check.stdout[-500:]}")

# float32 in, float32 out
run = subprocess.run([exe, "forward", "--q", "np_q32.npy", "--k", "np_k.npy", "--v", "np_v.npy",
                      "--dtype", "fp32", "--save-o", "fd_o32.npy", "--trace", "none"],
                     capture_output=True, text=True)
expect(run.returncode == 0, "fp32 forward: " + run.stderr)
o32 = np.load("fd_o32.npy")
expect(o32.dtype == np.float32 and o32.shape == (n, d), f"fp32 O: {o32.dtype} {o32.shape}")
ref = attention(arrays["q"].astype(np.float32).astype(np.float64), arrays["k"].astype(np.float32).astype(np.float64),
                arrays["v"].astype(np.float32).astype(np.float64), arrays["do"], False)[0]
expect(np.abs(o32 - ref).max() < 1e-5, "fp32 O accuracy")

# a wrong O (every entry 1% off) must fail check
np.save("bad_o.npy", np.load("fd_o.npy") * 1.01)
bad = subprocess.run([exe, "check", "--q", "np_q.npy", "--k", "np_k.npy", "--v", "np_v.npy",
                      "--causal", "--o", "bad_o.npy"], capture_output=True, text=True)
expect(bad.returncode == 1 and "FAIL" in bad.stdout, "check must fail a wrong O")

finish()
