// grade.hpp — grading arrays someone else computed (an assignment) with DESIGN.md's rule, and
// diagnosing the classic mistakes behind a failure.
//
// For each submitted array X (O, L, dQ, dK or dV) in precision p:
//   err   = max |X - X_ref|, X_ref from the fp64 reference on the same Q, K, V (and dO)
//   pass  when err <= 1e-12 * max(1, max|X_ref|)            (p = fp64)
//          or  err <= 2 * err_naive(p) + 1e-6               (p = fp32, bf16, fp16)
//   err_naive(p): the error of standard attention computed in p (inputs rounded to p, S, P
//   stored in p, fp32 arithmetic), against the same fp64 reference.
// A failing array is compared with what each classic mistake would have produced (a missing or
// extra mask, the other alignment, no 1/sqrt(d), the --break mistakes at common tile sizes, ...);
// the first one it matches within the same bound is its diagnosis.
#pragma once

#include <map>

#include "flashdemo/attention.hpp"
#include "flashdemo/precision.hpp"
#include "flashdemo/reference.hpp"
#include "flashdemo/tiling.hpp"
#include "flashdemo/variant.hpp"

namespace fd {

enum class ArrayKind { O, L, dQ, dK, dV };

enum class Diagnosis {
  none,          // no known pattern
  has_nan,       // NaN or inf in the array
  wrong_shape,   // not the reference's shape
  transposed,    // the reference's shape transposed
  missing_mask,  // matches attention without the causal mask
  extra_mask,    // matches causal attention where none was asked for
  wrong_align,   // matches the other causal alignment
  unscaled,      // matches scores without the scale
  l_is_max,      // L equals the row max m instead of m + log(l)
  rows_scaled,   // each row of O off by its own factor (normalization)
  no_max,        // the --break mistakes
  no_rescale,
  l_starts_at_1,
  finite_mask,
  no_d,
  grad_unscaled,  // dQ or dK off by the factor scale
};

struct Grade {
  bool pass = false;
  double err = 0;  // max |X - X_ref|
  index_t worst_row = 0, worst_col = 0;
  index_t first_bad_row = -1;  // first row with an entry above the bound
  double bound = 0;            // what err had to stay under
  double naive_err = 0;        // err of the naive path in the same precision (0 for fp64)
  Diagnosis diagnosis = Diagnosis::none;
};

struct CheckProblem {
  Mat<double> Q, K, V;  // n x d, m x d, m x d
  Mat<double> dO;       // n x d, empty when no gradient is graded
  AttnParams params;
};

class Grader {
 public:
  explicit Grader(CheckProblem problem);
  // X: the submission (L as n x 1). Shapes that do not match fail with wrong_shape/transposed.
  Grade grade(ArrayKind kind, const Mat<double>& X, Precision p);
  const Mat<double>& expected(ArrayKind kind) const;
  const CheckProblem& problem() const { return problem_; }

 private:
  struct Outputs {
    Mat<double> O, L, dQ, dK, dV;
    const Mat<double>& get(ArrayKind kind) const;
  };
  Outputs naive(Precision p);
  Outputs run(const AttnParams& params, Mistake mistake, TileSizes tiles) const;
  Outputs reference(const AttnParams& params) const;
  Diagnosis diagnose(ArrayKind kind, const Mat<double>& X, double bound) const;

  CheckProblem problem_;
  Outputs ref_;
  std::map<Precision, Outputs> naive_;
};

}  // namespace fd
