// test_grade.cpp — the grader passes right answers in every precision and names the mistake
// behind wrong ones.
#include <doctest/doctest.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "check.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/judge/grade.hpp"
#include "flashdemo/teaching/flash_backward.hpp"

using namespace fd;

namespace {

CheckProblem problem(bool causal, CausalAlign align, index_t n = 40, index_t m = 40) {
  TorchGenerator gen(9);
  const index_t d = 6;
  return {gen.randn_matrix<double>(n, d), gen.randn_matrix<double>(m, d),
          gen.randn_matrix<double>(m, d), gen.randn_matrix<double>(n, d),
          AttnParams{causal, align, {}}};
}

struct Broken {
  Mat<double> O, L, dQ, dK, dV;
};

Broken flash(const CheckProblem& p, const AttnParams& params, Mistake mistake, TileSizes t) {
  const Variant v{Precision::fp64, mistake};
  const auto f = flash_forward(p.Q, p.K, p.V, params, t, nullptr, v);
  const auto b = flash_backward(p.Q, p.K, p.V, f, p.dO, params, t, nullptr, v);
  return {f.O, f.L, b.dQ, b.dK, b.dV};
}

}  // namespace

TEST_CASE("right answers pass: fp64, and fp32 by the 2x rule") {
  const CheckProblem p = problem(true, CausalAlign::top_left);
  Grader grader(p);
  const Broken good = flash(p, p.params, Mistake::none, {16, 16});
  CHECK(grader.grade(ArrayKind::O, good.O, Precision::fp64).pass);
  CHECK(grader.grade(ArrayKind::L, good.L, Precision::fp64).pass);
  CHECK(grader.grade(ArrayKind::dQ, good.dQ, Precision::fp64).pass);
  const auto f32 = flash_forward<float>(p.Q.cast<float>(), p.K.cast<float>(), p.V.cast<float>(),
                                        p.params, {8, 8});
  const Grade g = grader.grade(ArrayKind::O, f32.O.cast<double>(), Precision::fp32);
  CHECK(g.pass);
  CHECK(g.naive_err > 0);
  CHECK(g.bound == doctest::Approx(2 * g.naive_err + 1e-6));
  const Grade strict = grader.grade(ArrayKind::O, f32.O.cast<double>(), Precision::fp64);
  CHECK_FALSE(strict.pass);  // fp32 numbers are not fp64-exact
}

TEST_CASE("each classic mistake is diagnosed") {
  const CheckProblem p = problem(true, CausalAlign::bottom_right, 40, 52);
  Grader grader(p);
  AttnParams none = p.params, top_left = p.params, unscaled = p.params;
  none.causal = false;
  top_left.align = CausalAlign::top_left;
  unscaled.scale = 1.0;
  struct Case {
    Diagnosis expect;
    ArrayKind kind;
    Mat<double> X;
  };
  const Case cases[] = {
      {Diagnosis::missing_mask, ArrayKind::O, flash(p, none, Mistake::none, {16, 16}).O},
      {Diagnosis::wrong_align, ArrayKind::O, flash(p, top_left, Mistake::none, {16, 16}).O},
      {Diagnosis::unscaled, ArrayKind::L, flash(p, unscaled, Mistake::none, {16, 16}).L},
      {Diagnosis::no_rescale, ArrayKind::O, flash(p, p.params, Mistake::no_rescale, {32, 32}).O},
      {Diagnosis::l_starts_at_1, ArrayKind::L,
       flash(p, p.params, Mistake::l_starts_at_1, {16, 16}).L},
      {Diagnosis::no_d, ArrayKind::dQ, flash(p, p.params, Mistake::no_d, {16, 16}).dQ},
      {Diagnosis::grad_unscaled, ArrayKind::dK,
       grader.expected(ArrayKind::dK) / p.params.scale_for(6)},
      {Diagnosis::transposed, ArrayKind::O, grader.expected(ArrayKind::O).transpose()},
      {Diagnosis::wrong_shape, ArrayKind::O, Mat<double>::Zero(3, 3)},
  };
  for (const Case& c : cases) {
    const Grade g = grader.grade(c.kind, c.X, Precision::fp64);
    INFO("expected diagnosis " << int(c.expect) << ", got " << int(g.diagnosis));
    CHECK_FALSE(g.pass);
    CHECK(g.diagnosis == c.expect);
  }
}

