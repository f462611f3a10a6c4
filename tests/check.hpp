// check.hpp — the one tolerance helper of the tests: compares arrays by the correctness rule
// (compare.hpp) and prints the first mismatches (index, value, expected) so a failure says where
// it went wrong. Every path is checked against the reference in a wider type (wider_t), never
// against another fast path.
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "flashdemo/attention.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/reference/reference.hpp"

namespace fd::test {

// |x - ref| <= tol everywhere (equal infinities agree); reports up to 5 mismatches.
template <class A, class B>
void check_close(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref, double tol,
                 const std::string& what) {
  using W = std::common_type_t<typename A::Scalar, typename B::Scalar>;
  REQUIRE(x.rows() == ref.rows());
  REQUIRE(x.cols() == ref.cols());
  std::ostringstream first;
  int bad = 0;
  for (index_t r = 0; r < x.rows(); ++r) {
    for (index_t c = 0; c < x.cols(); ++c) {
      const W v = W(x.derived()(r, c)), e = W(ref.derived()(r, c));
      if (!(abs_error(v, e) <= tol) && ++bad <= 5)
        first << "  " << what << "(" << r << "," << c << ") = " << double(v) << ", expected "
              << double(e) << "\n";
    }
  }
  INFO(what << ": " << bad << " entries off by more than " << tol << "\n" << first.str());
  CHECK(bad == 0);
}

// The rule for one array of a path in precision p: `got` against the wider `ref`, the bound from
// the naive path's error in p (`naive`, against the same ref) and the magnitude R of the terms
// (floor_magnitudes), with the storage tolerance where the array is held in p (every array
// but L). A finite yardstick is required.
template <class A, class B, class C, class M>
void check_rule(Precision p, const Eigen::DenseBase<A>& got, const Eigen::DenseBase<B>& ref,
                const Eigen::DenseBase<C>& naive, const Eigen::DenseBase<M>& R,
                const std::string& what, Held held) {
  const RuleVerdict v = judge(p, got, ref, naive, R, held);
  INFO(what << ": error " << v.err << ", naive " << v.naive << ", floor " << v.floor << ", bound "
            << v.bound);
  REQUIRE(v.outcome != Outcome::no_verdict);
  check_close(got, ref, v.bound, what);
}

template <class T, class A, class B, class C, class M>
void check_rule(const Eigen::DenseBase<A>& got, const Eigen::DenseBase<B>& ref,
                const Eigen::DenseBase<C>& naive, const Eigen::DenseBase<M>& R,
                const std::string& what, Held held) {
  check_rule(precision_of<T>(), got, ref, naive, R, what, held);
}

// One head's problem, and what a path computed for it (gradients empty when not checked).
template <class T>
struct Problem {
  Mat<T> Q, K, V, dO;  // dO empty: forward only
  AttnParams params;
};

template <class T>
struct Outputs {
  Mat<T> O;
  Vec<T> L;
  Mat<T> dQ, dK, dV;
};

// The reference in wider_t<T> (with the magnitudes of its terms, and those the rule's floor takes:
// floor_magnitudes) and the naive (materializing) path in T, computed once.
template <class T>
struct Expected {
  using W = wider_t<T>;
  ReferenceForward<W> rf;
  ReferenceBackward<W> rb;
  Magnitudes<W> terms, R;  // reference_magnitudes; floor_magnitudes of them
  ReferenceForward<T> nf;
  ReferenceBackward<T> nb;
  explicit Expected(const Problem<T>& p, Precision stored = Precision::fp64)
      : rf(reference_forward<W>(p.Q.template cast<W>(), p.K.template cast<W>(),
                                p.V.template cast<W>(), p.params)),
        terms(reference_magnitudes<W>(p.Q.template cast<W>(), p.K.template cast<W>(),
                                      p.V.template cast<W>(), p.dO.template cast<W>(), rf,
                                      p.params)),
        R(floor_magnitudes(terms, p.Q.rows(), p.K.rows())),
        nf(reference_forward<T>(p.Q, p.K, p.V, p.params, stored)) {
    if (!p.dO.size()) return;
    rb = reference_backward<W>(p.Q.template cast<W>(), p.K.template cast<W>(),
                               p.V.template cast<W>(), p.dO.template cast<W>(), p.params);
    nb = reference_backward<T>(p.Q, p.K, p.V, p.dO, p.params, stored);
  }
  // The magnitudes of a run that merges normalized parts of each row through their logsumexps
  // in `merges` rounded steps (split-KV, the ring: floor_magnitudes).
  void merged(index_t keys, index_t merges) {
    R = floor_magnitudes(terms, rf.O.rows(), keys, merges);
  }
  // Drops the n x m matrices (S, P, dP, dS) once only the outputs are compared.
  void compact() {
    for (auto* X : {&rf.S, &rf.P, &rb.dP, &rb.dS}) X->resize(0, 0);
    for (auto* X : {&nf.S, &nf.P, &nb.dP, &nb.dS}) X->resize(0, 0);
  }
};

// The rule on every array a path returned, in precision p (default: T's own).
template <class T>
void check_outputs(const Outputs<T>& got, const Expected<T>& e, const std::string& path,
                   Precision p = precision_of<T>()) {
  check_rule(p, got.O, e.rf.O, e.nf.O, e.R.O, path + " O", Held::in_p);
  check_rule(p, got.L, e.rf.L, e.nf.L, e.R.L, path + " L", Held::wide);
  if (!got.dQ.size()) return;
  check_rule(p, got.dQ, e.rb.dQ, e.nb.dQ, e.R.dQ, path + " dQ", Held::in_p);
  check_rule(p, got.dK, e.rb.dK, e.nb.dK, e.R.dK, path + " dK", Held::in_p);
  check_rule(p, got.dV, e.rb.dV, e.nb.dV, e.R.dV, path + " dV", Held::in_p);
}

}  // namespace fd::test
