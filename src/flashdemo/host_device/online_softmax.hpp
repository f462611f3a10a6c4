// online_softmax.hpp — the online-softmax state of one row: a running max m and a running sum l.
//
// Reading a row of scores x one block x_B at a time (FlashAttention-2, Algorithm 1):
//   m_new = max(m, max_{i in B} x_i)
//   alpha = exp(m - m_new)                      rescale factor for everything summed so far
//   l     = alpha * l + sum_{i in B} exp(x_i - m_new)
// After the last block softmax(x)_i = exp(x_i - m) / l and logsumexp(x) = L = m + log(l).
// The GPU's base-2 form of the update, and 2^x from fused multiply-adds alone (exp2_fma), below.
// Two states of disjoint parts of the row merge the same way (split-KV, ring attention):
//   m = max(m_a, m_b),  l = exp(m_a - m) * l_a + exp(m_b - m) * l_b.
// S finished parts, each a normalized output row O_s with its logsumexp L_s (split-KV, as
// flash-decoding merges them): a part is the state (m = L_s, l = 1), so the S-way merge is
//   M = max_s L_s,  L = M + log sum_s exp(L_s - M),  O = sum_s exp(L_s - L) O_s
// (merge_splits); a part that saw no key has L_s = -inf and weight 0, and when no part saw one,
// O = 0 and L = -inf.
// Start: m = -inf, l = 0. A block whose entries are all -inf (fully masked) leaves the state
// unchanged; a row that never saw a finite entry finalizes to L = -inf.
// The saved L is also kept to twice T's precision, as L + L_lo (TwoSum: L = fl(m + log l), L_lo
// its rounding error, exactly): at large scores |L| >> 1 and rounding L alone would cost ulp(L) on
// every P = exp(S - L) the backward recomputes, an error the materializing softmax never makes.
#pragma once

#include <type_traits>

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/precision.hpp"  // float_bits, bits_float

