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

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/precision.hpp"

namespace fd {

// <a, b> = sum_x a_x b_x, x ascending, one fused multiply-add per term: the one order and
// rounding every dot product of every path (and the reference's products) sums in. D = <dO_q, O_q>
// and dP_qk = <dO_q, V_k> both use it, so where P is one-hot (O_q = V_k exactly) dP - D cancels to
// exactly 0, as in the naive backward.
template <class T>
FD_HOST_DEVICE T dot(const T* a, const T* b, index_t d) {
  T sum = T(0);
  for (index_t x = 0; x < d; ++x) sum = fmadd(a[x], b[x], sum);
  return sum;
}

// S_qk = scale * <q_row, k_row>: one score.
template <class T>
FD_HOST_DEVICE T score(const T* q_row, const T* k_row, index_t d, T scale) {
  return fmul(scale, dot(q_row, k_row, d));  // S = Q K^T * scale, rounded as the forward stores it
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
    for (index_t x = 0; x < d; ++x) o[x] = fmadd(pc, v_row[x], o[x]);  // O += P_ij V_j
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

// O_q = O_q / l, returns L_q = m + log(l) (with its rounding error, online_softmax.hpp). A row
// that saw no key keeps O_q = 0.
template <class T>
FD_HOST_DEVICE SplitL<T> finalize_row(const RowState<T>& state, T* o, index_t d) {
  const T inv_l = state.l > T(0) ? T(1) / state.l : T(0);
  for (index_t x = 0; x < d; ++x) o[x] *= inv_l;
  return state.finalize_split();
}

// Backward: P = exp(S - L), recomputed from the saved logsumexp instead of stored; with L's
// rounding error L_lo, (S - L) - L_lo: S - L is exact where P matters (S near L).
template <class T>
FD_HOST_DEVICE T recompute_p(T s, T L, T L_lo = T(0)) {
  return is_neg_inf(L) ? T(0) : fexp((s - L) - L_lo);  // L = -inf: a fully masked row, P = 0
}

// D_q = rowsum(dO_q * O_q) (= rowsum(P_q * dP_q)), summed as dP is (dot above).
template <class T>
FD_HOST_DEVICE T row_D(const T* do_row, const T* o_row, index_t d) {
  return dot(do_row, o_row, d);
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
//   dQ_q  += dS_qk K_k                     (dQ = dS K, times scale once at the end)
//   dK_k  += dS_qk Q_q                     (dK = dS^T Q, likewise)
// p and ds receive the row's P_qk and dS_qk (cols values each) for the trace.
template <class T>
struct BackwardRow {
  const T* q_row;                    // Q_q (d)
  const T* do_row;                   // dO_q (d)
  T L, L_lo, D;                      // saved logsumexp (and its rounding error), D of row q
  index_t q;                         // row index
  Precision p_in = Precision::fp32;  // precision of P and dS as matmul inputs
};

template <class T>
FD_HOST_DEVICE void backward_row(const BackwardRow<T>& row, const T* K, const T* V, index_t ld,
                                 index_t k0, index_t cols, index_t d, T scale, const Mask& mask,
                                 T* p, T* ds, T* dq_row, T* dK, T* dV) {
  score_row(row.q_row, K + k0 * ld, ld, k0, cols, d, scale, mask, row.q, p);  // S (masked: -inf)
  for (index_t c = 0; c < cols; ++c) {
    const T pc = recompute_p(p[c], row.L, row.L_lo);          // P = exp(S - L)
    const T dp = dot(row.do_row, V + (k0 + c) * ld, d);       // dP = dO V^T
    ds[c] = round_to(row.p_in, softmax_grad(pc, dp, row.D));  // dS = P (dP - D)
    p[c] = round_to(row.p_in, pc);  // P and dS enter the matmuls in precision p_in
    T* dv_row = dV + (k0 + c) * ld;
    T* dk_row = dK + (k0 + c) * ld;
    const T* k_row = K + (k0 + c) * ld;
    for (index_t x = 0; x < d; ++x) {
      dv_row[x] = fmadd(p[c], row.do_row[x], dv_row[x]);  // dV += P^T dO
      dq_row[x] = fmadd(ds[c], k_row[x], dq_row[x]);      // dQ += dS K   (scale: at the end)
      dk_row[x] = fmadd(ds[c], row.q_row[x], dk_row[x]);  // dK += dS^T Q (scale: at the end)
    }
  }
}

}  // namespace fd