TEST_CASE("L = m, rows scaled, and NaN are recognized") {
  const CheckProblem p = problem(false, CausalAlign::top_left);
  Grader grader(p);
  const Broken good = flash(p, p.params, Mistake::none, {16, 16});
  const auto ref = reference_forward(p.Q, p.K, p.V, p.params);
  CHECK(grader.grade(ArrayKind::L, ref.S.rowwise().maxCoeff(), Precision::fp64).diagnosis ==
        Diagnosis::l_is_max);
  Mat<double> scaled = good.O;
  for (index_t r = 0; r < scaled.rows(); ++r) scaled.row(r) *= 1.0 + 0.1 * double(r % 3);
  CHECK(grader.grade(ArrayKind::O, scaled, Precision::fp64).diagnosis == Diagnosis::rows_scaled);
  Mat<double> nan = good.O;
  nan(3, 1) = std::nan("");
  const Grade g = grader.grade(ArrayKind::O, nan, Precision::fp32);
  CHECK_FALSE(g.pass);
  CHECK(g.diagnosis == Diagnosis::has_nan);
}

TEST_CASE("the worst element and the first wrong row are reported") {
  const CheckProblem p = problem(false, CausalAlign::top_left);
  Grader grader(p);
  Mat<double> X = grader.expected(ArrayKind::O);
  X(7, 2) += 1e-3;
  X(20, 4) += 5e-3;
  const Grade g = grader.grade(ArrayKind::O, X, Precision::fp32);
  CHECK_FALSE(g.pass);
  CHECK(g.worst_row == 20);
  CHECK(g.worst_col == 4);
  CHECK(g.first_bad_row == 7);
  CHECK(g.err == doctest::Approx(5e-3));
}

TEST_CASE("hints are right or silent: a mistake that cannot change the array never explains it") {
  const CheckProblem p = problem(true, CausalAlign::top_left);
  Grader grader(p);
  const Broken good = flash(p, p.params, Mistake::none, {16, 16});
  Mat<double> O = good.O, dV = good.dV, neg = good.O, row0 = good.O, one = good.O;
  O(5, 3) += 3e-10;  // no-d leaves O exact: it must not be the diagnosis
  dV(2, 1) += 5e-12;
  neg.row(4) *= -1;  // a negated row is no normalization mistake
  row0(0, 2) += 1e-3;
  one.row(6) *= 1.5;                     // one row off: not "each row off by its own factor"
  const Mat<double> twice = 2 * good.O;  // one factor for every row: not "its own factor" either
  struct Case {
    ArrayKind kind;
    Mat<double> X;
    index_t first_bad_row;
  };
  for (const Case& c :
       {Case{ArrayKind::O, O, 5}, Case{ArrayKind::dV, dV, 2}, Case{ArrayKind::O, neg, 4},
        Case{ArrayKind::O, row0, 0}, Case{ArrayKind::O, one, 6}, Case{ArrayKind::O, twice, 0}}) {
    const Grade g = grader.grade(c.kind, c.X, Precision::fp64);
    INFO("diagnosis " << int(g.diagnosis));
    CHECK_FALSE(g.pass);
    CHECK(g.diagnosis == Diagnosis::none);
    CHECK(g.first_bad_row == c.first_bad_row);
  }
  CHECK(
      grader.grade(ArrayKind::L, Mat<double>(good.L / std::log(2.0)), Precision::fp64).diagnosis ==
      Diagnosis::l_base2);
}

TEST_CASE("an L of the other alignment gets the alignment hint, not the NaN one") {
  const CheckProblem tl = problem(true, CausalAlign::top_left, 40, 25);
  const CheckProblem br = problem(true, CausalAlign::bottom_right, 40, 25);
  const Broken bottom_right = flash(br, br.params, Mistake::none, {16, 16});  // rows of -inf
  CHECK(std::isinf(bottom_right.L(0)));
  Grader grader(tl);
  CHECK(grader.grade(ArrayKind::L, bottom_right.L, Precision::fp64).diagnosis ==
        Diagnosis::wrong_align);
}

TEST_CASE("no verdict where the naive yardstick overflows, never a pass") {
  CheckProblem p = problem(false, CausalAlign::top_left);
  p.params.scale = 30000.0;  // scores beyond fp16's 65504: naive fp16 attention overflows
  Grader grader(p);
  const Mat<double> nan = Mat<double>::Constant(40, 6, NAN),
                    junk = Mat<double>::Constant(40, 6, 123);
  for (const Mat<double>* X : {&nan, &junk}) {
    const Grade g = grader.grade(ArrayKind::O, *X, Precision::fp16);
    CHECK(g.outcome == Outcome::no_verdict);
    CHECK_FALSE(g.pass);
  }
  CHECK(grader.grade(ArrayKind::O, nan, Precision::fp32).outcome == Outcome::fail);
}

