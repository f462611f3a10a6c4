// grade.hpp — grading arrays someone else computed (an assignment) by the correctness rule
// (compare.hpp), and diagnosing the classic mistakes behind a failure.
//
// For each submitted array X (O, L, dQ, dK or dV) judged in precision p:
//   X_ref    from the reference in long double (wider than every precision judged), same inputs
//   err      = max |X - X_ref|
//   naive    = the error of standard attention computed in p (inputs rounded to p, S and P
//              stored in p, fp32 arithmetic below fp64, fp64 arithmetic in fp64)
//   verdict  = pass when err <= 2 naive + floor (compare.hpp: the floor follows the magnitude of
//              the terms each entry sums); no verdict when naive is not finite.
// A failing array is compared with what each classic mistake would have produced (a missing or
// extra mask, the other alignment, no 1/sqrt(d), a base-2 L, the --break mistakes at common tile
// sizes, ...). A mistake is named only when X matches it within a tolerance tol and the mistake
// itself lies more than 10 tol from the reference (a mistake that cannot change this array, such
// as forgetting D for O, never explains it). Otherwise the hint is the first wrong row.
#pragma once

#include <map>
#include <vector>

#include "flashdemo/attention.hpp"
#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/variant.hpp"

namespace fd {

enum class ArrayKind { O, L, dQ, dK, dV };

enum class Diagnosis {
  none,           // no known pattern: the first wrong row is the hint
  has_nan,        // NaN, or inf where the reference is finite
  wrong_shape,    // not the reference's shape
  transposed,     // the reference's shape transposed
  missing_mask,   // matches attention without the causal mask
  extra_mask,     // matches causal attention where none was asked for
  unscaled,       // matches scores without the scale
  l_is_max,       // L equals the row max m instead of m + log(l)
  l_base2,        // L in base 2: log2 of the sum of exp, L / ln 2
  rows_scaled,    // each row of O off by its own positive factor (normalization)
  grad_unscaled,  // dQ or dK off by the factor scale
  as_fp32,        // fails in fp64 but passes fp32's rule: fp32 rounding, or a bug as small
  as_fp16,        // fails in fp32 or fp64 but passes fp16's rule
  as_bf16,        // ... bf16's
// The --break mistakes, one each (FD_MISTAKES, variant.hpp); wrong_align: matches the other
// causal alignment.
#define FD_DIAGNOSIS_ID(id, ...) id,
  FD_MISTAKES(FD_DIAGNOSIS_ID)
#undef FD_DIAGNOSIS_ID
};

// The diagnosis that names a --break mistake (none for Mistake::none).
constexpr Diagnosis diagnosis_of(Mistake mistake) {
  switch (mistake) {
#define FD_DIAGNOSIS_OF(id, ...) \
  case Mistake::id:              \
    return Diagnosis::id;
    FD_MISTAKES(FD_DIAGNOSIS_OF)
#undef FD_DIAGNOSIS_OF
    case Mistake::none:
      break;
  }
  return Diagnosis::none;
}

struct Grade {
  Outcome outcome = Outcome::fail;
  bool pass = false;
  double err = 0;  // max |X - X_ref|
  index_t worst_row = 0, worst_col = 0;
  index_t first_bad_row = -1;  // first row with an entry above the bound (-1: none)
  double bound = 0;            // what err had to stay under (inf: no verdict)
  double naive_err = 0;        // err of the naive path in the same precision
  Diagnosis diagnosis = Diagnosis::none;
};

struct CheckProblem {
  Mat<double> Q, K, V;  // n x d, m x d, m x d
  Mat<double> dO;       // n x d, empty when no gradient is graded
  AttnParams params;
  std::vector<TileSizes> tiles = {};  // the submitter's tile sizes, replayed first (may be none)
};

// The tile sizes the tiled mistakes are replayed at: the submitter's, then the common ones.
std::vector<TileSizes> replayed_tiles(const std::vector<TileSizes>& given);

// Whether the diagnoses replay mistakes on an n x m problem of head dim d (they rerun the
// algorithm several times: only below 2^26 score-times-dim entries).
bool diagnoses_replay(index_t n, index_t m, index_t d);

// Across the gradients of one run: dV right while dQ and dK fail with no diagnosis of their own
// places the bug in dS = P (dP - D), the step dQ and dK share and dV does not (D = rowsum(dO O),
// dP = dO V^T).
constexpr bool points_at_ds(bool dV_pass, bool dQ_pass, Diagnosis dQ, bool dK_pass, Diagnosis dK) {
  return dV_pass && !dQ_pass && !dK_pass && dQ == Diagnosis::none && dK == Diagnosis::none;
}

class Grader {
 public:
  explicit Grader(CheckProblem problem);
  // X: the submission (L as n x 1). Shapes that do not match fail with wrong_shape/transposed.
  Grade grade(ArrayKind kind, const Mat<double>& X, Precision p);
  // The reference array, rounded to double.
  Mat<double> expected(ArrayKind kind) const;
  const CheckProblem& problem() const { return problem_; }

 private:
  template <class T>
  struct Outputs {
    Mat<T> O, L, dQ, dK, dV;
    const Mat<T>& get(ArrayKind kind) const;
  };
  using Ref = long double;
  const Outputs<double>& naive(Precision p);
  // The rule's storage tolerance of an array in p (compare.hpp: storage_atol; none for L).
  double atol(ArrayKind kind, Precision p) const;
  Outputs<double> run(const AttnParams& params, Mistake mistake, TileSizes tiles) const;
  template <class T>
  Outputs<T> reference(const AttnParams& params) const;
  Diagnosis diagnose(ArrayKind kind, const Mat<double>& X, double tol) const;

  CheckProblem problem_;
  Outputs<Ref> ref_;
  Outputs<Ref> magnitude_;  // the rule's floor's (floor_magnitudes of the reference's terms)
  std::map<Precision, Outputs<double>> naive_;
};

}  // namespace fd
