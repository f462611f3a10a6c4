// flash_backward.hpp — the FlashAttention-2 backward, written to be read (teaching path).
//
// The forward saved only Q, K, V, O and L (all O(n)). From them and dO:
//   D = rowsum(dO * O)                                   (n; equals rowsum(P * dP))
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
#include "flashdemo/flash_forward.hpp"
#include "flashdemo/trace.hpp"
#include "flashdemo/variant.hpp"

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
// dO: n x d.
// sink, when given, receives a BackwardTileEvent per computed tile and a KeysDoneEvent per key
// tile, in execution order. variant: P and dS rounded to a lower precision before the matmuls,
// or a mistake made on purpose (no-d: D taken as 0; wrong-align: top-left for bottom-right).
template <class T>
BackwardResult<T> flash_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                 const ForwardResult<T>& fwd, const Mat<T>& dO,
                                 const AttnParams& params, TileSizes tiles,
                                 TraceSink* sink = nullptr, Variant variant = {});

}  // namespace fd
