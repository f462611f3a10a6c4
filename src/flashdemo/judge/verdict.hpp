// verdict.hpp — the verdict of a run: one pipeline that every subcommand calls.
//
//   ref    = standard attention in W, wider than the path (S, P materialized)     (reference.hpp)
//   naive  = the same computation in T, stored as the path stores (bf16, fp16)    (the yardstick)
//   R      = the magnitudes of the terms each output sums, grown for long sums and for a path
//            that merges partial results through L by each merge's weights (floor_magnitudes)
//   per array X:  err = max |X - X_ref|,  bound = 2 err(naive) + floor(R),  outcome (compare.hpp)
//   per run:      fail if any array used by the run fails; else no verdict if any has none
//                 (never a pass); else pass. Heads fold array by array, keeping the worst.
//
// Upstream gradient: dO as given, or dO = 2 O (the loss sum(O^2)), where every path, the reference
// and the naive run each differentiate with their own O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashdemo/judge/compare.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_backward.hpp"

namespace fd {

template <class T>
using MatView = Eigen::Map<const Mat<T>>;  // a row-major block of memory, read in place
template <class T>
using VecView = Eigen::Map<const Vec<T>>;

template <class T>
MatView<T> view(const Mat<T>& X) {
  return MatView<T>(X.data(), X.rows(), X.cols());
}
template <class T>
VecView<T> view(const Vec<T>& x) {
  return VecView<T>(x.data(), x.size());
}

struct ArrayVerdict {
  std::string name;  // "O", "L", "dQ", "dK", "dV", "D"
  RuleVerdict rule;
  bool used = true;  // false: the run does not use this array (--break no-d's D): shown, not judged
};

class RunVerdict {
 public:
  void add(std::string name, const RuleVerdict& rule, bool used = true);
  // Another head's verdict on the same arrays: each array keeps the worse of the two.
  void fold(const RunVerdict& head);
  void set_used(std::string_view name, bool used);
  Outcome outcome() const;
  bool pass() const { return outcome() == Outcome::pass; }
  const std::vector<ArrayVerdict>& arrays() const { return arrays_; }
  const RuleVerdict& operator[](std::string_view name) const;
  bool used(std::string_view name) const;
  std::string failing() const;  // "dQ, dK": the used arrays that did not pass

