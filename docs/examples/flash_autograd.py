# flash_autograd.py — a student's FlashAttention-2 as a torch.autograd.Function, over a batch of
# heads (b, h, n, d) in bf16 with fp32 sums, saved for `flashdemo check` (docs/quickstart.md):
#   forward, per query tile i and key tile j:  S = scale Q_i K_j^T (masked: -inf),
#     m' = max(m, rowmax S),  P = exp(S - m'),  l = e^(m - m') l + rowsum P,
#     O_i = e^(m - m') O_i + P V_j;  at the end O_i = O_i / l,  L_i = m + log l
#   backward, P recomputed from L:  P = exp(S - L_i),  D = rowsum(dO * O),
#     dV_j += P^T dO_i,  dP = dO_i V_j^T,  dS = P (dP - D_i),
#     dQ_i += scale dS K_j,  dK_j += scale dS^T Q_i
# Run: python3 flash_autograd.py [--bug no-dq-scale] (writes q, k, v, do, o, lse, dq, dk, dv .npy)
import argparse
import math

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--bug", choices=["none", "no-dq-scale"], default="none")
args = parser.parse_args()


def visible(i0, j0, rows, cols, causal):
    """The mask of a tile: key j seen by query i when j <= i (top-left alignment)."""
    if not causal:
        return torch.ones(rows, cols, dtype=torch.bool)
    i = torch.arange(i0, i0 + rows)[:, None]
    j = torch.arange(j0, j0 + cols)[None, :]
    return j <= i


class FlashAttention(torch.autograd.Function):
    Br, Bc = 32, 32

    @staticmethod
    def forward(ctx, q, k, v, causal):
        b, h, n, d = q.shape
        m = k.shape[2]
        scale = 1.0 / math.sqrt(d)
        Q, K, V = q.float(), k.float(), v.float()
        O = torch.zeros(b, h, n, d)
        L = torch.empty(b, h, n)
        for i0 in range(0, n, FlashAttention.Br):
            Qi = Q[:, :, i0:i0 + FlashAttention.Br]
            rows = Qi.shape[2]
            mi = torch.full((b, h, rows), -math.inf)
            li = torch.zeros(b, h, rows)
            Oi = torch.zeros(b, h, rows, d)
            for j0 in range(0, m, FlashAttention.Bc):
                if causal and j0 > i0 + rows - 1:
                    break  # every key of the tile is masked
                Kj, Vj = K[:, :, j0:j0 + FlashAttention.Bc], V[:, :, j0:j0 + FlashAttention.Bc]
                S = Qi @ Kj.transpose(-1, -2) * scale
                S = S.masked_fill(~visible(i0, j0, rows, Kj.shape[2], causal), -math.inf)
                m_new = torch.maximum(mi, S.amax(-1))
                P = torch.exp(S - m_new[..., None])
                alpha = torch.exp(mi - m_new)
                li = alpha * li + P.sum(-1)
                Oi = alpha[..., None] * Oi + P @ Vj
                mi = m_new
            O[:, :, i0:i0 + rows] = Oi / li[..., None]
            L[:, :, i0:i0 + rows] = mi + torch.log(li)
        O = O.to(q.dtype)  # stored as the inputs are
        ctx.save_for_backward(Q, K, V, O, L)
        ctx.causal = causal
        return O, L

    @staticmethod
    def backward(ctx, dO, dL):
        Q, K, V, O, L = ctx.saved_tensors
        causal = ctx.causal
        n, d, m = Q.shape[2], Q.shape[3], K.shape[2]
        scale = 1.0 / math.sqrt(d)
        dO = dO.float()
        D = (dO * O.float()).sum(-1)
        dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
        dq_scale = 1.0 if args.bug == "no-dq-scale" else scale
        for j0 in range(0, m, FlashAttention.Bc):
            Kj, Vj = K[:, :, j0:j0 + FlashAttention.Bc], V[:, :, j0:j0 + FlashAttention.Bc]
            for i0 in range(0, n, FlashAttention.Br):
                rows = min(FlashAttention.Br, n - i0)
                if causal and j0 > i0 + rows - 1:
                    continue
                Qi, dOi = Q[:, :, i0:i0 + rows], dO[:, :, i0:i0 + rows]
                S = Qi @ Kj.transpose(-1, -2) * scale
                S = S.masked_fill(~visible(i0, j0, rows, Kj.shape[2], causal), -math.inf)
                P = torch.exp(S - L[:, :, i0:i0 + rows, None])
                dV[:, :, j0:j0 + FlashAttention.Bc] += P.transpose(-1, -2) @ dOi
                dP = dOi @ Vj.transpose(-1, -2)
                dS = P * (dP - D[:, :, i0:i0 + rows, None])
                dQ[:, :, i0:i0 + rows] += dq_scale * dS @ Kj
                dK[:, :, j0:j0 + FlashAttention.Bc] += scale * dS.transpose(-1, -2) @ Qi
        return dQ.to(O.dtype), dK.to(O.dtype), dV.to(O.dtype), None


torch.manual_seed(0)
b, h, n, d = 2, 4, 200, 64
q, k, v = (torch.randn(b, h, n, d).to(torch.bfloat16).requires_grad_() for _ in range(3))
o, lse = FlashAttention.apply(q, k, v, True)
do = torch.randn(b, h, n, d).to(torch.bfloat16)
o.backward(do)


def save(name, t):
    np.save(name, t.detach().float().cpu().numpy())  # NumPy has no bfloat16: widen first


for name, t in [("q", q), ("k", k), ("v", v), ("do", do), ("o", o), ("lse", lse),
                ("dq", q.grad), ("dk", k.grad), ("dv", v.grad)]:
    save(f"{name}.npy", t)
print(f"saved a batch of {b} x {h} heads, n = {n}, d = {d}, bf16 (bug: {args.bug})")