// Arrays that carry a submitter's own fp32 rounding: the hints allow for it.
TEST_CASE("hints with realistic fp32 rounding: the missing scale on dQ and dK, a lower precision") {
  const CheckProblem p = problem(true, CausalAlign::top_left);
  Grader grader(p);
  const float s = float(p.params.scale_for(6));
  // The student's fp32 backward, its gradients left without the factor scale (rounded in fp32).
  const auto f = flash_forward<float>(p.Q.cast<float>(), p.K.cast<float>(), p.V.cast<float>(),
                                      p.params, {16, 16});
  const auto b = flash_backward<float>(p.Q.cast<float>(), p.K.cast<float>(), p.V.cast<float>(), f,
                                       p.dO.cast<float>(), p.params, {16, 16});
  for (const auto& [kind, X] : {std::pair{ArrayKind::dQ, Mat<float>(b.dQ / s)},
                                std::pair{ArrayKind::dK, Mat<float>(b.dK / s)}}) {
    const Grade g = grader.grade(kind, X.cast<double>(), Precision::fp32);
    const int array = int(kind);  // not the binding: clang < 16 captures none in INFO's lambda
    INFO("array " << array << " diagnosis " << int(g.diagnosis));
    CHECK_FALSE(g.pass);
    CHECK(g.diagnosis == Diagnosis::grad_unscaled);
  }
  // O computed right and rounded to bf16 (or fp16), saved as float32: graded in fp32 it fails,
  // and the hint names the precision whose rule it passes.
  const Mat<double> O = grader.expected(ArrayKind::O);
  for (const auto& [lower, expect] : {std::pair{Precision::bf16, Diagnosis::as_bf16},
                                      std::pair{Precision::fp16, Diagnosis::as_fp16}}) {
    const Mat<double> X =
        O.unaryExpr([lower = lower](double v) { return double(float(round_to(lower, v))); });
    const Grade g = grader.grade(ArrayKind::O, X, Precision::fp32);
    CHECK_FALSE(g.pass);
    CHECK(g.diagnosis == expect);
    CHECK(grader.grade(ArrayKind::O, X, lower).pass);
  }
  // fp32 numbers saved as float64, graded as fp64: fp32 is named, not a lower precision.
  const Mat<double> O32 = O.cast<float>().cast<double>();
  CHECK(grader.grade(ArrayKind::O, O32, Precision::fp64).diagnosis == Diagnosis::as_fp32);
  // A few wrong entries as small as bf16 rounding are a bug, not a precision.
  Mat<double> few = O;
  few(3, 2) += 2e-3, few(9, 1) -= 2e-3;
  CHECK(grader.grade(ArrayKind::O, few, Precision::fp32).diagnosis == Diagnosis::none);
}

TEST_CASE("the submitter's tile sizes are replayed first; a mistake at 8 x 8 is then found") {
  const CheckProblem p = problem(false, CausalAlign::top_left);
  const Broken at8 = flash(p, p.params, Mistake::no_rescale, {8, 8});
  Grader common(p);
  CHECK(common.grade(ArrayKind::O, at8.O, Precision::fp64).diagnosis == Diagnosis::none);
  CheckProblem mine = p;
  mine.tiles = {TileSizes{8, 8}};
  Grader told(mine);
  CHECK(told.grade(ArrayKind::O, at8.O, Precision::fp64).diagnosis == Diagnosis::no_rescale);
  const std::vector<TileSizes> tried = replayed_tiles({{8, 8}, {16, 16}});
  REQUIRE(tried.size() == 6);
  CHECK(tried[0].Br == 8);
  CHECK(tried[1].Br == 16);
  CHECK(tried[5].Bc == 24);
}

TEST_CASE("dV right, dQ and dK wrong with no diagnosis of their own: the bug is placed in dS") {
  CHECK(points_at_ds(true, false, Diagnosis::none, false, Diagnosis::none));
  CHECK_FALSE(points_at_ds(false, false, Diagnosis::none, false, Diagnosis::none));
  CHECK_FALSE(points_at_ds(true, true, Diagnosis::none, false, Diagnosis::none));
  CHECK_FALSE(points_at_ds(true, false, Diagnosis::no_d, false, Diagnosis::no_d));
}
