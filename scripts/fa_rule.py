#!/usr/bin/env python3
"""flashdemo's backward judged by FlashAttention's own test rule, with the margin per gradient.

For each case (impl, dtype, deterministic, causal and its alignment, n, m, d) it computes:

  inputs  Q (n x d), K, V (m x d) and dO (n x d), drawn N(0, 1) in float32 from a generator
          seeded by (--seed, n, m, d), then rounded to --dtype by torch (round to nearest, ties
          to even). These rounded values are the only inputs: flashdemo reads them from .npy
          files (fp16 as float16; bf16 as float32, which holds every bf16 value exactly; fp32 as
          float32), and both PyTorch computations below start from the very same tensors.
          flashdemo's --save-q/k/v/do are read back and must equal them bit for bit.
  G_ref   dQ, dK, dV by autograd of plain attention, O = softmax(scale Q K^T, masked) V, in
          float64 (the rounded inputs and dO upcast), scale = 1/sqrt(d) (flashdemo's and
          PyTorch's default). The causal mask is built explicitly: top-left keeps key j for
          query i when j <= i (PyTorch's is_causal), bottom-right when j <= i + m - n
          (FlashAttention-2's). A query row that sees no key (bottom-right, n > m) has O = 0 and
          gradient 0, as in FlashAttention.
  G_pt    the same gradients by autograd of torch.nn.functional.scaled_dot_product_attention
          in --dtype on the same device, dO in --dtype. --pt-backend default leaves the choice
          of kernel to PyTorch; math, flash, efficient or cudnn force one through
          torch.nn.attention.sdpa_kernel; naive runs the plain attention of G_ref in --dtype
          instead of float64 (the kind of "pt" baseline FlashAttention's tests write by hand).
          Causal top-left is is_causal=True; bottom-right passes
          torch.nn.attention.bias.causal_lower_right(n, m) as attn_mask (an explicit boolean
          mask on a PyTorch without it). Where SDPA is missing (PyTorch 1.x, for --device cpu)
          the naive computation is used.
  G_ours  flashdemo backward --device DEV --impl IMPL --dtype DTYPE --q q.npy --k k.npy
          --v v.npy --do do.npy [--causal [--causal-align bottom-right]] [--deterministic]
          --trace none --save-dq dq.npy --save-dk dk.npy --save-dv dv.npy --save-o o.npy
          (and --save-q/k/v/do), run with --json; flashdemo runs its own forward first.
  rule    for G in (dQ, dK, dV): err_ours = max|G_ours - G_ref|, err_pt = max|G_pt - G_ref|;
          pass when err_ours <= 2 err_pt + 1e-5 (the 2: --factor; the 1e-5: --atol).
  margin  err_ours / err_pt per gradient: below 2 passes (up to atol); the closer to 2, the
          thinner the margin. O is measured the same way and written to --out, not printed.

One head per case by default ((n, d) files); --batch B --heads H writes (B, H, n, d) files, which
flashdemo runs head by head, and err is the maximum over all heads.

Not FlashAttention's test code: its tests take the reference in float32 (upcast) and their "pt"
side from their own attention in the low precision; here the reference is float64 and "pt" is
SDPA (or --pt-backend naive, which is closer to theirs). The margin depends on that choice:
SDPA's fused kernels are more accurate than naive low-precision attention, so 2x of theirs is
the stricter bar.

When flashdemo's own verdict fails (exit 1) it writes no files; its err_dQ, err_dK, err_dV
(against its own float64 reference of the same inputs) then come from its --json "result"
event, and the line says so.

Run on the GPU machine (PyTorch 2.x with CUDA):
    python3 scripts/fa_rule.py --flashdemo build/cuda/flashdemo --impl mma,hopper \\
        --dtype fp16,bf16 --causal 0,1 --deterministic 0,1 --out fa_rule.json
Local check of the plumbing (no GPU; PyTorch 1.13 is enough; CPU teaching path in fp32):
    python3 scripts/fa_rule.py --flashdemo build/cpu/flashdemo --device cpu --dtype fp32 \\
        --impl teaching --shapes "37,53,16;64,64,32" --causal 0,1 --deterministic 0

It prints one line per case and a summary. Exit 0 whatever the verdicts (it measures); 1 when
flashdemo failed to run a case (an exit code other than 0 or 1, no result, a timeout, or input
values other than the ones given), 2 for a bad command line.
"""
import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

