// reference.hpp — standard attention, materializing S and P: the ground truth for every path.
//
//   S = scale * Q K^T, masked -> -inf        (n x m, stored)
//   P_q = exp(S_q - max S_q) / sum exp(...)  (n x m, stored; a fully masked row is all 0)
//   O = P V,  L_q = max S_q + log(sum_k exp(S_qk - max S_q))
// In a type wider than a path's (wider_t: double for float, long double for double) this is the
// reference of the correctness rule (compare.hpp); in the path's own type it is the "naive
// implementation in the same precision" that the 2x rule measures against. With `stored` bf16
// or fp16 it stores S, P and O in that format (the arithmetic stays in T), as a framework's
// materializing attention does in that precision.
// Every product sums its terms in one fixed order (k ascending, see reference.cpp), so the
// reference prints the same digits on every x86-64 machine, whatever its SIMD width.
#pragma once

#include <cmath>
#include <limits>

#include "flashdemo/attention.hpp"
#include "flashdemo/host_device/precision.hpp"

namespace fd {

// The type a path in T is judged against: wider than T, so that the path's error and the naive
// error in T are both measured, not blurred by the reference's own rounding.
template <class T>
struct wider {
  using type = double;  // float (and bf16, fp16 emulated in float)
};
template <>
struct wider<double> {
  using type = long double;  // x87 extended: a 64-bit significand against double's 53
};
template <class T>
using wider_t = typename wider<T>::type;
static_assert(std::numeric_limits<long double>::digits > std::numeric_limits<double>::digits,
              "the fp64 reference needs a long double wider than double");

template <class T>
struct ReferenceForward : ForwardResult<T> {
  Mat<T> S;  // n x m scores after scale and mask
  Mat<T> P;  // n x m probabilities
};

// Q: n x d, K: m x d, V: m x d.
template <class T>
ReferenceForward<T> reference_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                      const AttnParams& params, Precision stored = Precision::fp64);

// The backward of the same, from the materialized P (analytic gradients):
//   dV = P^T dO,  dP = dO V^T,  D = rowsum(P * dP),  dS = P * (dP - D),
//   dQ = scale * dS K,  dK = scale * dS^T Q.
template <class T>
struct ReferenceBackward {
  Mat<T> dQ, dK, dV;  // n x d, m x d, m x d
  Mat<T> dP, dS;      // n x m
  Vec<T> D;           // n
};

// Q: n x d, K, V: m x d, dO: n x d.
template <class T>
ReferenceBackward<T> reference_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                        const Mat<T>& dO, const AttnParams& params,
                                        Precision stored = Precision::fp64);

// The magnitude of the terms each entry of an output sums (every term by its absolute value):
//   R(O) = P |V|,  R(L)_q = max(|max_k S_qk|, |L_q|),  R(dV) = P^T |dO|,
//   A = |dO| |V|^T,  R(D) = rowsum(P * A),  R(dQ) = scale (P * (A + R(D))) |K|,
//   R(dK) = scale (P * (A + R(D)))^T |Q|.
// u R is the scale of the rounding error any summation order makes in that entry (the first-order
// bound of Higham's "Accuracy and Stability of Numerical Algorithms", 3.1): the part of two
// implementations' errors that cannot be compared, which the correctness rule's floor allows for
// (compare.hpp). dO empty: the forward's only.
template <class T>
struct Magnitudes {
  Mat<T> O, dQ, dK, dV;
  Vec<T> L, D;
};

template <class T>
Magnitudes<T> reference_magnitudes(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                   const Mat<T>& dO, const ReferenceForward<T>& f,
                                   const AttnParams& params);

// How far the floor's 4 u R grows for a sum of `terms` terms: max(1, sqrt(terms) / 4).
// 4 u R covers the rounding of one order of a short sum. A long sum rounds once a term, and
// two orders' roundings are different draws whose difference grows like a random walk, about
// sqrt(terms) u R (the probabilistic bound of Higham and Mary, "A New Approach to Probabilistic
// Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019): past 4 u R beyond 16 terms.
inline double long_sum_scale(index_t terms) {
  return std::fmax(1.0, std::sqrt(double(terms)) / 4);
}

// The long sums' growth for n queries and m keys, one definition for floor_magnitudes and the
// sampled check (verify.hpp): R(O), R(D), R(dQ) times over_keys = long_sum_scale(m), R(dK), R(dV)
// times over_queries = long_sum_scale(n), R(L) at least L_floor = sqrt(m) / 4 (below).
struct LongSums {
  double over_keys, over_queries, L_floor;
};
inline LongSums long_sums(index_t queries, index_t keys) {
  return {long_sum_scale(keys), long_sum_scale(queries), std::sqrt(double(keys)) / 4};
}

// The magnitudes whose 4 u R' is the rule's floor (compare.hpp), from the magnitudes R of the
// terms (reference_magnitudes) of a problem of n queries and m keys, whose path merged each row's
// normalized parts r times through their logsumexps (split-KV decode: one merge of S parts; the
// ring: P parts folded one at a time, P - 1 merges; 0: one pass over the keys).
//   Long sums: O, D and dQ sum over the m keys, s_m = long_sum_scale(m); dK and dV over the n
//   queries, s_n = long_sum_scale(n). (Every key and query counted, masked or not: a causal row
//   sums fewer.) L = log l, l a sum of m positive terms whose relative rounding is about sqrt(m) u,
//   so R(L) is taken at least sqrt(m) / 4. Merges (docs/correctness.md, section 2.1): each weight
//   w_s = exp(L_s - L) is formed from two rounded logsumexps, a relative error of about u (|L_s| +
//   |L|) that the naive (materializing) yardstick never makes. With Lambda_q = R(L)_q + log(m) and
//   k = 2 + r (k = 0 when r = 0: one part, w = 1 exactly), the weights' errors reach at most k u
//   Lambda_q (first order).
// Each adds its rounding to the one order's:
//   R'(O)_q  = R(O)_q  (s_m + k Lambda_q / 4),   R'(L)_q = max(R(L)_q, sqrt(m) / 4)
//                                                           + (k - 1) Lambda_q / 4,
//   R'(D)_q  = R(D)_q  (s_m + k Lambda_q / 4),   R'(dQ)_q = R(dQ)_q (s_m + k Lambda_q / 4),
//   R'(dK)   = R(dK)   (s_n + k Lambda / 4),     R'(dV)   = R(dV)   (s_n + k Lambda / 4),
// Lambda = max_q Lambda_q (the L term only when r > 0). merges: merges_split_kv, merges_ring.
template <class T>
Magnitudes<T> floor_magnitudes(const Magnitudes<T>& R, index_t queries, index_t keys,
                               index_t merges = 0);

// r of split-KV with S splits: one merge of the S parts (none when S = 1).
inline index_t merges_split_kv(index_t splits) {
  return splits > 1 ? 1 : 0;
}

// r of the ring with P ranks: each row folds P parts one at a time, P - 1 rounded merges.
inline index_t merges_ring(index_t ranks) {
  return ranks > 1 ? ranks - 1 : 0;
}

// Bytes the reference needs for S and P: 2 * n * m * sizeof(T) (as a double: it may not fit).
double reference_bytes(index_t n, index_t m, index_t bytes_per_element);

}  // namespace fd