namespace fd {

// exp(m_old - m_new), taken as 0 when m_old is -inf: nothing was summed yet, and
// (-inf) - (-inf) would be NaN.
template <class T>
FD_HOST_DEVICE T rescale_factor(T m_old, T m_new) {
  return is_neg_inf(m_old) ? T(0) : fexp(m_old - m_new);
}

// exp(x - m) with the same guard: when m is -inf every x of the row is -inf and p = 0.
template <class T>
FD_HOST_DEVICE T shifted_exp(T x, T m) {
  return is_neg_inf(m) ? T(0) : fexp(x - m);
}

// The GPU rungs above the teaching kernel keep the state in base 2: with log2(e) folded into the
// scale, x2 = x log2(e), m2 = m log2(e) and exp(x - m) = exp2(x2 - m2), one ex2 per score. The
// same update with the same guards, for a row whose new max m2_new = max(m2_old, block max):
//   alpha = 1 when m2_new is -inf (nothing finite seen yet: the state stays as it is),
//           0 when only m2_old is -inf, exp2(m2_old - m2_new) otherwise;
//   p = exp2(x2 - shift) with shift = m2_new, or 0 when m2_new is -inf (so p = exp2(-inf) = 0).
FD_HOST_DEVICE float rescale_factor2(float m2_old, float m2_new) {
  return is_neg_inf(m2_new) ? 1.0f : is_neg_inf(m2_old) ? 0.0f : ::exp2f(m2_old - m2_new);
}
FD_HOST_DEVICE float exp2_shift(float m2) {
  return is_neg_inf(m2) ? 0.0f : m2;
}
// 2^x with no special-function unit: adds, fused multiply-adds and integer steps only, for the
// share of a GPU softmax's exponentials that hopper's steps fwd_exp_fma8 and fwd_exp_fma4 move off
// that unit where it is the bottleneck (d = 64: as many ex2 a tile as the tensor cores' time
// allows):
//   j = rint(x)    by the round-to-nearest of x + 1.5 2^23, which leaves j in the sum's low bits
//   f = x - j      exact, in [-1/2, 1/2]
//   2^f            a degree-4 polynomial (relative error 2.6e-6 on [-1/2, 1/2]; coefficients by
//                  the Remez exchange, rounded to float)
//   2^j 2^f        j added to the exponent field of 2^f (j, shifted up 23 bits from the sum's bits)
// x below -126 gives 0 (the range of no normal float; a masked score, -inf, gives exactly 0), as
// the GPU's ex2.approx.ftz does, whatever the steps above made of it; NaN stays NaN (the integer
// add would make it a finite number). Unlike ex2: 2^0 is c0 = 0.99999926, not 1 (the row's max
// then has P = 1 - 7e-7, 1 in bf16), 2^-126 comes out as the subnormal just below it, and x from
// 127.5 up is wrong where ex2 gives +inf (the softmax's x = S c - m2 is at most half an ulp of m2
// above 0).
// Within 2.7e-6 of 2^x, relatively, over every float of [-126, 0] (measured; the test,
// tests/host_device/test_online_softmax.cpp, checks 4e-6 at every 997th): ex2.approx's own error
// is about 2^-22, and P is rounded to bf16 (2^-9) or fp16 (2^-12) before O += P V.
FD_HOST_DEVICE float exp2_fma(float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 2^23
  constexpr float c0 = 0.99999926f, c1 = 0.69312181f, c2 = 0.24024745f, c3 = 0.055917860f,
                  c4 = 0.0095701019f;
  const float t = x + kRound;
  const float j = t - kRound;
  const float f = x - j;
  const float p = fmadd(fmadd(fmadd(fmadd(c4, f, c3), f, c2), f, c1), f, c0);
  const float r = bits_float(float_bits(p) + (float_bits(t) << 23));
  return x < -126.0f ? 0.0f : x != x ? x : r;
}

// L = m + log(l) from the base-2 state: m2 ln(2) + log(l), -inf for a row that saw nothing.
FD_HOST_DEVICE float finalize2(float m2, float l) {
  return l > 0.0f ? m2 * 0.69314718055994531f + ::logf(l) : neg_inf<float>();
}

// L = m + log(l) as an unevaluated sum L + lo of two T.
template <class T>
struct SplitL {
  T L = neg_inf<T>();  // fl(m + log l): the logsumexp, as saved
  T lo = T(0);         // (m + log l) - L, exactly
};

// a + b = s + e exactly, s = fl(a + b) (Knuth's TwoSum: six additions, no branch).
template <class T>
FD_HOST_DEVICE SplitL<T> two_sum(T a, T b) {
  const T s = a + b;
  const T bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

template <class T>
struct RowState {
  T m = neg_inf<T>();  // running max of the scores seen so far
  T l = T(0);          // running sum of exp(score - m)

  // Moves the reference point from m to m_new >= m; returns alpha = exp(m - m_new), the factor
  // the caller must also apply to anything else accumulated against m (the output row O_i).
  FD_HOST_DEVICE T rescale(T m_new) {
    const T alpha = rescale_factor(m, m_new);
    l = alpha * l;
    m = m_new;
    return alpha;
  }

  // Folds in a block x[0..count). On return x[k] holds p_k = exp(x_k - m_new), the unnormalized
  // probabilities the caller multiplies into V. Returns alpha.
  FD_HOST_DEVICE T update(T* x, index_t count) {
    T block_max = neg_inf<T>();
    for (index_t k = 0; k < count; ++k) block_max = fmax2(block_max, x[k]);
    if (is_neg_inf(block_max)) {  // fully masked block: contributes nothing
      for (index_t k = 0; k < count; ++k) x[k] = T(0);
      return T(1);
    }
    const T alpha = rescale(fmax2(m, block_max));  // m_new = max(m, rowmax(x))
    T sum = T(0);
    for (index_t k = 0; k < count; ++k) {
      x[k] = fexp(x[k] - m);  // p = exp(x - m_new); m is finite here
      sum += x[k];
    }
    l += sum;  // l = alpha * l + rowsum(p)
    return alpha;
  }

  // L = m + log(l): the logsumexp of everything seen; -inf for a row that saw nothing.
  FD_HOST_DEVICE T finalize() const { return l > T(0) ? m + flog(l) : neg_inf<T>(); }

  // The same L with its rounding error (L equals finalize()); lo = 0 for a row that saw nothing.
  FD_HOST_DEVICE SplitL<T> finalize_split() const {
    return l > T(0) ? two_sum(m, flog(l)) : SplitL<T>{};
  }
};

// The state of the concatenation of two disjoint parts of a row; order does not matter.
template <class T>
FD_HOST_DEVICE RowState<T> merge(const RowState<T>& a, const RowState<T>& b) {
  const T m = fmax2(a.m, b.m);
  RowState<T> out;
  out.m = m;
  out.l = rescale_factor(a.m, m) * a.l + rescale_factor(b.m, m) * b.l;
  return out;
}

// The state of `count` finished parts of a row from their logsumexps L_s = L[s * stride]:
// m = max_s L_s, l = sum_s exp(L_s - m) (each part is the state (L_s, 1); the merge above with one
// common maximum, taken first). finalize() of it is L = logsumexp_s L_s, -inf when every L_s is.
// L is a const T* or anything read like one (L[i], L + i): the GPU decode passes a pointer whose
// reads bypass the SM's L1 (other blocks wrote the parts during the same launch).
template <class In>
FD_HOST_DEVICE auto merge_lse(In L, index_t count, index_t stride) {
  using T = std::decay_t<decltype(L[0])>;
  RowState<T> out;
  for (index_t s = 0; s < count; ++s) out.m = fmax2(out.m, L[s * stride]);
  for (index_t s = 0; s < count; ++s) out.l += rescale_factor(L[s * stride], out.m);
  return out;
}

// The weight of part s in the merged row: exp(L_s - L), 0 for a part that saw no key (and so for
// every part when L = -inf).
template <class T>
FD_HOST_DEVICE T split_weight(T L_s, T L) {
  return rescale_factor(L_s, L);
}

// o[0..d) = sum_s exp(L_s - L) O_s over the parts s = 0 .. count - 1, in that order (one fused
// multiply-add per term), O_s = O + s * ldo (d values), L_s = L[s * ldl]; returns L. The result
// depends on the order of the parts only, never on who computed them. O and L: const T* or read
// like one (merge_lse). kInFlight parts are read before any of them is added (the same sums in the
// same order): the GPU's merge reads its parts from L2, an L2 latency per round of reads in the
// kernel's last block (decode.cuh: 16 a round, measured 1.01x two a round).
template <int kInFlight = 1, class T, class InO, class InL>
FD_HOST_DEVICE T merge_splits(InO O, index_t ldo, InL L, index_t ldl, index_t count, index_t d,
                              T* o) {
  const T L_all = merge_lse(L, count, ldl).finalize();
  for (index_t x = 0; x < d; ++x) o[x] = T(0);
  for (index_t s0 = 0; s0 < count; s0 += kInFlight) {
    T w[kInFlight];
    FD_UNROLL
    for (int k = 0; k < kInFlight; ++k)
      w[k] = s0 + k < count ? split_weight(T(L[(s0 + k) * ldl]), L_all) : T(0);
    for (index_t x = 0; x < d; ++x) {
      T v[kInFlight];  // a part with weight 0 (no key seen, or too small to count) is never read
      FD_UNROLL
      for (int k = 0; k < kInFlight; ++k) v[k] = w[k] == T(0) ? T(0) : T((O + (s0 + k) * ldo)[x]);
      FD_UNROLL
      for (int k = 0; k < kInFlight; ++k)
        if (w[k] != T(0)) o[x] = fmadd(w[k], v[k], o[x]);
    }
  }
  return L_all;
}

}  // namespace fd
