// batch.hpp — grading arrays of many heads at once, as assignments save them: Q, K, V, dO, O,
// dQ, dK, dV of shape (n, d), (b, n, d) or (b, h, n, d), and L of shape (n), (b, n) or (b, h, n).
// The leading dimensions ((), (b) or (b, h)) index the heads; each head is one problem of
// grade.hpp:
//   head k          the k-th set of leading indices in row-major order (k = b_i h + h_i)
//   X_k             X's entries under those indices: a matrix, or for L a vector (one column)
//   grade_k(X)      Grader(Q_k, K_k, V_k, dO_k).grade(X_k)          (grade.hpp)
//   verdict of X    pass when every head passes
//   shown head      the one whose verdict is worst: a failing head before a head with no
//                   verdict before a passing one, and among equals the largest err / bound
//   first failing   the lowest k that fails: its diagnosis is the hint
// One head's reference is held in memory at a time.
#pragma once

#include <string>
#include <vector>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/judge/grade.hpp"

namespace fd {

// An array cut into heads: its leading dimensions and each head's values, row-major (a head of
// one dimension, L, as a column).
struct Heads {
  std::vector<index_t> lead;
  std::vector<Mat<double>> heads;
};

// X cut after its first lead_dims dimensions (X has more than lead_dims, at most lead_dims + 2).
Heads split_heads(const NpyArray& X, std::size_t lead_dims);

// The leading indices of head k, e.g. {1, 3} for k = 7 of lead (2, 4); {} with no lead.
std::vector<index_t> head_index(const std::vector<index_t>& lead, index_t k);

// X's shape with its first two dimensions after the batch swapped: (b, n, h, d) for (b, h, n, d),
// PyTorch's layout of the same heads. Empty unless X has 4 dimensions.
std::vector<index_t> torch_layout(const std::vector<index_t>& shape);

struct BatchGrade {
  Grade shown;  // the grade of the shown head
  index_t shown_head = 0;
  index_t first_failing = -1;  // -1: none fails
  Grade first_failing_grade;
  index_t heads = 0, passed = 0, no_verdict = 0;
  bool pass() const { return heads > 0 && passed == heads; }
  // The grade whose diagnosis and first wrong row explain the array: the first failing head's,
  // else the shown one's.
  const Grade& hinted() const { return first_failing >= 0 ? first_failing_grade : shown; }
};

struct Submission {
  ArrayKind kind;
  Precision precision;
  const Heads* X;  // the same leading dimensions as Q
};

// Every submission graded head by head (tiles: the submitter's tile sizes, replayed first by the
// diagnoses). Q, K, V (and dO when given, else nullptr) share their
// leading dimensions; so does each submission.
std::vector<BatchGrade> grade_heads(const Heads& Q, const Heads& K, const Heads& V, const Heads* dO,
                                    const AttnParams& params,
                                    const std::vector<Submission>& submissions,
                                    const std::vector<TileSizes>& tiles = {});

}  // namespace fd
