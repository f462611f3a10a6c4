// check.hpp — the one tolerance helper of the tests: compares arrays and prints the first
// mismatches (index, value, expected) so a failure says where it went wrong.
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "flashdemo/attention.hpp"
#include "flashdemo/compare.hpp"

namespace fd::test {

// |x - ref| <= tol everywhere (equal infinities agree); reports up to 5 mismatches.
template <class A, class B>
void check_close(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref, double tol,
                 const std::string& what) {
  REQUIRE(x.rows() == ref.rows());
  REQUIRE(x.cols() == ref.cols());
  std::ostringstream first;
  int bad = 0;
  for (index_t r = 0; r < x.rows(); ++r) {
    for (index_t c = 0; c < x.cols(); ++c) {
      const double v = double(x.derived()(r, c)), e = double(ref.derived()(r, c));
      if (!(abs_error(v, e) <= tol) && ++bad <= 5)
        first << "  " << what << "(" << r << "," << c << ") = " << v << ", expected " << e << "\n";
    }
  }
  INFO(what << ": " << bad << " entries off by more than " << tol << "\n" << first.str());
  CHECK(bad == 0);
}

// The bound DESIGN.md's rule gives a path in precision T, against the double reference.
template <class T>
double tolerance(double ref_max_abs, double err_naive) {
  if constexpr (std::is_same_v<T, double>) return double_bound(ref_max_abs);
  return two_x_bound(err_naive);
}

// DESIGN.md's rule for one array of a path in precision T: `got` against the fp64 `ref`, the
// bound from the size of `ref` (fp64) or from the naive path's error in T (`naive`, lower ones).
template <class T, class A, class B, class C>
void check_rule(const Eigen::DenseBase<A>& got, const Eigen::DenseBase<B>& ref,
                const Eigen::DenseBase<C>& naive, const std::string& what) {
  check_close(got, ref,
              tolerance<T>(ref.derived().cwiseAbs().maxCoeff(),
                           max_abs_error(naive.derived(), ref.derived()).value),
              what);
}

}  // namespace fd::test
