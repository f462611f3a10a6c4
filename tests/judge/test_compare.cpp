// test_compare.cpp — the error metric and the 2x rule (compare.hpp, docs/correctness.md), at their
// boundaries, against values computed by hand:
//
//   err     = max_k |X_k - X_ref_k|, in the wider type; equal infinities 0, NaN or inf against a
//             finite reference inf
//   bound   = 2 naive + floor,  floor = max(f_p, 4 u R)
//             f_p = 1e-6 below fp64, 2e-15 in fp64; u = 2^-24 (fp32, bf16, fp16), 2^-53 (fp64)
//   verdict = pass iff err <= bound; no verdict when naive (or the floor) is not finite
//
// The values are chosen so that every bound is exact in double (powers of two, where 4 u R is
// above f_p), and "just over" is the next double above the bound.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "flashdemo/attention.hpp"
#include "flashdemo/judge/compare.hpp"

using namespace fd;

namespace {

// The next double above x: the smallest error the rule must fail at a bound of x.
double just_over(double x) {
  return std::nextafter(x, INFINITY);
}

Vec<double> vec(std::vector<double> values) {
  Vec<double> v(index_t(values.size()));
  for (std::size_t k = 0; k < values.size(); ++k) v(index_t(k)) = values[k];
  return v;
}

}  // namespace

TEST_CASE("the 2x rule: bound = 2 naive + floor, inclusive; no finite yardstick, no verdict") {
  const double floor32 = rule_floor(Precision::fp32);
  CHECK(floor32 == kAbsSlack);
  CHECK(rule_floor(Precision::fp64) == kAbsSlack64);
  CHECK(rule_floor(Precision::fp32, 1e3) == doctest::Approx(4 * 0x1p-24 * 1e3));  // 4 u R
  const double naive = 3e-7, bound = 2 * naive + floor32;
  CHECK(apply_rule(Precision::fp32, bound, naive).outcome == Outcome::pass);
  CHECK(apply_rule(Precision::fp32, std::nextafter(bound, 1.0), naive).outcome == Outcome::fail);
  CHECK(apply_rule(Precision::fp32, 0, naive).bound == doctest::Approx(bound));
  CHECK(apply_rule(Precision::fp32, INFINITY, naive).outcome == Outcome::fail);
  CHECK(apply_rule(Precision::bf16, 1e-9, INFINITY).outcome == Outcome::no_verdict);
  CHECK(apply_rule(Precision::bf16, 0, NAN).outcome == Outcome::no_verdict);
  // abs_error: equal infinities (a row that sees no key) agree; NaN never does.
  CHECK(abs_error<double>(-INFINITY, -INFINITY) == 0);
  CHECK(abs_error<double>(NAN, 1.0) == INFINITY);
  CHECK(abs_error<double>(INFINITY, 1.0) == INFINITY);
}

TEST_CASE("the floor: f_p below the crossover, 4 u R above it, per precision") {
  // fp32, bf16, fp16 sum in fp32: u = 2^-24. 4 u R = 1e-6 at R = 1e-6 / 2^-22 = 4.194304.
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    CAPTURE(int(p));
    CHECK(accumulator_unit(p) == 0x1p-24);
    CHECK(rule_floor(p) == 1e-6);
    CHECK(rule_floor(p, 4) == 1e-6);        // 4 u R = 2^-20 = 9.54e-7: f_p decides
    CHECK(rule_floor(p, 8) == 0x1p-19);     // 4 u R = 2^-19 = 1.91e-6
    CHECK(rule_floor(p, 1024) == 0x1p-12);  // 2^2 2^-24 2^10
  }
  // fp64 sums in fp64: u = 2^-53. 4 u R = 2e-15 at R = 2e-15 / 2^-51 = 4.5036.
  CHECK(accumulator_unit(Precision::fp64) == 0x1p-53);
  CHECK(rule_floor(Precision::fp64, 4) == 2e-15);    // 4 u R = 2^-49 = 1.78e-15
  CHECK(rule_floor(Precision::fp64, 8) == 0x1p-48);  // 3.55e-15
  CHECK(rule_bound(Precision::fp64, 0x1p-40, 8) == 0x1p-39 + 0x1p-48);
}

