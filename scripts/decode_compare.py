#!/usr/bin/env python3
"""decode_compare.py — `flashdemo decode --device cuda` against PyTorch's SDPA backends on one
decoding step: one query row (b = 1, n = 1) of h heads against a KV cache of m keys, bf16.

For m in {65536, 1048576}, h in {8, 32}, d in {64, 128}:
  - flashdemo: `flashdemo decode --device cuda --dtype bf16 --h H --m M --d D --reps R --json`;
    its `result` gives the kernel's median milliseconds (CUDA events, one launch: splits and
    merge, timed as below), the bytes of K and V it reads (kv_bytes), TB/s, the device-to-device
    copy's TB/s measured in the same run (bytes read + written), and the verdict against the
    reference;
  - PyTorch: F.scaled_dot_product_attention(q, k, v), q (1, h, 1, d), k, v (1, h, m, d), bf16, under
    each backend alone (cuDNN, FLASH_ATTENTION, EFFICIENT_ATTENTION; a backend that refuses the
    shape prints n/a), timed as flashdemo times its kernel (gpu_timing.py: L2 flushed before
    each call, the calls queued, CUDA events around each), the median of R after warm-up.
TB/s = kv_bytes / median time for every column (the same bytes: 2 h m d 2). The ratio is
flashdemo's TB/s over the fastest PyTorch backend's.

Usage: python3 scripts/decode_compare.py [--exe device/flashdemo] [--reps 50] [--quick]
(--quick: m = 65536 only). Needs a GPU and PyTorch with CUDA. Prints one line per case as it
goes, then the table.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import gpu_timing  # beside this script


def flashdemo_case(exe, h, m, d, reps):
    """The `result` object of one flashdemo run (or None, with the reason printed)."""
    args = [exe, "decode", "--device", "cuda", "--dtype", "bf16", "--h", str(h), "--m", str(m),
            "--d", str(d), "--reps", str(reps), "--json"]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode not in (0, 1):
        print(f"  flashdemo failed ({p.returncode}): {p.stderr.decode().strip()}", flush=True)
        return None
    for line in p.stdout.decode().splitlines():
        obj = json.loads(line)
        if obj.get("event") == "result":
            return obj
    return None


def torch_case(torch, h, m, d, reps, warmup=5):
    """{backend name: median ms or None (refused)} for SDPA on (1, h, 1, d) x (1, h, m, d)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, h, 1, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(1, h, m, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(1, h, m, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    out = {}
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("flash", SDPBackend.FLASH_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                out[name] = gpu_timing.median_ms(
                    torch, lambda: F.scaled_dot_product_attention(q, k, v), warmup, reps)
        except RuntimeError as e:  # the backend refuses the shape (or is not built)
            out[name] = None
            print(f"  torch {name}: n/a ({str(e).splitlines()[0][:100]})", flush=True)
    del q, k, v
    torch.cuda.empty_cache()
    return out


def tbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e12 if ms else None


def text(x, fmt="{:.2f}"):
    return "n/a" if x is None else fmt.format(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=os.path.join("device", "flashdemo"))
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="m = 65536 only")
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("decode_compare.py: PyTorch sees no CUDA device")
    began = time.time()
    rows = []
    for m in (65536,) if a.quick else (65536, 1048576):
        for h in (8, 32):
            for d in (64, 128):
                fd = flashdemo_case(a.exe, h, m, d, a.reps)
                tt = torch_case(torch, h, m, d, a.reps)
                nbytes = 2.0 * h * m * d * 2
                ours = tbps(nbytes, fd["median_ms"]) if fd else None
                theirs = {k: tbps(nbytes, v) for k, v in tt.items()}
                best = max((x for x in theirs.values() if x), default=None)
                row = {"m": m, "h": h, "d": d, "ms": fd["median_ms"] if fd else None,
                       "tbps": ours, "copy": fd["copy_tbps"] if fd else None,
                       "splits": fd["splits"] if fd else None,
                       "pass": fd["pass"] if fd else None, **theirs,
                       "ratio": ours / best if ours and best else None}
                rows.append(row)
                print(f"m={m} h={h} d={d}: flashdemo {text(row['ms'], '{:.4f}')} ms "
                      f"{text(ours)} TB/s (S={row['splits']}, pass={row['pass']}); torch "
                      + ", ".join(f"{k} {text(v)}" for k, v in theirs.items())
                      + f" TB/s; ratio {text(row['ratio'])}  [{time.time() - began:.0f} s]",
                      flush=True)
    print()
    print(f"decode, bf16, b = 1, n = 1; TB/s = 2 h m d 2 bytes / median time ({a.reps} reps); "
          f"torch {torch.__version__}")
    head = ("m", "h", "d", "S", "flashdemo ms", "flashdemo", "cuDNN", "FLASH", "EFFICIENT",
            "vs best", "copy", "pass")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = (r["m"], r["h"], r["d"], r["splits"], text(r["ms"], "{:.4f}"), text(r["tbps"]),
                 text(r["cudnn"]), text(r["flash"]), text(r["efficient"]),
                 text(r["ratio"], "{:.2f}x"), text(r["copy"]), r["pass"])
        print("| " + " | ".join(str(c) for c in cells) + " |")
    print(f"(TB/s columns; copy: cudaMemcpy device to device in flashdemo's run, read + written; "
          f"{time.time() - began:.0f} s in all)")


if __name__ == "__main__":
    main()
