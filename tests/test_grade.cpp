// test_grade.cpp — the grader passes right answers in every precision and names the mistake
// behind wrong ones.
#include <doctest/doctest.h>

#include <initializer_list>

#include "check.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/grade.hpp"
#include "flashdemo/random.hpp"

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