TEST_CASE("exactly 2x the naive error plus the floor passes; the next double above fails") {
  // fp32 at R = 1024: floor = 2^-12, naive = 2^-8, bound = 2^-7 + 2^-12 (exact).
  const double naive = 0x1p-8, bound = 0x1p-7 + 0x1p-12;
  const RuleVerdict at = apply_rule(Precision::fp32, bound, naive, 1024);
  CHECK(at.outcome == Outcome::pass);
  CHECK(at.bound == bound);
  CHECK(at.floor == 0x1p-12);
  CHECK(at.err == bound);
  CHECK(at.naive == naive);
  CHECK(apply_rule(Precision::fp32, just_over(bound), naive, 1024).outcome == Outcome::fail);
  CHECK(apply_rule(Precision::fp32, 2 * naive, naive, 1024).pass());  // exactly 2x: the floor left
  // Where the floor is negligible, 2x decides: fp64, naive = 0.5, bound = 1 + 2e-15.
  CHECK(apply_rule(Precision::fp64, 1.0, 0.5).pass());
  CHECK(apply_rule(Precision::fp64, 1.0 + 1e-12, 0.5).outcome == Outcome::fail);
  CHECK(apply_rule(Precision::fp64, 1.5, 0.5).outcome == Outcome::fail);  // 3x
  // Every precision below fp64 has the same rule: bf16 and fp16 at their fp32 floor.
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    CHECK(apply_rule(p, bound, naive, 1024).pass());
    CHECK(apply_rule(p, just_over(bound), naive, 1024).outcome == Outcome::fail);
  }
}

TEST_CASE("bf16, fp16: the storage tolerance, one unit of p at 0.3 + max |X|; none in fp32, fp64") {
  // 0.3 + 0 in [2^-2, 2^-1): bf16 (8 significant bits) 2^-2 2^-7 = 2^-9, fp16 (11) 2^-12.
  CHECK(storage_atol(Precision::bf16, 0.0) == 0x1p-9);
  CHECK(storage_atol(Precision::fp16, 0.0) == 0x1p-12);
  // 0.3 + 1.7 = 2 in [2, 4): one unit 2^1 2^-7 in bf16, 2^1 2^-10 in fp16; just below 2, half that.
  CHECK(storage_atol(Precision::bf16, 1.7) == 0x1p-6);
  CHECK(storage_atol(Precision::fp16, 1.7) == 0x1p-9);
  CHECK(storage_atol(Precision::bf16, 1.69) == 0x1p-7);
  // Nothing in fp32 and fp64; nothing beyond p's range (the naive path overflows: no verdict).
  CHECK(storage_atol(Precision::fp32, 1.0) == 0);
  CHECK(storage_atol(Precision::fp64, 1.0) == 0);
  CHECK(storage_atol(Precision::fp16, 70000.0) == 0);
  CHECK(storage_atol(Precision::fp16, 60000.0) == 0x1p5);  // [2^15, 2^16): 2^15 2^-10
  CHECK(storage_atol(Precision::fp16, 65504.0) == 0x1p5);  // fp16's largest: still a unit
  // From an array: its largest finite magnitude (a fully masked row's -inf left out).
  CHECK(storage_atol(Precision::bf16, vec({-1.7, 0.5, -INFINITY})) == 0x1p-6);
  // The floor is the largest of f_p, 4 u R and the tolerance: here the tolerance.
  CHECK(rule_floor(Precision::bf16, 1024, 0x1p-6) == 0x1p-6);
  CHECK(rule_floor(Precision::bf16, 1024, 0x1p-14) == 0x1p-12);  // 4 u R larger
  const RuleVerdict v = apply_rule(Precision::bf16, 0x1p-6 + 0x1p-8, 0x1p-9, 1, 0x1p-6);
  CHECK(v.floor == 0x1p-6);
  CHECK(v.bound == 0x1p-8 + 0x1p-6);
  CHECK(v.pass());
  // judge: arrays held in p get it (O, dQ, dK, dV, D); L, which every path keeps in fp32, does not.
  const Vec<double> ref = vec({0.25, -1.7}), naive = vec({0.25, -1.7}), R = vec({1, 2});
  const Vec<double> off = vec({0.25, -1.7 + 0x1p-7});  // half a unit of bf16 at 2: within
  CHECK(judge(Precision::bf16, off, ref, naive, R, Held::in_p).pass());
  CHECK(judge(Precision::bf16, off, ref, naive, R, Held::wide).outcome == Outcome::fail);
  CHECK(judge(Precision::fp32, off, ref, naive, R, Held::in_p).outcome == Outcome::fail);
}

