// verify.cpp — sampled-row verification of large runs (see verify.hpp).
#include "flashdemo/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "flashdemo/compare.hpp"
#include "flashdemo/online_softmax.hpp"

namespace fd {
namespace {

std::vector<index_t> sample(index_t count, index_t samples) {
  std::vector<index_t> rows;
  const index_t stride = count > samples ? count / samples : 1;
  for (index_t r = 0; r < count; r += stride) rows.push_back(r);
  if (rows.back() != count - 1) rows.push_back(count - 1);
  return rows;
}

// Row q of P in precision A, from scratch: S row, max, exp, sum.
template <class A, class T>
std::vector<A> p_row(const HeadArrays<T>& h, const AttnParams& params, index_t q, A* L) {
  const Mask mask = params.mask_for(h.n, h.m);
  const A scale = A(params.scale_for(h.d));
  std::vector<A> s(h.m);
  A mx = neg_inf<A>();
  for (index_t k = 0; k < h.m; ++k) {
    A dot = 0;
    for (index_t x = 0; x < h.d; ++x) dot += A(h.Q[q * h.d + x]) * A(h.K[k * h.d + x]);
    s[k] = mask.masked(q, k) ? neg_inf<A>() : scale * dot;
    mx = fmax2(mx, s[k]);
  }
  A sum = 0;
  for (A& v : s) sum += (v = shifted_exp(v, mx));
  for (A& v : s) v = sum > 0 ? v / sum : A(0);
  *L = sum > 0 ? mx + std::log(sum) : neg_inf<A>();
  return s;
}

// O_q, L_q, dQ_q in precision A.
template <class A, class T>
std::vector<A> query_row(const HeadArrays<T>& h, const AttnParams& params, index_t q) {
  A L;
  const std::vector<A> p = p_row<A>(h, params, q, &L);
  std::vector<A> out(std::size_t(2 * h.d + 1), A(0));  // O (d), L, dQ (d)
  for (index_t k = 0; k < h.m; ++k)
    for (index_t x = 0; x < h.d; ++x) out[x] += p[k] * A(h.V[k * h.d + x]);
  out[h.d] = L;
  if (!h.dO) return out;
  A D = 0;
  for (index_t x = 0; x < h.d; ++x) D += A(h.dO[q * h.d + x]) * out[x];
  const A scale = A(params.scale_for(h.d));
  for (index_t k = 0; k < h.m; ++k) {
    A dp = 0;
    for (index_t x = 0; x < h.d; ++x) dp += A(h.dO[q * h.d + x]) * A(h.V[k * h.d + x]);
    const A ds = p[k] * (dp - D);
    for (index_t x = 0; x < h.d; ++x) out[h.d + 1 + x] += scale * ds * A(h.K[k * h.d + x]);
  }
  return out;
}

// dK_k, dV_k in precision A, with every query's P from the path's own L and D from its O.
template <class A, class T>
std::vector<A> key_row(const HeadArrays<T>& h, const AttnParams& params, index_t k) {
  const Mask mask = params.mask_for(h.n, h.m);
  const A scale = A(params.scale_for(h.d));
  std::vector<A> out(std::size_t(2 * h.d), A(0));  // dK (d), dV (d)
  for (index_t q = 0; q < h.n; ++q) {
    if (mask.masked(q, k)) continue;
    A dot = 0, dp = 0, D = 0;
    for (index_t x = 0; x < h.d; ++x) {
      dot += A(h.Q[q * h.d + x]) * A(h.K[k * h.d + x]);
      dp += A(h.dO[q * h.d + x]) * A(h.V[k * h.d + x]);
      D += A(h.dO[q * h.d + x]) * A(h.O[q * h.d + x]);
    }
    const A p = shifted_exp(scale * dot, A(h.L[q]));
    const A ds = p * (dp - D);
    for (index_t x = 0; x < h.d; ++x) {
      out[x] += scale * ds * A(h.Q[q * h.d + x]);
      out[h.d + x] += p * A(h.dO[q * h.d + x]);
    }
  }
  return out;
}

// The correctness rule per array, over the sampled elements: the path's max error against fp64
// is at most 2x the naive fp32 path's max error + 1e-6 (a double path: 1e-12 of the largest
// reference value). Max against max, as the rule is stated: an element where the naive sum
// happens to round exactly is no bound for the same element summed in another order.
struct Tally {
  struct Array {
    const char* what;
    double err = 0, naive = 0, ref = 0;  // max |got - ref|, max |naive - ref|, max |ref|
  };
  bool fp64 = false;
  std::vector<Array> arrays;
  void add(const char* what, double got, double ref, double naive) {
    auto a = std::find_if(arrays.begin(), arrays.end(),
                          [&](const Array& x) { return std::strcmp(x.what, what) == 0; });
    if (a == arrays.end()) a = arrays.insert(arrays.end(), Array{what});
    a->err = std::max(a->err, abs_error(got, ref));
    a->naive = std::max(a->naive, abs_error(naive, ref));
    if (std::isfinite(ref)) a->ref = std::max(a->ref, std::abs(ref));  // L = -inf: no scale
  }
  // The first failing array in the order checked (O, L, dQ, dK, dV: key rows use the path's own
  // O and L, so a wrong O also moves dK's check); else the array with the largest error.
  Verdict verdict() const {
    Verdict v;
    for (const Array& a : arrays) {
      const double bound = fp64 ? double_bound(a.ref) : two_x_bound(a.naive);
      const Verdict mine{a.err <= bound, a.err, bound, a.what};
      if (!mine.pass) return mine;
      if (v.worst.empty() || mine.err > v.err) v = mine;
    }
    return v;
  }
};

}  // namespace

template <class T>
Verdict verify_sampled(const HeadArrays<T>& h, const AttnParams& params, index_t samples) {
  Tally t;
  t.fp64 = std::is_same_v<T, double>;
  for (index_t q : sample(h.n, samples)) {
    const auto ref = query_row<double>(h, params, q);
    const auto low = query_row<float>(h, params, q);
    for (index_t x = 0; x < h.d; ++x) t.add("O", double(h.O[q * h.d + x]), ref[x], low[x]);
    t.add("L", double(h.L[q]), ref[h.d], low[h.d]);
    if (h.dO)
      for (index_t x = 0; x < h.d; ++x)
        t.add("dQ", double(h.dQ[q * h.d + x]), ref[h.d + 1 + x], low[h.d + 1 + x]);
  }
  if (!h.dO) return t.verdict();
  for (index_t k : sample(h.m, samples)) {
    const auto ref = key_row<double>(h, params, k);
    const auto low = key_row<float>(h, params, k);
    for (index_t x = 0; x < h.d; ++x) {
      t.add("dK", double(h.dK[k * h.d + x]), ref[x], low[x]);
      t.add("dV", double(h.dV[k * h.d + x]), ref[h.d + x], low[h.d + x]);
    }
  }
  return t.verdict();
}

template Verdict verify_sampled(const HeadArrays<float>&, const AttnParams&, index_t);
template Verdict verify_sampled(const HeadArrays<double>&, const AttnParams&, index_t);

}  // namespace fd
