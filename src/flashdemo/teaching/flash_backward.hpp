// flash_backward.hpp — the FlashAttention-2 backward, written to be read (teaching path).
//
// The forward saved only Q, K, V, O and L (all O(n)). From them and dO:
//   D = rowsum(dO * O)                                   (n; equals rowsum(P * dP)), O as the
//                                                        forward accumulated it (fp32), not O as
//                                                        stored in bf16 or fp16 (O_acc, below)
//   for each key tile j (outer loop, FlashAttention-2 order):     dK_j = 0, dV_j = 0
//     for each query tile i not wholly masked:
//       S_ij = scale * Q_i K_j^T,  P_ij = exp(S_ij - L_i)      recomputed from L (and L_lo)
//       dV_j += P_ij^T dO_i,       dP_ij = dO_i V_j^T
//       dS_ij = P_ij * (dP_ij - D_i)
//       dQ_i += dS_ij K_j,          dK_j += dS_ij^T Q_i
//   dQ = scale * dQ,  dK = scale * dK                    (the scale rounds once, as in the
//   reference)
// Fully masked rows (L = -inf) get P = 0 and so zero gradients.
#pragma once

#include "flashdemo/attention.hpp"
#include "flashdemo/teaching/flash_forward.hpp"
#include "flashdemo/teaching/trace.hpp"
#include "flashdemo/teaching/variant.hpp"

namespace fd {

template <class T>
struct BackwardResult {
  Mat<T> dQ, dK, dV;  // n x d, m x d, m x d
  Vec<T> D;           // n, rowsum(dO * O)
};

// D = rowsum(dO * O), accumulated in T (fp32 or wider), in the order dP is summed (row_D).
template <class T>
Vec<T> backward_D(const Mat<T>& dO, const Mat<T>& O);

// Q: n x d, K, V: m x d, fwd: O (n x d) and L (n, with L_lo when kept) from flash_forward,
// dO: n x d. D comes from fwd.O_acc when the forward kept it (O rounded to bf16 or fp16), else
// from fwd.O. Why: dS = P (dP - D) cancels D against dP, and where a row of P is nearly one-hot
// (P = 1 - e, e, with e below bf16's 2^-9) the true dP - D is about e |dP|, while O's rounding to
// bf16 (2^-9 |O|, uncorrelated with dP) would put about 2^-9 |dO| |O| into D: the naive backward,
// D = rowsum(P * dP) from the same dP, has no such error (x150 Q, 40 x 16, bf16: dQ 9x the naive
// error with D from O in bf16; docs/correctness.md, section 5).
// sink, when given, receives a BackwardTileEvent per computed tile and a KeysDoneEvent per key
// tile, in execution order. variant: P and dS rounded to a lower precision before the matmuls,
// or a mistake made on purpose (no-d: D taken as 0; wrong-align: top-left for bottom-right).
template <class T>
BackwardResult<T> flash_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                 const ForwardResult<T>& fwd, const Mat<T>& dO,
                                 const AttnParams& params, TileSizes tiles,
                                 TraceSink* sink = nullptr, Variant variant = {});

}  // namespace fd