TEST_CASE("a zero naive error: the floor alone is the bound") {
  CHECK(apply_rule(Precision::fp32, 1e-6, 0).pass());
  CHECK(apply_rule(Precision::fp32, just_over(1e-6), 0).outcome == Outcome::fail);
  CHECK(apply_rule(Precision::fp32, 0, 0).pass());
  CHECK(apply_rule(Precision::fp32, 0, 0).bound == 1e-6);
  CHECK(apply_rule(Precision::fp64, 2e-15, 0).pass());
  CHECK(apply_rule(Precision::fp64, just_over(2e-15), 0).outcome == Outcome::fail);
  CHECK(apply_rule(Precision::fp64, 1e-15, 0, 8).bound == 0x1p-48);  // 4 u R above f_p
  CHECK(apply_rule(Precision::fp64, 0x1p-48, 0, 8).pass());
  CHECK(apply_rule(Precision::fp64, just_over(0x1p-48), 0, 8).outcome == Outcome::fail);
}

TEST_CASE(
    "non-finite values: an infinite or NaN error fails, a non-finite yardstick is no verdict") {
  CHECK(apply_rule(Precision::fp32, NAN, 1e-7).outcome == Outcome::fail);  // NaN <= bound is false
  CHECK(apply_rule(Precision::fp64, INFINITY, 1.0).outcome == Outcome::fail);
  // No yardstick: no verdict whatever the error, and the bound says so (inf), never a pass.
  for (double err : {0.0, 1e-9, 1.0, double(INFINITY), double(NAN)}) {
    CAPTURE(err);
    const RuleVerdict v = apply_rule(Precision::fp16, err, INFINITY);
    CHECK(v.outcome == Outcome::no_verdict);
    CHECK_FALSE(v.pass());
    CHECK(v.bound == INFINITY);
  }
  CHECK(apply_rule(Precision::fp32, 0, 1e-7, INFINITY).outcome == Outcome::no_verdict);  // R = inf
  // The metric: equal infinities agree, opposite ones and NaN (even NaN against NaN) do not.
  CHECK(abs_error<double>(INFINITY, INFINITY) == 0);
  CHECK(abs_error<double>(-INFINITY, INFINITY) == INFINITY);
  CHECK(abs_error<double>(1.0, -INFINITY) == INFINITY);
  CHECK(abs_error<double>(NAN, NAN) == INFINITY);
  CHECK(abs_error<double>(-2.0, 1.0) == 3);
  // The scale of an array leaves out its infinities and NaNs (a fully masked row's L).
  CHECK(max_finite_abs(vec({-5, INFINITY, 3, -INFINITY, NAN})) == 5);
  CHECK(max_finite_abs(vec({-INFINITY, -INFINITY})) == 0);
}

TEST_CASE("per array: the worst entry decides, found by its flat index, in the wider type") {
  Mat<double> ref(2, 3), x(2, 3);
  ref << 1, 2, 3, 4, 5, 6;
  x << 1.25, 2, 3, 4, 5, 6.5;  // errors 0.25 at (0, 0), 0.5 at (1, 2): flat index 5
  MaxError worst = max_abs_error(x, ref);
  CHECK(worst.value == 0.5);
  CHECK(worst.index == 5);
  x(1, 2) = 6.25;  // a tie at 0.25: the first one is kept
  worst = max_abs_error(x, ref);
  CHECK(worst.value == 0.25);
  CHECK(worst.index == 0);
  x(0, 1) = NAN;  // a NaN is the worst there is
  worst = max_abs_error(x, ref);
  CHECK(worst.value == INFINITY);
  CHECK(worst.index == 1);
  CHECK(max_abs_error(ref, ref).value == 0);
  // fp32 against an fp64 reference: the difference is taken in fp64 (in fp32 it would be 0).
  Mat<float> f(1, 1);
  Mat<double> r(1, 1);
  f << 0.1f;
  r << 0.1;
  CHECK(max_abs_error(f, r).value == double(0.1f) - 0.1);
  CHECK(max_abs_error(f, r).value > 1e-9);
}

