// compare.hpp — error metrics and the correctness rule, one definition for every path.
//
//   err(X)  = max_k |X_k - X_ref_k|, X_ref from the reference in a wider type than the path
//             (double for fp32, bf16, fp16; long double for fp64), the difference taken in that
//             wider type; equal infinities (L = -inf of a row that sees no key) count as 0, NaN
//             and inf against a finite reference as inf.
//   naive   = err of the naive (materializing) implementation run in the path's own precision
//   bound   = 2 * naive + floor
//   floor   = max(f_p, 4 u R', a_p): f_p = 1e-6 below fp64, 2e-15 in fp64 (about eight units in
//             the last place of 1.0 in each), u the unit roundoff of the precision the sums
//             accumulate in (2^-24 for fp32, bf16 and fp16, whose sums are fp32; 2^-53 for fp64),
//             R the largest magnitude of the terms an entry sums (reference.hpp: Magnitudes). u R
//             is the rounding error of any one summation order; two orders' errors differ by about
//             that much whatever their ratio, so where an output cancels (large scores, d = 1) "2x
//             the naive error" alone would fail right answers by chance.
//             a_p (bf16 and fp16 only, arrays held in p or formed from arrays held in p: not L):
//             FlashAttention's own absolute tolerance at its limit, one unit in p's last place at
//             0.3 + max |X_ref| (storage_atol): below it, where an error lands is the luck of the
//             roundings to p, and an array of a few entries gives the naive error as one such
//             draw.
//             R' is R as floor_magnitudes grows it (reference.hpp): over a sum of m keys (n
//             queries for dK, dV) the orders' roundings differ like a random walk, so 4 u R' =
//             max(4, sqrt(m)) u R (for L, max(4 u R, sqrt(m) u)); and a path that merges parts
//             through their logsumexps (split-KV, the ring) adds k u |L| R, each weight
//             exp(L_s - L) carrying about that much rounding that the naive yardstick never makes.
//   verdict = pass        when err <= bound (so X is finite wherever X_ref is, and has exactly
//                         X_ref's infinities, or err would be inf)
//             fail        otherwise
//             no verdict  when naive is not finite: the yardstick itself overflowed in that
//                         precision, so no bound exists there. Never a pass.
#pragma once

#include <vector>

#include <algorithm>

#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/precision.hpp"

