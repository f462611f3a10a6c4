// attention.hpp — the problem every path solves, and the types its arrays live in.
//
//   Q: n x d,  K: m x d,  V: m x d          (row-major, one head)
//   S = scale * Q K^T (n x m), masked entries -inf,   P = softmax_rows(S),   O = P V (n x d)
//   L_q = logsumexp_k S_qk                  (n), -inf for a row that sees no key
//   scale defaults to 1 / sqrt(d).
#pragma once

#include <Eigen/Core>
#include <cmath>

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/params.hpp"

namespace fd {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;

template <class T>
struct ForwardResult {
  Mat<T> O;           // n x d
  Vec<T> L;           // n, logsumexp of each row of S (the value saved and graded)
  Vec<T> L_lo;        // n, L's rounding error: L + L_lo is m + log l to twice T's precision (empty:
                      // not kept, taken as 0)
  Mat<T> O_acc = {};  // n x d, O before it is rounded to a lower output precision (bf16, fp16):
                      // the backward's D = rowsum(dO * O) reads it (empty: O is not rounded)
};

}  // namespace fd
