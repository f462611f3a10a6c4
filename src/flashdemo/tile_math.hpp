// tile_math.hpp — the per-row work of one tile, shared by the CPU teaching path and the kernels.
//
// Forward, for query row q of tile i and key tile j (keys k0 .. k0 + cols):
//   S_ij[c] = scale * <Q_q, K_{k0+c}>, or -inf where the mask hides key k0 + c
//   (m, l) <- online update with S_ij (online_softmax.hpp); P_ij[c] = exp(S_ij[c] - m_new)
//   O_q    = alpha * O_q + sum_c P_ij[c] * V_{k0+c}
// At the end O_q = O_q / l and L_q = m + log(l); a row that saw no key gives O_q = 0, L_q = -inf.
// Backward, with the saved L (FlashAttention-2, Algorithm 2):
//   P = exp(S - L)  (0 where L = -inf)      dS = P * (dP - D)
// Pointers address row-major storage: row r of a matrix X with leading dimension ldx is X + r*ldx.
// K_tile and V_tile point at the tile's first key (global row k0), wherever it lives: the host
// matrices, or a copy staged in a kernel's shared memory; k0 serves the mask only.
#pragma once

#include "flashdemo/host_device.hpp"
#include "flashdemo/mask.hpp"
#include "flashdemo/online_softmax.hpp"
#include "flashdemo/precision.hpp"

namespace fd {

// S_qk = scale * <q_row, k_row>: one score.
template <class T>
FD_HOST_DEVICE T score(const T* q_row, const T* k_row, index_t d, T scale) {
  T dot = T(0);
  for (index_t x = 0; x < d; ++x) dot += q_row[x] * k_row[x];
  return scale * dot;  // S = Q K^T * scale
}

// s[0..cols) = row q of S_ij. q_row: d values; K_tile: keys k0 .. k0 + cols, one per row.
template <class T>
FD_HOST_DEVICE void score_row(const T* q_row, const T* K_tile, index_t ldk, index_t k0,
                              index_t cols, index_t d, T scale, const Mask& mask, index_t q, T* s) {
  for (index_t c = 0; c < cols; ++c) {
    if (mask.masked(q, k0 + c)) {
      s[c] = neg_inf<T>();  // a true -inf: never a finite sentinel
      continue;
    }
    s[c] = score(q_row, K_tile + c * ldk, d, scale);
  }
}

// o[0..d) = alpha * o + sum_c p[c] * V_tile[c]
template <class T>
FD_HOST_DEVICE void accumulate_row(T* o, T alpha, const T* p, const T* V_tile, index_t ldv,
                                   index_t cols, index_t d) {
  for (index_t x = 0; x < d; ++x) o[x] *= alpha;  // O = alpha * O  (rescale to the new max)
  for (index_t c = 0; c < cols; ++c) {
    const T pc = p[c];
    const T* v_row = V_tile + c * ldv;
    for (index_t x = 0; x < d; ++x) o[x] += pc * v_row[x];  // O += P_ij V_j
  }
}

// One row of one tile: updates (m, l) with the scores s (which become P_ij) and the output row o.
// P_ij enters the product with V in precision p_in (bf16 or fp16 in a low-precision kernel);
// l sums it unrounded. Returns alpha = exp(m_old - m_new).
template <class T>
FD_HOST_DEVICE T update_row(RowState<T>& state, T* s, const T* V_tile, index_t ldv, index_t cols,
                            index_t d, T* o, Precision p_in = Precision::fp32) {
  const T alpha = state.update(s, cols);  // m_new, alpha, l; s <- P_ij = exp(S_ij - m_new)
  for (index_t c = 0; c < cols; ++c) s[c] = round_to(p_in, s[c]);  // P_ij as the matmul sees it
  accumulate_row(o, alpha, s, V_tile, ldv, cols, d);
  return alpha;
}

// O_q = O_q / l, returns L_q = m + log(l). A row that saw no key keeps O_q = 0.
template <class T>
FD_HOST_DEVICE T finalize_row(const RowState<T>& state, T* o, index_t d) {
  const T inv_l = state.l > T(0) ? T(1) / state.l : T(0);
  for (index_t x = 0; x < d; ++x) o[x] *= inv_l;
  return state.finalize();
}

// Backward: P = exp(S - L), recomputed from the saved logsumexp instead of stored.
template <class T>
FD_HOST_DEVICE T recompute_p(T s, T L) {
  return shifted_exp(s, L);  // L = -inf only for a fully masked row, where P = 0
}

// Backward of the row softmax: dS = P * (dP - D), D = rowsum(dO * O) = rowsum(P * dP).
template <class T>
FD_HOST_DEVICE T softmax_grad(T p, T dp, T D) {
  return p * (dp - D);
}

// Backward, one query row q against key tile j (keys k0 .. k0 + cols). In the forward pass this
// was: S = scale * Q K^T, P = softmax(S), O = P V. So now we have, with dO_q given:
//   P_qk   = exp(S_qk - L_q)               recomputed, never stored
//   dV_k  += P_qk dO_q                     (dV = P^T dO)
//   dP_qk  = <dO_q, V_k>                   (dP = dO V^T)
//   dS_qk  = P_qk (dP_qk - D_q)            (softmax backward, D_q = rowsum(dO_q * O_q))
//   dQ_q  += scale * dS_qk K_k             (dQ = dS K * scale)
//   dK_k  += scale * dS_qk Q_q             (dK = dS^T Q * scale)
// p and ds receive the row's P_qk and dS_qk (cols values each) for the trace.
template <class T>
struct BackwardRow {
  const T* q_row;                    // Q_q (d)
  const T* do_row;                   // dO_q (d)
  T L, D;                            // saved logsumexp and D of row q
  index_t q;                         // row index
  Precision p_in = Precision::fp32;  // precision of P and dS as matmul inputs
};

template <class T>
FD_HOST_DEVICE void backward_row(const BackwardRow<T>& row, const T* K, const T* V, index_t ld,
                                 index_t k0, index_t cols, index_t d, T scale, const Mask& mask,
                                 T* p, T* ds, T* dq_row, T* dK, T* dV) {
  score_row(row.q_row, K + k0 * ld, ld, k0, cols, d, scale, mask, row.q, p);  // S (masked: -inf)
  for (index_t c = 0; c < cols; ++c) {
    const T pc = recompute_p(p[c], row.L);  // P = exp(S - L)
    const T* v_row = V + (k0 + c) * ld;
    T dp = T(0);
    for (index_t x = 0; x < d; ++x) dp += row.do_row[x] * v_row[x];  // dP = dO V^T
    ds[c] = round_to(row.p_in, softmax_grad(pc, dp, row.D));         // dS = P (dP - D)
    p[c] = round_to(row.p_in, pc);  // P and dS enter the matmuls in precision p_in
    T* dv_row = dV + (k0 + c) * ld;
    T* dk_row = dK + (k0 + c) * ld;
    const T* k_row = K + (k0 + c) * ld;
    const T g = scale * ds[c];
    for (index_t x = 0; x < d; ++x) {
      dv_row[x] += p[c] * row.do_row[x];  // dV += P^T dO
      dq_row[x] += g * k_row[x];          // dQ += dS K * scale
      dk_row[x] += g * row.q_row[x];      // dK += dS^T Q * scale
    }
  }
}

}  // namespace fd
