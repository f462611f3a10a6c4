// flash_forward.hpp — the tiled forward of FlashAttention-2, written to be read (teaching path).
//
// For each query tile Q_i (Br rows):                   O_i = 0, m_i = -inf, l_i = 0
//   for each key tile j = 0, 1, ... (Bc keys), left to right, skipping tiles wholly masked:
//     S_ij  = scale * Q_i K_j^T                        (Br x Bc, never stored beyond the tile)
//     m_new = max(m_i, rowmax(S_ij)),  alpha = exp(m_i - m_new)
//     P_ij  = exp(S_ij - m_new),        l_i = alpha * l_i + rowsum(P_ij)
//     O_i   = alpha * O_i + P_ij V_j,   m_i = m_new
//   O_i = O_i / l_i,  L_i = m_i + log(l_i)             (L is saved for the backward pass, with
//                                                      its rounding error L_lo: online_softmax.hpp)
//   O = round_p(O_i)                                   (in a lower precision p, bf16 or fp16, O is
//                                                      stored rounded, and kept unrounded as O_acc
//                                                      for the backward's D = rowsum(dO * O))
#pragma once

#include <vector>

#include "flashdemo/attention.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/teaching/trace.hpp"
#include "flashdemo/teaching/variant.hpp"

namespace fd {

// Q: n x d, K: m x d, V: m x d -> O: n x d, L: n. Br, Bc >= 1, any n, m >= 1.
// sink, when given, receives a TileEvent per computed tile, a TileSkippedEvent per skipped
// tile and a RowsFinalEvent per query tile, in execution order. variant rounds P to a lower
// precision before P V, or makes one of the lab's mistakes on purpose (variant.hpp).
template <class T>
ForwardResult<T> flash_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                               const AttnParams& params, TileSizes tiles, TraceSink* sink = nullptr,
                               Variant variant = {});

// Row q of P recovered from the saved L: P_qk = exp(S_qk - L_q), the matrix never stored.
template <class T>
std::vector<T> recover_p_row(const Mat<T>& Q, const Mat<T>& K, const ForwardResult<T>& fwd,
                             const AttnParams& params, index_t q);

}  // namespace fd
