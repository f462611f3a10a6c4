// grade.cpp — grading submitted arrays and diagnosing classic mistakes (see grade.hpp).
#include "flashdemo/grade.hpp"

#include <cmath>
#include <initializer_list>
#include <utility>
#include <vector>

#include "flashdemo/compare.hpp"
#include "flashdemo/flash_backward.hpp"

namespace fd {
namespace {

// Diagnosis replays the algorithm several times: only below this many score-times-dim entries.
constexpr double kDiagnoseLimit = double(1 << 26);
const TileSizes kCommonTiles[] = {{16, 16}, {32, 32}, {64, 64}, {128, 128}, {16, 24}};

bool matches(const Mat<double>& X, const Mat<double>& candidate, double bound) {
  if (X.rows() != candidate.rows() || X.cols() != candidate.cols()) return false;
  return max_abs_error(X, candidate).value <= bound;  // NaN counts as an infinite error
}

// NaN anywhere, or inf where the reference is finite: overflow or 0/0 in the submission.
bool broken_numbers(const Mat<double>& X, const Mat<double>& ref) {
  for (index_t k = 0; k < X.size(); ++k) {
    const double x = X.data()[k];
    if (std::isnan(x) || (std::isinf(x) && std::isfinite(ref.data()[k]))) return true;
  }
  return false;
}

// Each row of X a multiple c_r of the reference row, not all c_r = 1: a normalization mistake.
bool rows_scaled(const Mat<double>& X, const Mat<double>& ref, double bound) {
  bool any_off = false;
  for (index_t r = 0; r < X.rows(); ++r) {
    const double rr = ref.row(r).squaredNorm();
    if (rr == 0) continue;
    const double c = X.row(r).dot(ref.row(r)) / rr;
    if ((X.row(r) - c * ref.row(r)).cwiseAbs().maxCoeff() > bound) return false;
    any_off = any_off || std::abs(c - 1) * ref.row(r).cwiseAbs().maxCoeff() > bound;
  }
  return any_off;
}

}  // namespace

const Mat<double>& Grader::Outputs::get(ArrayKind kind) const {
  switch (kind) {
    case ArrayKind::O:
      return O;
    case ArrayKind::L:
      return L;
    case ArrayKind::dQ:
      return dQ;
    case ArrayKind::dK:
      return dK;
    case ArrayKind::dV:
      return dV;
  }
  return O;
}

Grader::Grader(CheckProblem problem) : problem_(std::move(problem)) {
  ref_ = reference(problem_.params);
}

const Mat<double>& Grader::expected(ArrayKind kind) const {
  return ref_.get(kind);
}

Grader::Outputs Grader::reference(const AttnParams& params) const {
  const CheckProblem& p = problem_;
  const auto f = reference_forward(p.Q, p.K, p.V, params);
  Outputs out{f.O, f.L, {}, {}, {}};
  if (p.dO.size()) {
    const auto b = reference_backward(p.Q, p.K, p.V, p.dO, params);
    out.dQ = b.dQ, out.dK = b.dK, out.dV = b.dV;
  }
  return out;
}

Grader::Outputs Grader::naive(Precision prec) {
  if (prec == Precision::fp64) return ref_;
  if (auto it = naive_.find(prec); it != naive_.end()) return it->second;
  auto low = [prec](const Mat<double>& X) {
    return Mat<float>(X.cast<float>().unaryExpr([prec](float v) { return round_to(prec, v); }));
  };
  const CheckProblem& p = problem_;
  const Mat<float> Q = low(p.Q), K = low(p.K), V = low(p.V);
  const auto f = reference_forward<float>(Q, K, V, p.params, prec);
  Outputs out{f.O.cast<double>(), f.L.cast<double>(), {}, {}, {}};
  if (p.dO.size()) {
    const auto b = reference_backward<float>(Q, K, V, low(p.dO), p.params, prec);
    out.dQ = b.dQ.cast<double>(), out.dK = b.dK.cast<double>(), out.dV = b.dV.cast<double>();
  }
  return naive_[prec] = out;
}

Grader::Outputs Grader::run(const AttnParams& params, Mistake mistake, TileSizes tiles) const {
  const CheckProblem& p = problem_;
  const Variant v{Precision::fp64, mistake};
  const auto f = flash_forward(p.Q, p.K, p.V, params, tiles, nullptr, v);
  Outputs out{f.O, f.L, {}, {}, {}};
  if (p.dO.size()) {
    const auto b = flash_backward(p.Q, p.K, p.V, f.O, f.L, p.dO, params, tiles, nullptr, v);
    out.dQ = b.dQ, out.dK = b.dK, out.dV = b.dV;
  }
  return out;
}

Diagnosis Grader::diagnose(ArrayKind kind, const Mat<double>& X, double bound) const {
  const AttnParams& given = problem_.params;
  AttnParams other = given, unscaled = given;
  unscaled.scale = 1.0;
  std::vector<std::pair<Diagnosis, AttnParams>> alternatives;
  if (given.causal) {
    other.causal = false;
    alternatives.push_back({Diagnosis::missing_mask, other});
    other = given;
    other.align =
        given.align == CausalAlign::top_left ? CausalAlign::bottom_right : CausalAlign::top_left;
    alternatives.push_back({Diagnosis::wrong_align, other});
  } else {
    for (CausalAlign align : {CausalAlign::top_left, CausalAlign::bottom_right})
      alternatives.push_back({Diagnosis::extra_mask, AttnParams{true, align, given.scale}});
  }
  alternatives.push_back({Diagnosis::unscaled, unscaled});
  for (const auto& [diagnosis, params] : alternatives)
    if (matches(X, reference(params).get(kind), bound)) return diagnosis;
  if (kind == ArrayKind::L) {
    const auto f = reference_forward(problem_.Q, problem_.K, problem_.V, given);
    if (matches(X, f.S.rowwise().maxCoeff(), bound)) return Diagnosis::l_is_max;
  }
  if (kind == ArrayKind::O && rows_scaled(X, ref_.O, bound)) return Diagnosis::rows_scaled;
  if (kind == ArrayKind::dQ || kind == ArrayKind::dK) {
    const double s = given.scale_for(problem_.Q.cols());
    if (matches(X, ref_.get(kind) / s, bound)) return Diagnosis::grad_unscaled;
  }
  const std::pair<Diagnosis, Mistake> mistakes[] = {
      {Diagnosis::no_d, Mistake::no_d},
      {Diagnosis::l_starts_at_1, Mistake::l_starts_at_1},
      {Diagnosis::finite_mask, Mistake::finite_mask},
      {Diagnosis::no_max, Mistake::no_max},
      {Diagnosis::no_rescale, Mistake::no_rescale}};
  for (const auto& [diagnosis, mistake] : mistakes) {
    for (const TileSizes& tiles : kCommonTiles) {
      if (matches(X, run(given, mistake, tiles).get(kind), bound)) return diagnosis;
      if (mistake != Mistake::no_rescale) break;  // only no-rescale depends on the tiles
    }
  }
  return Diagnosis::none;
}

Grade Grader::grade(ArrayKind kind, const Mat<double>& X, Precision p) {
  const Mat<double>& ref = ref_.get(kind);
  Grade g;
  if (X.rows() != ref.rows() || X.cols() != ref.cols()) {
    const bool t = X.rows() == ref.cols() && X.cols() == ref.rows() && ref.rows() != ref.cols();
    g.diagnosis = t ? Diagnosis::transposed : Diagnosis::wrong_shape;
    g.err = INFINITY;
    return g;
  }
  const MaxError e = max_abs_error(X, ref);
  g.err = e.value;
  g.worst_row = e.index / ref.cols(), g.worst_col = e.index % ref.cols();
  const Mat<double> finite_ref = ref.unaryExpr([](double v) { return std::isinf(v) ? 0.0 : v; });
  if (p == Precision::fp64) {
    g.bound = double_bound(finite_ref.cwiseAbs().maxCoeff());
  } else {
    g.naive_err = max_abs_error(naive(p).get(kind), ref).value;
    g.bound = two_x_bound(g.naive_err);
  }
  g.pass = g.err <= g.bound;
  for (index_t r = 0; r < X.rows() && g.first_bad_row < 0; ++r)
    if (max_abs_error(X.row(r), ref.row(r)).value > g.bound) g.first_bad_row = r;
  if (g.pass) return g;
  if (broken_numbers(X, ref))
    g.diagnosis = Diagnosis::has_nan;
  else if (double(problem_.Q.rows()) * double(problem_.K.rows()) * double(problem_.Q.cols()) <=
           kDiagnoseLimit)
    g.diagnosis = diagnose(kind, X, std::max(g.bound, 1e-9 * finite_ref.cwiseAbs().maxCoeff()));
  return g;
}

}  // namespace fd
