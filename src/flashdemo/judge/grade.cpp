// grade.cpp — grading submitted arrays and diagnosing classic mistakes (see grade.hpp).
#include "flashdemo/judge/grade.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "flashdemo/teaching/flash_backward.hpp"

namespace fd {
namespace {

// Diagnosis replays the algorithm several times: only below this many score-times-dim entries.
constexpr double kDiagnoseLimit = double(1 << 26);
const TileSizes kCommonTiles[] = {{16, 16}, {32, 32}, {64, 64}, {128, 128}, {16, 24}};
// A mistake explains X when X is within tol of it and it lies beyond kDistinct * tol of the
// reference: X is then far closer to the mistake than the mistake is to the truth.
constexpr double kDistinct = 10.0;

template <class A, class B>
bool within(const Mat<A>& X, const Mat<B>& Y, double tol) {
  if (X.rows() != Y.rows() || X.cols() != Y.cols()) return false;
  return max_abs_error(X, Y).value <= tol;  // NaN counts as an infinite error
}

// NaN anywhere, or inf where the reference is finite: overflow or 0/0 in the submission.
template <class R>
bool broken_numbers(const Mat<double>& X, const Mat<R>& ref) {
  for (index_t k = 0; k < X.size(); ++k) {
    const double x = X.data()[k];
    if (std::isnan(x) || (std::isinf(x) && std::isfinite(ref.data()[k]))) return true;
  }
  return false;
}

// Each row of X a positive multiple c_r of the reference row, not all c_r = 1: l divided in
// the wrong number of times or at the wrong moment. A negated row is not a normalization.
bool rows_scaled(const Mat<double>& X, const Mat<double>& ref, double tol) {
  index_t rows = 0, off = 0;
  double c_min = INFINITY, c_max = -INFINITY;
  for (index_t r = 0; r < X.rows(); ++r) {
    const double rr = ref.row(r).squaredNorm();
    if (rr == 0) continue;
    const double c = X.row(r).dot(ref.row(r)) / rr;  // X_r = c_r ref_r, by least squares
    if (!(c > 0) || (X.row(r) - c * ref.row(r)).cwiseAbs().maxCoeff() > tol) return false;
    ++rows;
    if (std::abs(c - 1) * ref.row(r).cwiseAbs().maxCoeff() <= tol) continue;
    ++off, c_min = std::min(c_min, c), c_max = std::max(c_max, c);
  }
  // Most rows off, each by its own factor (one factor for all is another mistake, and one row
  // off alone is not the division by l).
  return off >= 2 && 2 * off >= rows && c_max - c_min > 1e-6 * c_max;
}

// Errors spread as rounding spreads them: at least a quarter of the entries above the bound (a
// few wrong entries, however small, are a bug, not a lower precision).
template <class R>
bool rounding_like(const Mat<double>& X, const Mat<R>& ref, double bound) {
  index_t above = 0;
  for (index_t k = 0; k < X.size(); ++k)
    above += std::abs(X.data()[k] - double(ref.data()[k])) > bound;
  return 4 * above >= X.size() && above >= 2;
}

}  // namespace

template <class T>
const Mat<T>& Grader::Outputs<T>::get(ArrayKind kind) const {
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

bool diagnoses_replay(index_t n, index_t m, index_t d) {
  return double(n) * double(m) * double(d) <= kDiagnoseLimit;
}

std::vector<TileSizes> replayed_tiles(const std::vector<TileSizes>& given) {
  std::vector<TileSizes> tiles;
  auto add = [&](TileSizes t) {
    for (const TileSizes& u : tiles)
      if (u.Br == t.Br && u.Bc == t.Bc) return;
    tiles.push_back(t);
  };
  for (const TileSizes& t : given) add(t);
  for (const TileSizes& t : kCommonTiles) add(t);
  return tiles;
}

Grader::Grader(CheckProblem problem) : problem_(std::move(problem)) {
  const CheckProblem& p = problem_;
  const Mat<Ref> Q = p.Q.cast<Ref>(), K = p.K.cast<Ref>(), V = p.V.cast<Ref>(),
                 dO = p.dO.cast<Ref>();
  const auto f = reference_forward<Ref>(Q, K, V, p.params);
  ref_ = {f.O, f.L, {}, {}, {}};
  if (dO.size()) {
    const auto b = reference_backward<Ref>(Q, K, V, dO, p.params);
    ref_.dQ = b.dQ, ref_.dK = b.dK, ref_.dV = b.dV;
  }
  const Magnitudes<Ref> R =
      floor_magnitudes(reference_magnitudes<Ref>(Q, K, V, dO, f, p.params), Q.rows(), K.rows());
  magnitude_ = {R.O, R.L, R.dQ, R.dK, R.dV};
}

Mat<double> Grader::expected(ArrayKind kind) const {
  return ref_.get(kind).cast<double>();
}

template <class T>
Grader::Outputs<T> Grader::reference(const AttnParams& params) const {
  const CheckProblem& p = problem_;
  const Mat<T> Q = p.Q.cast<T>(), K = p.K.cast<T>(), V = p.V.cast<T>();
  const auto f = reference_forward<T>(Q, K, V, params);
  Outputs<T> out{f.O, f.L, {}, {}, {}};
  if (p.dO.size()) {
    const auto b = reference_backward<T>(Q, K, V, p.dO.cast<T>(), params);
    out.dQ = b.dQ, out.dK = b.dK, out.dV = b.dV;
  }
  return out;
}

const Grader::Outputs<double>& Grader::naive(Precision prec) {
  if (auto it = naive_.find(prec); it != naive_.end()) return it->second;
  if (prec == Precision::fp64) return naive_[prec] = reference<double>(problem_.params);
  auto low = [prec](const Mat<double>& X) {
    return Mat<float>(X.cast<float>().unaryExpr([prec](float v) { return round_to(prec, v); }));
  };
  const CheckProblem& p = problem_;
  const Mat<float> Q = low(p.Q), K = low(p.K), V = low(p.V);
  const auto f = reference_forward<float>(Q, K, V, p.params, prec);
  Outputs<double> out{f.O.cast<double>(), f.L.cast<double>(), {}, {}, {}};
  if (p.dO.size()) {
    const auto b = reference_backward<float>(Q, K, V, low(p.dO), p.params, prec);
    out.dQ = b.dQ.cast<double>(), out.dK = b.dK.cast<double>(), out.dV = b.dV.cast<double>();
  }
  return naive_[prec] = out;
}

Grader::Outputs<double> Grader::run(const AttnParams& params, Mistake mistake,
                                    TileSizes tiles) const {
  const CheckProblem& p = problem_;
  const Variant v{Precision::fp64, mistake};
  const auto f = flash_forward(p.Q, p.K, p.V, params, tiles, nullptr, v);
  Outputs<double> out{f.O, f.L, {}, {}, {}};
  if (p.dO.size()) {
    const auto b = flash_backward(p.Q, p.K, p.V, f, p.dO, params, tiles, nullptr, v);
    out.dQ = b.dQ, out.dK = b.dK, out.dV = b.dV;
  }
  return out;
}

Diagnosis Grader::diagnose(ArrayKind kind, const Mat<double>& X, double tol) const {
  const AttnParams& given = problem_.params;
  const Mat<Ref>& truth = ref_.get(kind);
  const Mat<double> expected = truth.cast<double>();
  // Each candidate: what the array would be after one mistake (empty: not applicable).
  std::vector<std::pair<Diagnosis, std::function<Mat<double>()>>> candidates;
  auto outputs_with = [&](AttnParams params) {
    return [this, kind, params] { return reference<double>(params).get(kind); };
  };
  if (given.causal) {
    AttnParams none = given, other = given;
    none.causal = false;
    other.align =
        given.align == CausalAlign::top_left ? CausalAlign::bottom_right : CausalAlign::top_left;
    candidates.push_back({Diagnosis::missing_mask, outputs_with(none)});
    candidates.push_back({Diagnosis::wrong_align, outputs_with(other)});
  } else {
    for (CausalAlign align : {CausalAlign::top_left, CausalAlign::bottom_right})
      candidates.push_back(
          {Diagnosis::extra_mask, outputs_with(AttnParams{true, align, given.scale})});
  }
  AttnParams unscaled = given;
  unscaled.scale = 1.0;
  candidates.push_back({Diagnosis::unscaled, outputs_with(unscaled)});
  if (kind == ArrayKind::L) {
    candidates.push_back({Diagnosis::l_is_max, [&] {
                            const auto f =
                                reference_forward(problem_.Q, problem_.K, problem_.V, given);
                            return Mat<double>(f.S.rowwise().maxCoeff());
                          }});
    candidates.push_back(
        {Diagnosis::l_base2, [&] { return Mat<double>(expected / std::log(2.0)); }});
  }
  if (kind == ArrayKind::dQ || kind == ArrayKind::dK) {
    const double s = given.scale_for(problem_.Q.cols());
    candidates.push_back({Diagnosis::grad_unscaled, [&, s] { return Mat<double>(expected / s); }});
  }
  // The --break mistakes the tiled path can re-run, in the order FD_MISTAKES gives (regraded).
  std::vector<MistakeRow> rerun;
  for (const MistakeRow& row : kMistakes)
    if (row.regraded > 0) rerun.push_back(row);
  std::sort(rerun.begin(), rerun.end(),
            [](const MistakeRow& a, const MistakeRow& b) { return a.regraded < b.regraded; });
  const std::vector<TileSizes> replayed = replayed_tiles(problem_.tiles);
  for (const MistakeRow& row : rerun) {
    for (const TileSizes& tiles : replayed) {
      candidates.push_back({diagnosis_of(row.mistake), [&, mistake = row.mistake, tiles] {
                              return run(given, mistake, tiles).get(kind);
                            }});
      if (!row.tiled) break;  // the same array at every tile size
    }
  }
  // A candidate larger than the truth (no scale: 1 / scale times larger) carries rounding as
  // large in proportion: the tolerance grows with it (never shrinks).
  const double truth_size = std::max(max_finite_abs(truth), 1e-300);
  for (const auto& [diagnosis, make] : candidates) {
    const Mat<double> candidate = make();
    const double t = tol * std::max(1.0, max_finite_abs(candidate) / truth_size);
    if (within(X, candidate, t) && !within(candidate, truth, kDistinct * t)) return diagnosis;
  }
  if (kind == ArrayKind::O && rows_scaled(X, expected, tol)) return Diagnosis::rows_scaled;
  if (broken_numbers(X, truth)) return Diagnosis::has_nan;
  return Diagnosis::none;
}

double Grader::atol(ArrayKind kind, Precision p) const {
  return kind == ArrayKind::L ? 0 : storage_atol(p, ref_.get(kind));
}

Grade Grader::grade(ArrayKind kind, const Mat<double>& X, Precision p) {
  const Mat<Ref>& ref = ref_.get(kind);
  Grade g;
  if (X.rows() != ref.rows() || X.cols() != ref.cols()) {
    const bool t = X.rows() == ref.cols() && X.cols() == ref.rows() && ref.rows() != ref.cols();
    g.diagnosis = t ? Diagnosis::transposed : Diagnosis::wrong_shape;
    g.err = INFINITY;
    return g;
  }
  const MaxError e = max_abs_error(X, ref);
  const RuleVerdict v = apply_rule(p, e.value, max_abs_error(naive(p).get(kind), ref).value,
                                   max_finite_abs(magnitude_.get(kind)), atol(kind, p));
  g.outcome = v.outcome, g.pass = v.pass();
  g.err = v.err, g.bound = v.bound, g.naive_err = v.naive;
  g.worst_row = e.index / ref.cols(), g.worst_col = e.index % ref.cols();
  if (v.outcome == Outcome::no_verdict) return g;  // no bound: nothing to compare rows with
  g.first_bad_row = first_row_above(X, ref, g.bound);
  if (g.pass) return g;
  const bool small = diagnoses_replay(problem_.Q.rows(), problem_.K.rows(), problem_.Q.cols());
  if (small)
    g.diagnosis = diagnose(kind, X, std::max(g.bound, 1e-9 * max_finite_abs(ref)));
  else if (broken_numbers(X, ref))
    g.diagnosis = Diagnosis::has_nan;
  if (g.diagnosis == Diagnosis::none && (p == Precision::fp32 || p == Precision::fp64) &&
      rounding_like(X, ref, g.bound))
    for (Precision lower : {Precision::fp32, Precision::fp16, Precision::bf16}) {  // tightest first
      if (lower == p) continue;
      const RuleVerdict w =
          apply_rule(lower, e.value, max_abs_error(naive(lower).get(kind), ref).value,
                     max_finite_abs(magnitude_.get(kind)), atol(kind, lower));
      if (!w.pass()) continue;
      g.diagnosis = lower == Precision::fp32   ? Diagnosis::as_fp32
                    : lower == Precision::fp16 ? Diagnosis::as_fp16
                                               : Diagnosis::as_bf16;
      break;
    }
  return g;
}

}  // namespace fd