 private:
  std::vector<ArrayVerdict> arrays_;
};

// The yardstick of a forward: the reference in W, the naive run in T, the magnitudes.
template <class T>
struct ForwardJudge {
  using W = wider_t<T>;
  ReferenceForward<W> ref;
  ReferenceForward<T> naive;
  Magnitudes<W> R;
};

// Q: n x d, K, V: m x d, in the path's type; `stored`: the format the path stores S, P, O in.
// merges: how many rounded merges through L the path made of each row's parts (split-KV: 1 for
// S > 1, merges_split_kv; the ring: P - 1, merges_ring; 0 for one pass over the keys): each adds
// its rounding to the floor (floor_magnitudes, docs/correctness.md section 2.1).
template <class T>
ForwardJudge<T> forward_judge(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                              const AttnParams& params, Precision stored, index_t merges = 0);

// O: n x d, L: n, judged in precision p.
template <class T>
RunVerdict judge_forward(const ForwardJudge<T>& j, const MatView<T>& O, const VecView<T>& L,
                         Precision p);

// The yardstick of a backward: the forward's, and the gradients in W and in T.
template <class T>
struct BackwardJudge {
  using W = wider_t<T>;
  ForwardJudge<T> forward;
  Mat<W> dO;                   // the upstream gradient the reference differentiates with
  ReferenceBackward<W> ref;    // dQ, dK, dV, D (and dP, dS) in W
  ReferenceBackward<T> naive;  // the same in T
  Magnitudes<W> R;             // with the gradients' magnitudes
};

// The bound O's verdict puts on the error of the forward's O (2 naive + floor, in precision p).
template <class T>
double forward_o_bound(const ForwardJudge<T>& f, Precision p) {
  return rule_bound(p, max_abs_error(f.naive.O, f.ref.O).value, max_finite_abs(f.R.O),
                    storage_atol(p, f.ref.O));
}

// The backward takes the forward's O, which the rule accepts within e = bound_O of the reference
// (forward_o_bound), where the naive backward holds only its own: FlashAttention-2 forms
// D = rowsum(dO * O) from it, and with the loss sum(O^2) its dO = 2 O too. To first order, with
// every entry of O off by at most e:
//   dD_q    = rowsum_x(|dO_qx| + 2 |O_qx| [dO = 2 O]) e          (through O, and through dO)
//   ddP_qk  = 2 e rowsum_x |V_kx| [dO = 2 O]                      (dP = dO V^T)
//   ddV_kx  = 2 e colsum_q P_qk [dO = 2 O]                        (dV = P^T dO)
//   ddS_qk  = P_qk (ddP_qk + dD_q)                                (dS = P (dP - D))
//   ddQ     = scale ddS |K|,   ddK = scale ddS^T |Q|
// Each grows its array's magnitude so that the rule's floor 4 u R admits it: R += d / (4 u).
// In fp32 and fp64 (backward_judge): in bf16 and fp16 the paths form D from O as accumulated in
// fp32, while bound_O there is set by O's rounding to p, which D never sees, and what the
// gradients take from dO held in p the storage tolerance admits. (Before this, random sweeps found
// correct fp64 backwards at d <= 3 failing on D alone, up to 12 u R(D) beyond twice the naive
// error, and on dV at d = 1, scale 10 with dO = 2 O; docs/correctness.md, section 2.)
template <class W>
void inherit_o_error(Magnitudes<W>& R, const ReferenceForward<W>& f, const Mat<W>& Q,
                     const Mat<W>& K, const Mat<W>& V, const Mat<W>& dO, W scale, bool dO_is_2O,
                     double bound_O, Precision p) {
  if (!std::isfinite(bound_O)) return;  // O has no verdict: nor has what it feeds
  const W e = W(bound_O), own = dO_is_2O ? W(1) : W(0);
  const W per_unit = W(1) / W(kRoundingUnits * accumulator_unit(p));
  const Vec<W> dD =
      (dO.cwiseAbs().rowwise().sum() + own * W(2) * f.O.cwiseAbs().rowwise().sum()) * e;
  const Vec<W> ddP_row = own * W(2) * e * V.cwiseAbs().rowwise().sum();  // per key k
  const Mat<W> ddS =
      f.P.cwiseProduct((ddP_row.transpose().replicate(f.P.rows(), 1)).colwise() + dD);
  R.D += dD * per_unit;
  R.dQ += scale * (ddS * K.cwiseAbs()) * per_unit;
  R.dK += scale * (ddS.transpose() * Q.cwiseAbs()) * per_unit;
  const Vec<W> ddV = own * W(2) * e * f.P.colwise().sum().transpose();  // per key k, every x
  R.dV += ddV.replicate(1, R.dV.cols()) * per_unit;
}

// dO_given: n x d, or null for dO = 2 O (each run its own O). `stored` as for the forward.
template <class T>
BackwardJudge<T> backward_judge(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                const Mat<T>* dO_given, const AttnParams& params, Precision stored,
                                index_t merges = 0);

// dQ: n x d, dK, dV: m x d, D: n (empty: not judged), in precision p.
template <class T>
RunVerdict judge_backward(const BackwardJudge<T>& j, const MatView<T>& dQ, const MatView<T>& dK,
                          const MatView<T>& dV, const VecView<T>& D, Precision p);

// The first entry of X that is not finite where X_ref is: a value that the run made non-finite
// from finite inputs (never written to a file, never shown beside a pass). -1: none.
template <class A, class B>
index_t first_nonfinite(const Eigen::DenseBase<A>& X, const Eigen::DenseBase<B>& ref) {
  for (index_t k = 0; k < X.size(); ++k) {
    const auto x = X.derived().data()[k];
    const auto r = ref.derived().data()[k];
    if (!std::isfinite(double(x)) && std::isfinite(double(r))) return k;
  }
  return -1;
}

}  // namespace fd