GRADS = ("dq", "dk", "dv")
LABEL = {"dq": "dQ", "dk": "dK", "dv": "dV", "o": "O"}
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
PT_BACKENDS = ("default", "math", "flash", "efficient", "cudnn", "naive")
SDPA_NAMES = {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
              "cudnn": "CUDNN_ATTENTION"}
# Lengths of the kind FlashAttention's tests use (odd, n != m both ways, square) at d = 64 and
# 128, the two head dimensions the GPU rungs take.
DEFAULT_SHAPES = ("113,203,64;128,217,128;113,211,64;108,256,128;256,512,64;512,256,128;"
                  "200,200,128;333,251,128;77,500,128;1023,1024,64;1024,1023,128;2048,2048,128")


# ----------------------------------------------------------------------------- command line

def int_list(text, allowed=(0, 1)):
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or any(v not in allowed for v in values):
        raise argparse.ArgumentTypeError(f"expected a comma list of {allowed}, got {text!r}")
    return values


def name_list(text):
    values = [x.strip() for x in text.split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError("expected a comma list of names")
    return values


def parse_shapes(text):
    """'n,m,d;n,m,d;...' -> [(n, m, d), ...]"""
    shapes = []
    for part in text.split(";"):
        if not part.strip():
            continue
        try:
            n, m, d = (int(x) for x in part.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"a shape is n,m,d; got {part!r}") from None
        if min(n, m, d) < 1:
            raise argparse.ArgumentTypeError(f"sizes must be positive: {part!r}")
        shapes.append((n, m, d))
    if not shapes:
        raise argparse.ArgumentTypeError("no shape given")
    return shapes


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--flashdemo", required=True, help="the flashdemo binary")
    ap.add_argument("--impl", type=name_list, default=["mma", "hopper"],
                    help="flashdemo --impl values, comma list [mma,hopper]")
    ap.add_argument("--dtype", type=name_list, default=["fp16", "bf16"],
                    help="fp16, bf16 (fp32: --device cpu), comma list [fp16,bf16]")
    ap.add_argument("--shapes", type=parse_shapes, default=parse_shapes(DEFAULT_SHAPES),
                    help=f'"n,m,d;..." [{DEFAULT_SHAPES}]')
    ap.add_argument("--causal", type=int_list, default=[0, 1], help="0, 1 or 0,1 [0,1]")
    ap.add_argument("--align", type=name_list, default=["top-left"],
                    help="causal alignment(s): top-left, bottom-right [top-left]")
    ap.add_argument("--deterministic", type=int_list, default=[0, 1],
                    help="flashdemo --deterministic: 0, 1 or 0,1 [0,1]")
    ap.add_argument("--batch", type=int, default=1, help="b: batch of the files [1]")
    ap.add_argument("--heads", type=int, default=1,
                    help="h: heads of the files [1]; b = h = 1 writes (n, d) files, else "
                         "(b, h, n, d)")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the draws [0]")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="where flashdemo and PyTorch run [cuda]; cpu: a check of the plumbing")
    ap.add_argument("--pt-backend", choices=PT_BACKENDS, default="default",
                    help="the PyTorch side: SDPA's own choice, one SDPA backend, or naive "
                         "attention in --dtype [default]")
    ap.add_argument("--factor", type=float, default=2.0, help="the rule's factor [2]")
    ap.add_argument("--atol", type=float, default=1e-5, help="the rule's constant [1e-5]")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per flashdemo run [600]")
    ap.add_argument("--workdir", help="keep the .npy files here (default: a temporary folder)")
    ap.add_argument("--out", help="write every case, and the summary, as JSON here")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also print err_ours and err_pt of each gradient")
    a = ap.parse_args(argv)
    for dt in a.dtype:
        if dt not in TORCH_DTYPES:
            ap.error(f"--dtype {dt}: expected fp16, bf16 or fp32")
    for al in a.align:
        if al not in ("top-left", "bottom-right"):
            ap.error(f"--align {al}: expected top-left or bottom-right")
    if a.device == "cpu" and 1 in a.deterministic:
        ap.error("--deterministic 1 needs --device cuda (flashdemo refuses it on the CPU)")
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: this PyTorch sees no CUDA GPU (use --device cpu to check "
                 "the plumbing)")
    if a.pt_backend in SDPA_NAMES and not has_sdpa():
        ap.error(f"--pt-backend {a.pt_backend}: this PyTorch ({torch.__version__}) has no "
                 "scaled_dot_product_attention (default and naive work)")
    if min(a.batch, a.heads) < 1:
        ap.error("--batch and --heads must be positive")
    return a


# ----------------------------------------------------------------------------- inputs

class Inputs:
    """Q, K, V, dO of one case as (b, h, rows, d) tensors on the CPU, in the run's dtype."""

    def __init__(self, q, k, v, do):
        self.q, self.k, self.v, self.do = q, k, v, do

    def items(self):
        return (("q", self.q), ("k", self.k), ("v", self.v), ("do", self.do))


def shape_seed(seed, n, m, d):
    """One seed per shape, so adding a shape leaves the others' draws as they were."""
    return (seed * 1_000_003 + n * 10_007 + m * 101 + d) % (2 ** 63)


def draw_inputs(n, m, d, b, h, seed):
    """Q, K, V, dO drawn N(0, 1) in float32."""
    g = torch.Generator().manual_seed(shape_seed(seed, n, m, d))
    rows = {"q": n, "k": m, "v": m, "do": n}
    x = {name: torch.randn(b, h, r, d, generator=g, dtype=torch.float32)
         for name, r in rows.items()}
    return Inputs(x["q"], x["k"], x["v"], x["do"])


def round_inputs(x, dtype):
    """Every input rounded to dtype (torch: round to nearest, ties to even)."""
    t = TORCH_DTYPES[dtype]
    return Inputs(*(a.to(t) for _, a in x.items()))


def file_array(t, dtype, one_head):
    """The array flashdemo reads: float16 for fp16, float32 for bf16 (exact) and fp32."""
    a = t.to(torch.float16 if dtype == "fp16" else torch.float32).numpy()
    return np.ascontiguousarray(a[0, 0] if one_head else a)


def save_inputs(x, dtype, folder, one_head):
    """Writes q.npy, k.npy, v.npy, do.npy; returns {name: path}."""
    paths = {}
    for name, t in x.items():
        paths[name] = os.path.join(folder, f"{name}.npy")
        np.save(paths[name], file_array(t, dtype, one_head))
    return paths


# ----------------------------------------------------------------------------- attention

def allowed_keys(n, m, causal, align, device):
    """Boolean (n, m): True where query i sees key j; None without a mask."""
    if not causal:
        return None
    i = torch.arange(n, device=device).unsqueeze(1)
    j = torch.arange(m, device=device).unsqueeze(0)
    shift = 0 if align == "top-left" else m - n
    return j <= i + shift


def plain_attention(q, k, v, scale, allowed):
    """softmax(scale Q K^T, masked) V in the tensors' own dtype; a row with no key gives 0."""
    s = torch.matmul(q * scale, k.transpose(-2, -1))
    if allowed is None:
        return torch.matmul(torch.softmax(s, dim=-1), v)
    sees = allowed.any(dim=-1, keepdim=True)  # (n, 1)
    s = s.masked_fill(~allowed, float("-inf")).masked_fill(~sees, 0.0)  # no -inf-only row
    p = torch.softmax(s, dim=-1).masked_fill(~sees, 0.0)
    return torch.matmul(p, v)


def grads_of(forward, x, dtype, device):
    """(O, [dQ, dK, dV]) of forward(q, k, v) with upstream dO, inputs cast to dtype."""
    q, k, v = (a.detach().to(device=device, dtype=dtype, copy=True).requires_grad_(True)
               for a in (x.q, x.k, x.v))  # fresh leaves: the inputs themselves stay untouched
    o = forward(q, k, v)
    o.backward(x.do.to(device=device, dtype=dtype))
    return o.detach(), [q.grad, k.grad, v.grad]


def reference(x, scale, allowed, device):
    """G_ref: plain attention in float64 from the rounded inputs."""
    return grads_of(lambda q, k, v: plain_attention(q, k, v, scale, allowed),
                    x, torch.float64, device)


def has_sdpa():
    return hasattr(torch.nn.functional, "scaled_dot_product_attention")


def lower_right_mask(n, m, allowed):
    """SDPA's bottom-right causal mask: CausalBias where this PyTorch has it, else boolean."""
    try:
        from torch.nn.attention.bias import causal_lower_right
        return causal_lower_right(n, m)
    except ImportError:
        return allowed


def backend_context(backend):
    """sdpa_kernel([one backend]), imported only when asked (PyTorch 1.x has no such module)."""
    if backend == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([getattr(SDPBackend, SDPA_NAMES[backend])])


def sdpa_kwargs(n, m, causal, align, allowed):
    if not causal:
        return {}
    if align == "top-left":
        return {"is_causal": True}  # PyTorch's is_causal is top-left
    return {"attn_mask": lower_right_mask(n, m, allowed)}


def default_choice(x, kwargs, dtype, device):
    """The backend SDPA picks by itself for this case, when PyTorch can say (else None)."""
    try:
        from torch.nn.attention import SDPBackend
        if "attn_mask" in kwargs:  # CausalBias dispatches by itself
            return None
        q, k, v = (a.detach().to(device=device, dtype=dtype, copy=True).requires_grad_(True)
                   for a in (x.q, x.k, x.v))  # copies that need grad, as in the run
        code = int(torch._fused_sdp_choice(q, k, v, None, 0.0, kwargs.get("is_causal", False)))
        names = {int(b): name for name, b in SDPBackend.__members__.items()}
        return names.get(code, str(code)).lower()
    except Exception:  # an internal function: absent or changed in some versions
        return None


def pt_side(x, dtype, scale, causal, align, allowed, backend, device):
    """G_pt in dtype: {'o', 'grads', 'used'}, or {'error', 'used'} when PyTorch refuses."""
    n, m = x.q.shape[-2], x.k.shape[-2]
    t = TORCH_DTYPES[dtype]
    if backend == "naive" or (backend == "default" and not has_sdpa()):
        used, context = "naive", contextlib.nullcontext()
        forward = lambda q, k, v: plain_attention(q, k, v, scale, allowed)  # noqa: E731
    else:
        kwargs = sdpa_kwargs(n, m, causal, align, allowed)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        choice = backend if backend != "default" else default_choice(x, kwargs, t, device)
        used, context = "sdpa:" + (choice or "default"), None
        if "attn_mask" in kwargs:  # bottom-right: say which mask SDPA was given
            mask = kwargs["attn_mask"]
            used += "+" + ("bool mask" if isinstance(mask, torch.Tensor) else "causal_lower_right")
        forward = lambda q, k, v: sdpa(q, k, v, **kwargs)  # noqa: E731
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with context or backend_context(backend):
                o, g = grads_of(forward, x, t, device)
        except (RuntimeError, ValueError, NotImplementedError, ImportError) as e:
            why = [str(e).strip().splitlines()[0]] + [str(w.message).strip() for w in caught]
            return {"error": "; ".join(w for w in why if w)[:600], "used": used}
    return {"o": o, "grads": g, "used": used}


# ----------------------------------------------------------------------------- flashdemo

OUTPUTS = ("dq", "dk", "dv", "o", "saved_q", "saved_k", "saved_v", "saved_do")


def flashdemo_command(a, impl, dtype, det, causal, align, paths, outs):
    cmd = [a.flashdemo, "--json", "backward", "--device", a.device, "--impl", impl,
           "--dtype", dtype, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"],
           "--do", paths["do"], "--trace", "none",
           "--save-dq", outs["dq"], "--save-dk", outs["dk"], "--save-dv", outs["dv"],
           "--save-o", outs["o"], "--save-q", outs["saved_q"], "--save-k", outs["saved_k"],
           "--save-v", outs["saved_v"], "--save-do", outs["saved_do"]]
    if causal:
        cmd += ["--causal"] + (["--causal-align", "bottom-right"] if align == "bottom-right"
                               else [])
    if det:
        cmd.append("--deterministic")
    return cmd


def result_event(stdout):
    """The last {"event": "result"} line of flashdemo's --json output, or None."""
    found = None
    for line in stdout.splitlines():
        if line.startswith("{") and '"result"' in line:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") == "result":
                found = e
    return found


def run_flashdemo(a, impl, dtype, det, causal, align, paths, folder):
    """{'rc', 'cmd', 'result', 'arrays' (name: ndarray, when written), 'error' (or None)}."""
    outs = {name: os.path.join(folder, f"out_{name}.npy") for name in OUTPUTS}
    for p in outs.values():  # nothing stale is read as this run's
        if os.path.exists(p):
            os.remove(p)
    cmd = flashdemo_command(a, impl, dtype, det, causal, align, paths, outs)
    run = {"cmd": " ".join(cmd), "rc": None, "result": None, "arrays": {}, "error": None}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        run["error"] = f"timed out after {a.timeout:g} s"
        return run
    except OSError as e:
        run["error"] = f"cannot run {a.flashdemo}: {e}"
        return run
    run["rc"], run["result"] = p.returncode, result_event(p.stdout)
    stderr = p.stderr.strip().splitlines()
    run["stderr"] = stderr[-1] if stderr else ""
    if p.returncode == 0:
        missing = [n for n, path in outs.items() if not os.path.exists(path)]
        if missing:
            run["error"] = f"exit 0 but no {', '.join(missing)} written"
            return run
        run["arrays"] = {n: np.load(path) for n, path in outs.items()}
    elif p.returncode != 1 or run["result"] is None:
        run["error"] = f"exit {p.returncode}: {run['stderr'] or '(no message)'}"
    return run


def same_inputs(run, paths):
    """The names of the inputs flashdemo saved with other values than those given."""
    differ = []
    for name in ("q", "k", "v", "do"):
        given = np.load(paths[name]).astype(np.float64)
        used = run["arrays"][f"saved_{name}"].astype(np.float64)
        if given.shape != used.shape or not np.array_equal(given, used):
            differ.append(name)
    return differ


# ----------------------------------------------------------------------------- the rule

def max_err(x, ref):
    """max |x - ref| in float64 (NaN when x holds one)."""
    return float((x.to(torch.float64) - ref).abs().max().item())


def margin(err_ours, err_pt):
    if err_pt is None or err_ours is None or math.isnan(err_pt) or math.isnan(err_ours):
        return float("nan")
    if err_pt == 0:
        return 0.0 if err_ours == 0 else float("inf")
    return err_ours / err_pt


def judge(err_ours, err_pt, a):
    """The rule: err_ours <= factor err_pt + atol (None when either side is missing)."""
    if err_ours is None or err_pt is None or math.isnan(err_ours) or math.isnan(err_pt):
        return None
    return err_ours <= a.factor * err_pt + a.atol


def as_tensor(arr, like):
    return torch.from_numpy(np.asarray(arr, dtype=np.float64)).reshape(like.shape).to(like.device)


def case_grades(ref, pt, run, a):
    """{'dq': {err_ours, err_pt, ratio, pass}, ..., 'o': {...}} and where err_ours came from."""
    (o_ref, g_ref), grades = ref, {}
    pt_arrays = {} if "error" in pt else dict(zip(GRADS, pt["grads"]), o=pt["o"])
    ref_arrays = dict(zip(GRADS, g_ref), o=o_ref)
    source = "files" if run["arrays"] else "flashdemo --json result"
    for name in GRADS + ("o",):
        if run["arrays"]:
            e_ours = max_err(as_tensor(run["arrays"][name], ref_arrays[name]), ref_arrays[name])
        else:  # exit 1: nothing written; flashdemo's own error against its float64 reference
            e_ours = number(run["result"].get("err_" + LABEL[name]))  # (no err_O there)
        e_pt = max_err(pt_arrays[name], ref_arrays[name]) if name in pt_arrays else None
        grades[name] = {"err_ours": e_ours, "err_pt": e_pt, "ratio": margin(e_ours, e_pt),
                        "pass": judge(e_ours, e_pt, a)}
        if run["result"] and name != "o":  # flashdemo's own view, a check on G_ref
            grades[name]["err_flashdemo"] = number(run["result"].get("err_" + LABEL[name]))
            grades[name]["naive_flashdemo"] = number(run["result"].get("naive_" + LABEL[name]))
    return grades, source


def number(v):
    """A number of flashdemo's JSON (it writes inf and nan as strings), or None."""
    return None if v is None else float(v)


# ----------------------------------------------------------------------------- output

def case_label(c):
    align = {"top-left": "tl", "bottom-right": "br"}[c["align"]] if c["causal"] else "--"
    return (f"{c['impl']:<8} {c['dtype']:<4} det={c['deterministic']} causal={c['causal']} "
            f"{align} n={c['n']:<5} m={c['m']:<5} d={c['d']:<3}").rstrip()


def grade_text(g, verbose):
    verdict = {True: "PASS", False: "FAIL", None: "n/a "}[g["pass"]]
    text = f"{g['ratio']:6.3f} {verdict}"
    if verbose:
        ours = "-" if g["err_ours"] is None else f"{g['err_ours']:.2e}"
        pt = "-" if g["err_pt"] is None else f"{g['err_pt']:.2e}"
        text += f" [{ours} / {pt}]"
    return text


def case_line(c, verbose):
    head = f"{case_label(c):<58}"
    if c.get("error"):
        return f"{head} | flashdemo error: {c['error']}"
    parts = [f"{LABEL[n]} {grade_text(c['grades'][n], verbose)}" for n in GRADS]
    line = f"{head} | " + "   ".join(parts)
    if c.get("pt_error"):
        line += f"   (no PyTorch result: {c['pt_error'][:160]})"
    if c["source"] != "files":
        line += "   (flashdemo's own verdict failed: errors from its --json result)"
    return line


def summarize(cases):
    """Counts, and the worst ratio of each gradient per (impl, dtype)."""
    judged = [c for c in cases if not c.get("error") and c.get("grades")
              and all(c["grades"][n]["pass"] is not None for n in GRADS)]
    groups = {}
    for c in judged:
        g = groups.setdefault(f"{c['impl']} {c['dtype']}", {"cases": 0, "pass": 0, "worst": {}})
        g["cases"] += 1
        g["pass"] += all(c["grades"][n]["pass"] for n in GRADS)
        for n in GRADS:
            r = c["grades"][n]["ratio"]
            best = g["worst"].get(n)
            if best is None or not r <= best["ratio"]:
                g["worst"][n] = {"ratio": r, "case": case_label(c)}
    return {"cases": len(cases), "judged": len(judged),
            "pass": sum(g["pass"] for g in groups.values()),
            "no_pt": sum(1 for c in cases if c.get("pt_error") and not c.get("error")),
            "flashdemo_errors": sum(1 for c in cases if c.get("error")),
            "groups": groups}


def print_summary(s, a):
    print(f"\nsummary: {s['pass']} of {s['judged']} judged cases pass "
          f"(err_ours <= {a.factor:g} err_pt + {a.atol:g} for dQ, dK and dV); "
          f"{s['cases']} cases, {s['no_pt']} without a PyTorch result, "
          f"{s['flashdemo_errors']} flashdemo errors")
    for key, g in s["groups"].items():
        print(f"  {key}: {g['pass']}/{g['cases']} pass; worst err_ours/err_pt:")
        for n in GRADS:
            w = g["worst"][n]
            print(f"    {LABEL[n]} {w['ratio']:6.3f}   {w['case']}")


def plain(v):
    """JSON without NaN or Infinity literals: those become the strings flashdemo writes."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def write_json(path, meta, cases, summary):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(plain({"meta": meta, "cases": cases, "summary": summary}), f, indent=1)
    os.replace(tmp, path)


def describe(a, argv):
    meta = {"argv": argv, "torch": torch.__version__, "device": a.device,
            "pt_backend": a.pt_backend, "factor": a.factor, "atol": a.atol, "seed": a.seed}
    if a.device == "cuda":
        meta["gpu"] = torch.cuda.get_device_name()
    try:
        meta["flashdemo"] = subprocess.run([a.flashdemo, "--version"], capture_output=True,
                                           text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        meta["flashdemo"] = f"cannot run: {e}"
    return meta


# ----------------------------------------------------------------------------- main

def cases_of_shape(a, n, m, d, folder, on_case):
    """Every case of one shape: inputs drawn once, G_ref and G_pt once per dtype and mask."""
    drawn = draw_inputs(n, m, d, a.batch, a.heads, a.seed)
    scale = 1.0 / math.sqrt(d)
    one_head = a.batch == 1 and a.heads == 1
    masks = [(0, "top-left")] if 0 in a.causal else []
    masks += [(1, al) for al in a.align] if 1 in a.causal else []
    for dtype in a.dtype:
        x = round_inputs(drawn, dtype)
        paths = save_inputs(x, dtype, folder, one_head)
        for causal, align in masks:
            allowed = allowed_keys(n, m, causal, align, a.device)
            ref = reference(x, scale, allowed, a.device)
            pt = pt_side(x, dtype, scale, causal, align, allowed, a.pt_backend, a.device)
            for impl in a.impl:
                for det in a.deterministic:
                    c = {"impl": impl, "dtype": dtype, "deterministic": det, "causal": causal,
                         "align": align if causal else None, "n": n, "m": m, "d": d,
                         "b": a.batch, "h": a.heads, "seed": shape_seed(a.seed, n, m, d),
                         "pt": pt.get("used"), "pt_error": pt.get("error")}
                    run = run_flashdemo(a, impl, dtype, det, causal, align, paths, folder)
                    c["flashdemo"] = {"cmd": run["cmd"], "rc": run["rc"],
                                      "result": run["result"]}
                    if not run["error"] and run["arrays"]:
                        differ = same_inputs(run, paths)
                        if differ:
                            run["error"] = ("flashdemo used other values for "
                                            + ", ".join(differ))
                    if run["error"]:
                        c["error"] = run["error"]
                    else:
                        c["grades"], c["source"] = case_grades(ref, pt, run, a)
                    on_case(c)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    meta = describe(a, argv)
    pt_note = "naive attention" if a.pt_backend == "naive" or not has_sdpa() else \
        f"SDPA ({a.pt_backend})"
    print(f"torch {torch.__version__} on {meta.get('gpu', 'cpu')}; {meta['flashdemo']}; "
          f"PyTorch side: {pt_note}; rule err_ours <= {a.factor:g} err_pt + {a.atol:g}; "
          f"columns: err_ours/err_pt", flush=True)
    cases = []

    def on_case(c):
        cases.append(c)
        print(case_line(c, a.verbose), flush=True)
        if a.out:  # after every case: a run cut short keeps what it measured
            write_json(a.out, meta, cases, summarize(cases))

    with contextlib.ExitStack() as stack:
        folder = a.workdir or stack.enter_context(tempfile.TemporaryDirectory(prefix="fa_rule_"))
        os.makedirs(folder, exist_ok=True)
        for n, m, d in a.shapes:
            cases_of_shape(a, n, m, d, folder, on_case)
    summary = summarize(cases)
    print_summary(summary, a)
    if a.out:
        write_json(a.out, meta, cases, summary)
        print(f"wrote {a.out}")
    return 1 if summary["flashdemo_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