namespace fd {

struct MaxError {
  double value = 0;   // max |x - ref|
  index_t index = 0;  // flat index of the worst element
};

// Pointwise |x - ref| in the wider of the two types, with -inf vs -inf (a fully masked row's L)
// counted as 0 and NaN as inf.
template <class W>
double abs_error(W x, W ref) {
  if (x == ref) return 0;
  const W e = x > ref ? x - ref : ref - x;
  return std::isnan(e) ? INFINITY : double(e);
}

template <class A, class B>
MaxError max_abs_error(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref) {
  using W = std::common_type_t<typename A::Scalar, typename B::Scalar>;
  MaxError worst;
  const auto& xd = x.derived();
  const auto& rd = ref.derived();
  for (index_t r = 0; r < xd.rows(); ++r) {
    for (index_t c = 0; c < xd.cols(); ++c) {
      const double e = abs_error(W(xd(r, c)), W(rd(r, c)));
      if (e > worst.value) worst = {e, r * xd.cols() + c};
    }
  }
  return worst;
}

// The largest |ref| over its finite entries (the scale of an array; L = -inf rows left out).
template <class B>
double max_finite_abs(const Eigen::DenseBase<B>& ref) {
  double worst = 0;
  for (index_t k = 0; k < ref.size(); ++k) {
    const double v = double(ref.derived().data()[k]);
    if (std::isfinite(v)) worst = std::fmax(worst, std::abs(v));
  }
  return worst;
}

// For each row of x: has it an entry more than tol from ref (a NaN counts as off)?
template <class A, class B>
std::vector<bool> rows_off(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref,
                           double tol) {
  using W = std::common_type_t<typename A::Scalar, typename B::Scalar>;
  std::vector<bool> off(std::size_t(x.rows()), false);
  for (index_t r = 0; r < x.rows(); ++r)
    for (index_t c = 0; c < x.cols() && !off[std::size_t(r)]; ++c)
      off[std::size_t(r)] = !(abs_error(W(x.derived()(r, c)), W(ref.derived()(r, c))) <= tol);
  return off;
}

// Rows of x with at least one entry more than tol from ref.
template <class A, class B>
index_t rows_above(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref, double tol) {
  const std::vector<bool> off = rows_off(x, ref, tol);
  return index_t(std::count(off.begin(), off.end(), true));
}

// The first row with an entry more than tol from ref; -1 when none.
template <class A, class B>
index_t first_row_above(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref, double tol) {
  using W = std::common_type_t<typename A::Scalar, typename B::Scalar>;
  for (index_t r = 0; r < x.rows(); ++r)
    for (index_t c = 0; c < x.cols(); ++c)
      if (!(abs_error(W(x.derived()(r, c)), W(ref.derived()(r, c))) <= tol)) return r;
  return -1;
}

constexpr double kNaiveFactor = 2.0;
constexpr double kAbsSlack = 1e-6;     // below fp64
constexpr double kAbsSlack64 = 2e-15;  // fp64
constexpr double kRoundingUnits = 4;   // the floor's multiple of u R
constexpr double kAtolShift = 0.3;     // FlashAttention's tests: (X_ref + 0.3 - 0.3) - X_ref in p

// The unit roundoff of the precision p's sums accumulate in.
inline double accumulator_unit(Precision p) {
  return p == Precision::fp64 ? 0x1p-53 : 0x1p-24;
}

// a_p of the rule for an array held in p whose largest finite |X_ref| is `largest`: one unit in
// the last place of p at 0.3 + largest, 2^(e - t) for 0.3 + largest in [2^(e-1), 2^e) and t
// significant bits (bf16 8, fp16 11). FlashAttention's tests take twice the largest rounding
// error of X_ref + 0.3 in p over the array's entries, which reaches that unit over an array whose
// entries fill p's grid and is a draw over a few entries, as the naive error is: the limit is
// taken. 0 in fp32 and fp64, and beyond p's range (the naive path overflows there: no verdict).
inline double storage_atol(Precision p, double largest) {
  if (p != Precision::bf16 && p != Precision::fp16) return 0;
  if (!(largest <= largest_finite(p))) return 0;
  const double y = kAtolShift + largest;
  int e = 0;
  std::frexp(y, &e);  // y = f 2^e, f in [0.5, 1)
  return std::ldexp(1.0, e - (p == Precision::bf16 ? 8 : 11));
}

template <class B>
double storage_atol(Precision p, const Eigen::DenseBase<B>& ref) {
  return storage_atol(p, max_finite_abs(ref));
}

// The rule's floor for an array whose terms reach magnitude R (0: the absolute floor alone) and
// whose storage tolerance is atol (storage_atol; 0 for fp32, fp64 and L).
inline double rule_floor(Precision p, double R = 0, double atol = 0) {
  const double absolute = p == Precision::fp64 ? kAbsSlack64 : kAbsSlack;
  return std::fmax(std::fmax(absolute, kRoundingUnits * accumulator_unit(p) * R), atol);
}

// The bound a path in precision p must meet given the naive implementation's error in p.
inline double rule_bound(Precision p, double err_naive, double R = 0, double atol = 0) {
  return kNaiveFactor * err_naive + rule_floor(p, R, atol);
}

enum class Outcome { pass, fail, no_verdict };

struct RuleVerdict {
  Outcome outcome = Outcome::fail;
  double err = 0, naive = 0, bound = 0;  // bound: inf when there is no verdict
  double floor = 0;                      // bound = 2 naive + floor
  bool pass() const { return outcome == Outcome::pass; }
};

// The rule on one array, from its error, the naive error in the same precision, the magnitude R
// of its terms and its storage tolerance (storage_atol).
inline RuleVerdict apply_rule(Precision p, double err, double err_naive, double R = 0,
                              double atol = 0) {
  const double floor = rule_floor(p, R, atol);
  if (!std::isfinite(err_naive) || !std::isfinite(floor))
    return {Outcome::no_verdict, err, err_naive, INFINITY, floor};
  const double bound = kNaiveFactor * err_naive + floor;
  return {err <= bound ? Outcome::pass : Outcome::fail, err, err_naive, bound, floor};
}

// Whether an array is held in the path's precision or formed from arrays held there (O, dQ, dK,
// dV; D from dO), and so judged with the storage tolerance; or not: L, which every path forms from
// scores kept in fp32 (docs/correctness.md, section 2).
enum class Held { in_p, wide };

// The rule on one array of a path in precision p: `got` and the naive path's `naive`, each
// against the wider reference `ref`; R the magnitudes of its terms (empty: none known).
template <class A, class B, class C, class M>
RuleVerdict judge(Precision p, const Eigen::DenseBase<A>& got, const Eigen::DenseBase<B>& ref,
                  const Eigen::DenseBase<C>& naive, const Eigen::DenseBase<M>& R, Held held) {
  return apply_rule(p, max_abs_error(got, ref).value, max_abs_error(naive, ref).value,
                    max_finite_abs(R), held == Held::in_p ? storage_atol(p, ref) : 0);
}

}  // namespace fd