TEST_CASE(
    "judge: the rule on whole arrays, each error its worst entry, R its largest finite term") {
  // A fully masked row's L = -inf in ref; naive off by 2^-23 at one entry; R's largest finite
  // magnitude 1024 (its inf left out), so floor = 4 2^-24 1024 = 2^-12 and
  // bound = 2 2^-23 + 2^-12 = 2^-22 + 2^-12; 1024 + bound and the next double above it are exact.
  const Vec<double> ref = vec({1, 2, 1024, -INFINITY});
  const Vec<double> naive = vec({1 + 0x1p-23, 2, 1024, -INFINITY});
  const Vec<double> R = vec({1, 2, 1024, INFINITY});
  const double bound = 0x1p-22 + 0x1p-12;
  const RuleVerdict right = judge(Precision::fp32, ref, ref, naive, R, Held::in_p);
  CHECK(right.pass());
  CHECK(right.err == 0);
  CHECK(right.naive == 0x1p-23);
  CHECK(right.floor == 0x1p-12);
  CHECK(right.bound == bound);
  const RuleVerdict at =
      judge(Precision::fp32, vec({1, 2, 1024 + bound, -INFINITY}), ref, naive, R, Held::in_p);
  CHECK(at.err == bound);
  CHECK(at.pass());
  const RuleVerdict over = judge(Precision::fp32, vec({1, 2, 1024 + bound + 0x1p-42, -INFINITY}),
                                 ref, naive, R, Held::in_p);
  CHECK(over.err == bound + 0x1p-42);
  CHECK(over.outcome == Outcome::fail);
  // One entry off fails the array, however right the others are: the worst, not a mean.
  const RuleVerdict one =
      judge(Precision::fp32, vec({1 + 2 * bound, 2, 1024, -INFINITY}), ref, naive, R, Held::in_p);
  CHECK(one.outcome == Outcome::fail);
  CHECK(one.err == 2 * bound);
  // Exactly the reference's infinities, or the error is infinite: a finite value, the other
  // infinity or a NaN where ref is -inf all fail; -inf where ref is finite too.
  for (double last : {-1e30, double(INFINITY), double(NAN)}) {
    CAPTURE(last);
    const RuleVerdict v =
        judge(Precision::fp32, vec({1, 2, 1024, last}), ref, naive, R, Held::in_p);
    CHECK(v.outcome == Outcome::fail);
    CHECK(v.err == INFINITY);
  }
  CHECK(
      judge(Precision::fp32, vec({-INFINITY, 2, 1024, -INFINITY}), ref, naive, R, Held::in_p).err ==
      INFINITY);
  // The naive yardstick not finite somewhere (an overflow in its precision): no verdict.
  const Vec<double> overflowed = vec({1, INFINITY, 1024, -INFINITY});
  CHECK(judge(Precision::fp16, ref, ref, overflowed, R, Held::in_p).outcome == Outcome::no_verdict);
}

TEST_CASE("rows off: the rows with an entry beyond tol, NaN counted off; the first one") {
  Mat<double> ref = Mat<double>::Zero(4, 3), x = ref;
  x(1, 2) = 1e-6;                              // at tol: not off
  x(2, 0) = 2e-6;                              // beyond
  x(3, 1) = NAN;                               // off
  ref(0, 0) = -INFINITY, x(0, 0) = -INFINITY;  // equal infinities: not off
  CHECK(rows_off(x, ref, 1e-6) == std::vector<bool>{false, false, true, true});
  CHECK(rows_above(x, ref, 1e-6) == 2);
  CHECK(first_row_above(x, ref, 1e-6) == 2);
  CHECK(first_row_above(ref, ref, 0) == -1);
  CHECK(rows_above(ref, ref, 0) == 0);
}
