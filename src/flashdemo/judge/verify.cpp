// verify.cpp — sampled-row verification of large runs (see verify.hpp).
#include "flashdemo/judge/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/reference/reference.hpp"

namespace fd {
namespace {

std::vector<index_t> sample(index_t count, index_t samples) {
  std::vector<index_t> rows;
  const index_t stride = count > samples ? count / samples : 1;
  for (index_t r = 0; r < count; r += stride) rows.push_back(r);
  if (rows.back() != count - 1) rows.push_back(count - 1);
  return rows;
}

// <Q_q, K_k> in precision A.
template <class A, class T>
A dot_row(const T* Q, const T* K, index_t q, index_t k, index_t d) {
  A sum = 0;
  for (index_t x = 0; x < d; ++x) sum += A(Q[q * d + x]) * A(K[k * d + x]);
  return sum;
}

// Row q of P in precision A, from scratch: S row, max, exp, sum. Sets L and the row max m.
template <class A, class T>
std::vector<A> p_row(const HeadArrays<T>& h, const AttnParams& params, index_t q, A* L, A* m,
                     Precision stored) {
  const Mask mask = params.mask_for(h.n, h.m);
  const A scale = A(params.scale_for(h.d));
  std::vector<A> s(h.m);
  A mx = neg_inf<A>();
  for (index_t k = 0; k < h.m; ++k) {
    s[k] = mask.masked(q, k) ? neg_inf<A>()
                             : round_to(stored, fmul(scale, dot_row<A>(h.Q, h.K, q, k, h.d)));
    mx = fmax2(mx, s[k]);
  }
  A sum = 0;
  for (A& v : s) sum += (v = shifted_exp(v, mx));
  for (A& v : s) v = round_to(stored, sum > 0 ? v / sum : A(0));
  *L = sum > 0 ? mx + flog(sum) : neg_inf<A>();
  *m = mx;
  return s;
}

// O_q, L_q, dQ_q in precision A, from scratch (the materializing formulas, row by row), then
// the magnitudes of their terms (reference.hpp: Magnitudes): values [O (d), L, dQ (d)], then the
// same for the magnitudes.
template <class A, class T>
std::vector<A> query_row(const HeadArrays<T>& h, const AttnParams& params, index_t q,
                         Precision stored) {
  A L, m;
  const std::vector<A> p = p_row<A>(h, params, q, &L, &m, stored);
  const std::size_t w = std::size_t(2 * h.d + 1);
  std::vector<A> out(2 * w, A(0));  // values, magnitudes
  for (index_t k = 0; k < h.m; ++k) {
    for (index_t x = 0; x < h.d; ++x) {
      out[x] += p[k] * A(h.V[k * h.d + x]);
      out[w + x] += p[k] * std::abs(A(h.V[k * h.d + x]));  // R(O) = P |V|
    }
  }
  for (index_t x = 0; x < h.d; ++x) out[x] = round_to(stored, out[x]);
  out[h.d] = L;
  out[w + h.d] = is_neg_inf(L) ? A(0) : fmax2(std::abs(L), std::abs(m));  // R(L)
  if (!h.dO) return out;
  std::vector<A> dp(std::size_t(h.m), A(0)), adp(dp.size(), A(0));
  A D = 0, Dabs = 0;  // D = rowsum(P * dP), as the materializing backward forms it
  for (index_t k = 0; k < h.m; ++k) {
    for (index_t x = 0; x < h.d; ++x) {
      dp[k] += A(h.dO[q * h.d + x]) * A(h.V[k * h.d + x]);
      adp[k] += std::abs(A(h.dO[q * h.d + x]) * A(h.V[k * h.d + x]));
    }
    dp[k] = round_to(stored, dp[k]);
    D += p[k] * dp[k], Dabs += p[k] * adp[k];
  }
  const A scale = A(params.scale_for(h.d));
  for (index_t k = 0; k < h.m; ++k) {
    const A ds = round_to(stored, p[k] * (dp[k] - D)), ads = p[k] * (adp[k] + Dabs);
    for (index_t x = 0; x < h.d; ++x) {
      out[h.d + 1 + x] += scale * ds * A(h.K[k * h.d + x]);
      out[w + h.d + 1 + x] += scale * ads * std::abs(A(h.K[k * h.d + x]));  // R(dQ)
    }
  }
  for (index_t x = 0; x < h.d; ++x) out[h.d + 1 + x] = round_to(stored, out[h.d + 1 + x]);
  return out;
}

// dK_k, dV_k in precision A, with every query's P from the path's own L and D from its O; then
// their magnitudes, R(D) bounded below by |dO_q| . |O_q| (the full rowsum(P |dO| |V|^T) would
// need every key of every row). Values [dK (d), dV (d)], then the magnitudes.
template <class A, class T>
std::vector<A> key_row(const HeadArrays<T>& h, const AttnParams& params, index_t k,
                       Precision stored) {
  const Mask mask = params.mask_for(h.n, h.m);
  const A scale = A(params.scale_for(h.d));
  const std::size_t w = std::size_t(2 * h.d);
  std::vector<A> out(2 * w, A(0));
  for (index_t q = 0; q < h.n; ++q) {
    if (mask.masked(q, k)) continue;
    A dp = 0, D = 0, adp = 0, aD = 0;
    for (index_t x = 0; x < h.d; ++x) {
      const A o = A(h.dO[q * h.d + x]);
      dp += o * A(h.V[k * h.d + x]), adp += std::abs(o * A(h.V[k * h.d + x]));
      D += o * A(h.O[q * h.d + x]), aD += std::abs(o * A(h.O[q * h.d + x]));
    }
    const A s = round_to(stored, fmul(scale, dot_row<A>(h.Q, h.K, q, k, h.d)));
    const A p = round_to(stored, shifted_exp(s, A(h.L[q]) + (h.L_lo ? A(h.L_lo[q]) : A(0))));
    dp = round_to(stored, dp);
    const A ds = round_to(stored, p * (dp - D)), ads = p * (adp + aD);
    for (index_t x = 0; x < h.d; ++x) {
      out[x] += scale * ds * A(h.Q[q * h.d + x]);
      out[h.d + x] += p * A(h.dO[q * h.d + x]);
      out[w + x] += scale * ads * std::abs(A(h.Q[q * h.d + x]));  // R(dK)
      out[w + h.d + x] += p * std::abs(A(h.dO[q * h.d + x]));     // R(dV)
    }
  }
  for (std::size_t x = 0; x < w; ++x) out[x] = round_to(stored, out[x]);
  return out;
}

// The correctness rule per array, over the sampled elements (compare.hpp): the path's max error
// against the wider reference is at most 2x the naive path's max error in the same precision
// plus the floor. Max against max, as the rule is stated: an element where the naive sum happens
// to round exactly is no bound for the same element summed in another order.
struct Tally {
  struct Array {
    const char* what;
    double err = 0, naive = 0, R = 0;  // max |got - ref|, max |naive - ref|, max magnitude
    double largest = 0;                // max finite |ref|: the storage tolerance (compare.hpp)
  };
  Precision p = Precision::fp32;
  std::vector<Array> arrays;
  template <class W, class T>
  void add(const char* what, T got, W ref, T naive, W R) {
    auto a = std::find_if(arrays.begin(), arrays.end(),
                          [&](const Array& x) { return std::strcmp(x.what, what) == 0; });
    if (a == arrays.end()) a = arrays.insert(arrays.end(), Array{what});
    a->err = std::max(a->err, abs_error(W(got), ref));
    a->naive = std::max(a->naive, abs_error(W(naive), ref));
    a->R = std::max(a->R, double(R));
    if (std::isfinite(double(ref))) a->largest = std::max(a->largest, std::fabs(double(ref)));
  }
  // The first failing array in the order checked (O, L, dQ, dK, dV: key rows use the path's own
  // O and L, so a wrong O also moves dK's check); else the array with the largest error.
  Verdict verdict() const {
    Verdict v;
    for (const Array& a : arrays) {
      const bool held_in_p = std::strcmp(a.what, "L") != 0;  // L: fp32 on every path
      const RuleVerdict r =
          apply_rule(p, a.err, a.naive, a.R, held_in_p ? storage_atol(p, a.largest) : 0);
      const Verdict mine{r.pass(), a.err, r.bound, a.what};
      if (!mine.pass) return mine;
      if (v.worst.empty() || mine.err > v.err) v = mine;
    }
    return v;
  }
};

}  // namespace

template <class T>
Verdict verify_sampled(const HeadArrays<T>& h, const AttnParams& params, index_t samples,
                       Precision stored) {
  using W = wider_t<T>;  // the reference; the naive rows are computed in T itself
  const bool low = stored == Precision::bf16 || stored == Precision::fp16;
  const Precision exact = Precision::fp64;  // round_to leaves values alone: the reference
  Tally t;
  t.p = low ? stored : precision_of<T>();
  // The floor's long sums, as floor_magnitudes grows them: over the m keys, over the n queries.
  const LongSums s = long_sums(h.n, h.m);
  const W s_m = W(s.over_keys), s_n = W(s.over_queries), L_floor = W(s.L_floor);
  const std::vector<index_t> rows = sample(h.n, samples);
  for (index_t q : rows) {
    const auto ref = query_row<W>(h, params, q, exact);
    const auto naive = query_row<T>(h, params, q, stored);
    const index_t w = 2 * h.d + 1;  // the magnitudes follow the values
    for (index_t x = 0; x < h.d; ++x)
      t.add("O", h.O[q * h.d + x], ref[x], naive[x], s_m * ref[w + x]);
    t.add("L", h.L[q], ref[h.d], naive[h.d], fmax2(ref[w + h.d], L_floor));
    if (h.dO)
      for (index_t x = 0; x < h.d; ++x)
        t.add("dQ", h.dQ[q * h.d + x], ref[h.d + 1 + x], naive[h.d + 1 + x],
              s_m * ref[w + h.d + 1 + x]);
  }
  for (index_t k : h.dO ? sample(h.m, samples) : std::vector<index_t>{}) {
    const auto ref = key_row<W>(h, params, k, exact);
    const auto naive = key_row<T>(h, params, k, stored);
    const index_t w = 2 * h.d;
    for (index_t x = 0; x < h.d; ++x) {
      t.add("dK", h.dK[k * h.d + x], ref[x], naive[x], s_n * ref[w + x]);
      t.add("dV", h.dV[k * h.d + x], ref[h.d + x], naive[h.d + x], s_n * ref[w + h.d + x]);
    }
  }
  Verdict v = t.verdict();
  v.rows = index_t(rows.size());
  return v;
}

template Verdict verify_sampled(const HeadArrays<float>&, const AttnParams&, index_t, Precision);
template Verdict verify_sampled(const HeadArrays<double>&, const AttnParams&, index_t, Precision);

}  // namespace fd
