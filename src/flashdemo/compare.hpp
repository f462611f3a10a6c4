// compare.hpp — error metrics and DESIGN.md's correctness rule.
//
//   err(X) = max_k |X_k - X_ref_k|   with X_ref in double; equal infinities count as 0 apart
//   A path in double passes when err <= 1e-12 * max(1, max|X_ref|)        (relative 1e-12)
//   A path in a lower precision passes when err <= 2 * err_naive + 1e-6, err_naive being the
//   error of the materializing implementation run in that same precision.
#pragma once

#include <Eigen/Core>
#include <cmath>

#include "flashdemo/host_device.hpp"

namespace fd {

struct MaxError {
  double value = 0;   // max |x - ref|
  index_t index = 0;  // flat index of the worst element
};

// Pointwise |x - ref| with -inf vs -inf (a fully masked row's L) counted as 0 and NaN as inf.
inline double abs_error(double x, double ref) {
  if (x == ref) return 0;
  const double e = std::abs(x - ref);
  return std::isnan(e) ? INFINITY : e;
}

template <class A, class B>
MaxError max_abs_error(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref) {
  MaxError worst;
  const auto& xd = x.derived();
  const auto& rd = ref.derived();
  for (index_t r = 0; r < xd.rows(); ++r) {
    for (index_t c = 0; c < xd.cols(); ++c) {
      const double e = abs_error(double(xd(r, c)), double(rd(r, c)));
      if (e > worst.value) worst = {e, r * xd.cols() + c};
    }
  }
  return worst;
}

// Rows of x with at least one entry more than tol from ref.
template <class A, class B>
index_t rows_above(const Eigen::DenseBase<A>& x, const Eigen::DenseBase<B>& ref, double tol) {
  index_t count = 0;
  for (index_t r = 0; r < x.rows(); ++r) {
    bool off = false;
    for (index_t c = 0; c < x.cols() && !off; ++c)
      off = !(abs_error(double(x.derived()(r, c)), double(ref.derived()(r, c))) <= tol);
    count += off;
  }
  return count;
}

constexpr double kDoubleRelTol = 1e-12;
constexpr double kNaiveFactor = 2.0;
constexpr double kAbsSlack = 1e-6;

// The bound a lower-precision path must meet given the naive implementation's error.
inline double two_x_bound(double err_naive) {
  return kNaiveFactor * err_naive + kAbsSlack;
}

// The bound a double path must meet given the size of the reference values.
inline double double_bound(double ref_max_abs) {
  return kDoubleRelTol * (ref_max_abs > 1 ? ref_max_abs : 1.0);
}

}  // namespace fd
