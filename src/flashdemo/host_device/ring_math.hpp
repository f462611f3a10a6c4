// ring_math.hpp — the arithmetic of one row in one ring step (ring.hpp), written once for the CPU
// ring (ring.cpp) and the GPU ring (src/cuda/at_scale/ring.cuh): FD_HOST_DEVICE functions on the
// tile math (tile_math.hpp, online_softmax.hpp), so that both rings compute the same numbers the
// same way.
//
// Forward, row q, at the end of a step whose keys left the online state (m, l) and the
// unnormalized output row O_s (score_row, update_row over the step's key tiles):
//   O_s = O_s / l,  L_s = m + log l                                      (finalize_row)
//   L'  = logsumexp(L, L_s) = M + log(exp(L - M) + exp(L_s - M)),  M = max(L, L_s)
//   O'  = exp(L - L') O + exp(L_s - L') O_s                              (fold_part: merge_lse,
//                                                                         split_weight)
// A part that saw no key has L_s = -inf and weight 0; a row that saw none keeps O = 0, L = -inf.
// The row's first part that saw a key is taken whole, (O, L, L_lo) = (O_s, L_s, its rounding
// error), and a part that saw none changes nothing, L_lo included: a row whose keys all lie in one
// part ends with L to twice the working precision, as the tiled forward's (fold_row; only a merge
// of two parts that both saw keys rounds L, by what the rule admits for merges, correctness.md).
// Backward, row q and a key k it sees, with the forward's L (and its rounding error L_lo) and
// D_q = rowsum(dO_q * O_q):
//   P_qk = exp(S_qk - L_q),  dP_qk = <dO_q, V_k>,  dS_qk = P_qk (dP_qk - D_q)   (pair_grad)
// P and dS come back rounded to p_in, the precision they enter the products dV += P dO,
// dQ += dS K, dK += dS Q in (bf16 or fp16 on the GPU; fp32 and fp64: unchanged).
#pragma once

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/host_device/tile_math.hpp"

namespace fd {

// (O, L) <- the merge of (O, L) and (O_s, L_s), both normalized parts of one row of d values;
// returns L' with its rounding error. The same sums, in the same order, as merge_splits of the two.
template <class T>
FD_HOST_DEVICE SplitL<T> fold_part(T* O, T L, const T* O_s, T L_s, index_t d) {
  const T parts[2] = {L, L_s};
  const SplitL<T> merged = merge_lse(parts, 2, 1).finalize_split();  // L' = logsumexp(L, L_s)
  const T w = split_weight(L, merged.L), w_s = split_weight(L_s, merged.L);
  for (index_t x = 0; x < d; ++x) {  // O' = exp(L - L') O + exp(L_s - L') O_s, as merge_splits
    const T o = w == T(0) ? T(0) : fmul(w, O[x]);
    O[x] = w_s == T(0) ? o : fmadd(w_s, O_s[x], o);
  }
  return merged;
}

// The end of a row's step: its part (O_s / l, m + log l) folded into the running (O, L, L_lo).
// Where one of the two saw no key, the other is the result as it is (the fold would give the same
// O and L, bit for bit, but drop the part's L_lo: recomputed P = exp(S - L) then carries L's
// rounding, u |L| of each P, 1e-5 of dV at scale 10 in fp32).
template <class T>
FD_HOST_DEVICE void fold_row(const RowState<T>& st, T* O_s, T* O, T& L, T& L_lo, index_t d) {
  const SplitL<T> L_s = finalize_row(st, O_s, d);  // O_s = O_s / l, L_s = m + log l
  if (is_neg_inf(L_s.L)) return;                   // no key in this part: nothing to fold
  if (is_neg_inf(L)) {                             // the row's first part that saw a key
    for (index_t x = 0; x < d; ++x) O[x] = O_s[x];
    L = L_s.L, L_lo = L_s.lo;
    return;
  }
  const SplitL<T> merged = fold_part(O, L, O_s, L_s.L, d);
  L = merged.L, L_lo = merged.lo;
}

// P and dS of one (row, key) pair from its score s (scale <Q_q, K_k>, or -inf where masked).
template <class T>
struct PairGrad {
  T p, ds;
};

template <class T>
FD_HOST_DEVICE PairGrad<T> pair_grad(T s, const T* do_row, const T* v_row, index_t d, T L, T L_lo,
                                     T D, Precision p_in = Precision::fp32) {
  const T p = recompute_p(s, L, L_lo);                                 // P = exp(S - L)
  const T dp = dot(do_row, v_row, d);                                  // dP = <dO_q, V_k>
  return {round_to(p_in, p), round_to(p_in, softmax_grad(p, dp, D))};  // dS = P (dP - D)
}

}  // namespace fd
