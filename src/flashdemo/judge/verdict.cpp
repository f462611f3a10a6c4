// verdict.cpp — the verdict of a run (see verdict.hpp for the pipeline and its equations).
#include "flashdemo/judge/verdict.hpp"

#include <algorithm>
#include <stdexcept>

namespace fd {
namespace {

int severity(Outcome o) {  // fail is worse than no verdict, which is worse than pass
  return o == Outcome::fail ? 2 : o == Outcome::no_verdict ? 1 : 0;
}

// How far past its bound an array landed (err / bound; inf with no bound).
double overshoot(const RuleVerdict& v) {
  return v.bound > 0 ? v.err / v.bound : (v.err > 0 ? INFINITY : 0);
}

bool worse(const RuleVerdict& a, const RuleVerdict& b) {
  if (severity(a.outcome) != severity(b.outcome)) return severity(a.outcome) > severity(b.outcome);
  return overshoot(a) > overshoot(b);
}

template <class T>
Mat<T> rounded(const Mat<T>& X, Precision stored) {
  return X.unaryExpr([stored](T v) { return round_to(stored, v); });
}

}  // namespace

void RunVerdict::add(std::string name, const RuleVerdict& rule, bool used) {
  arrays_.push_back({std::move(name), rule, used});
}

void RunVerdict::fold(const RunVerdict& head) {
  if (arrays_.empty()) {
    arrays_ = head.arrays_;
    return;
  }
  for (const ArrayVerdict& h : head.arrays_) {
    auto it = std::find_if(arrays_.begin(), arrays_.end(),
                           [&](const ArrayVerdict& a) { return a.name == h.name; });
    if (it == arrays_.end())
      arrays_.push_back(h);
    else if (worse(h.rule, it->rule))
      it->rule = h.rule;
  }
}

void RunVerdict::set_used(std::string_view name, bool used) {
  for (ArrayVerdict& a : arrays_)
    if (a.name == name) a.used = used;
}

Outcome RunVerdict::outcome() const {
  int worst = 0;
  for (const ArrayVerdict& a : arrays_)
    if (a.used) worst = std::max(worst, severity(a.rule.outcome));
  return worst == 2 ? Outcome::fail : worst == 1 ? Outcome::no_verdict : Outcome::pass;
}

const RuleVerdict& RunVerdict::operator[](std::string_view name) const {
  for (const ArrayVerdict& a : arrays_)
    if (a.name == name) return a.rule;
  throw std::out_of_range("no verdict on " + std::string(name));
}

bool RunVerdict::used(std::string_view name) const {
  for (const ArrayVerdict& a : arrays_)
    if (a.name == name) return a.used;
  return false;
}

std::string RunVerdict::failing() const {
  std::string names;
  for (const ArrayVerdict& a : arrays_)
    if (a.used && !a.rule.pass()) names += (names.empty() ? "" : ", ") + a.name;
  return names;
}

template <class T>
ForwardJudge<T> forward_judge(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                              const AttnParams& params, Precision stored, index_t merges) {
  using W = wider_t<T>;
  // Q: n x d, K, V: m x d
  const Mat<W> Qw = Q.template cast<W>(), Kw = K.template cast<W>(), Vw = V.template cast<W>();
  ForwardJudge<T> j;
  j.ref = reference_forward<W>(Qw, Kw, Vw, params);
  j.naive = reference_forward<T>(Q, K, V, params, stored);
  j.R = floor_magnitudes(reference_magnitudes<W>(Qw, Kw, Vw, {}, j.ref, params), Q.rows(), K.rows(),
                         merges);
  return j;
}

template <class T>
RunVerdict judge_forward(const ForwardJudge<T>& j, const MatView<T>& O, const VecView<T>& L,
                         Precision p) {
  RunVerdict v;
  v.add("O", judge(p, O, j.ref.O, j.naive.O, j.R.O, Held::in_p));
  v.add("L", judge(p, L, j.ref.L, j.naive.L, j.R.L, Held::wide));
  return v;
}

template <class T>
BackwardJudge<T> backward_judge(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                const Mat<T>* dO_given, const AttnParams& params, Precision stored,
                                index_t merges) {
  using W = wider_t<T>;
  // Q, dO: n x d, K, V: m x d
  BackwardJudge<T> j;
  j.forward = forward_judge(Q, K, V, params, stored, merges);
  const Mat<W> Qw = Q.template cast<W>(), Kw = K.template cast<W>(), Vw = V.template cast<W>();
  j.dO = dO_given ? Mat<W>(dO_given->template cast<W>()) : Mat<W>(W(2) * j.forward.ref.O);
  j.ref = reference_backward<W>(Qw, Kw, Vw, j.dO, params);
  const Mat<T> dO_naive =
      rounded<T>(dO_given ? *dO_given : Mat<T>(T(2) * j.forward.naive.O), stored);
  j.naive = reference_backward<T>(Q, K, V, dO_naive, params, stored);
  j.R = floor_magnitudes(reference_magnitudes<W>(Qw, Kw, Vw, j.dO, j.forward.ref, params), Q.rows(),
                         K.rows(), merges);
  if (stored != Precision::bf16 && stored != Precision::fp16) {  // (below: storage_atol's part)
    const Precision p = precision_of<T>();
    inherit_o_error(j.R, j.forward.ref, Qw, Kw, Vw, j.dO, W(params.scale_for(Q.cols())),
                    dO_given == nullptr, forward_o_bound(j.forward, p), p);
  }
  return j;
}

template <class T>
RunVerdict judge_backward(const BackwardJudge<T>& j, const MatView<T>& dQ, const MatView<T>& dK,
                          const MatView<T>& dV, const VecView<T>& D, Precision p) {
  RunVerdict v;
  v.add("dQ", judge(p, dQ, j.ref.dQ, j.naive.dQ, j.R.dQ, Held::in_p));
  v.add("dK", judge(p, dK, j.ref.dK, j.naive.dK, j.R.dK, Held::in_p));
  v.add("dV", judge(p, dV, j.ref.dV, j.naive.dV, j.R.dV, Held::in_p));
  if (D.size() > 0) v.add("D", judge(p, D, j.ref.D, j.naive.D, j.R.D, Held::in_p));
  return v;
}

#define FD_INSTANTIATE(T)                                                                         \
  template ForwardJudge<T> forward_judge(const Mat<T>&, const Mat<T>&, const Mat<T>&,             \
                                         const AttnParams&, Precision, index_t);                  \
  template RunVerdict judge_forward(const ForwardJudge<T>&, const MatView<T>&, const VecView<T>&, \
                                    Precision);                                                   \
  template BackwardJudge<T> backward_judge(const Mat<T>&, const Mat<T>&, const Mat<T>&,           \
                                           const Mat<T>*, const AttnParams&, Precision, index_t); \
  template RunVerdict judge_backward(const BackwardJudge<T>&, const MatView<T>&,                  \
                                     const MatView<T>&, const MatView<T>&, const VecView<T>&,     \
                                     Precision);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd
