// softmax.hpp — softmax of one vector, two ways (lecture demo 1).
//
// Three passes (standard):  M = max_i x_i;  Z = sum_i exp(x_i - M);  y_i = exp(x_i - M) / Z
// Naive (no max):          Z = sum_i exp(x_i);  y_i = exp(x_i) / Z: exp overflows to inf past
//                           x = log(max T) (88.72 in fp32), or Z underflows to 0, and y = nan.
// One pass (online):        blocks of size B fold into RowState (m, l); y_i = exp(x_i - m) / l
//                           and logsumexp(x) = m + log(l).
#pragma once

#include <vector>

#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/teaching/trace.hpp"

namespace fd {

// The online pass over x in blocks of `block` (>= 1). Emits a SoftmaxBlockEvent per block.
template <class T>
RowState<T> online_softmax_stats(const std::vector<T>& x, index_t block, TraceSink* sink = nullptr);

// y_i = exp(x_i - m) / l from a finished state.
template <class T>
std::vector<T> softmax_from_state(const std::vector<T>& x, const RowState<T>& state);

// The three-pass softmax and the logsumexp it implies (M + log Z), computed directly.
template <class T>
std::vector<T> softmax_three_pass(const std::vector<T>& x);
template <class T>
T logsumexp_direct(const std::vector<T>& x);

// The naive softmax, computed in T as a program without m would: what it gives and where it broke.
template <class T>
struct NaiveSoftmax {
  std::vector<T> y;          // exp(x_i) / Z
  T Z = T(0);                // sum_i exp(x_i): inf on overflow, 0 when every term underflows
  index_t culprit = -1;      // the first i whose exp(x_i) is inf (overflow) or, when Z = 0, 0
  index_t nonfinite = 0;     // how many y_i are nan or inf
  T overflow_above = T(0);   // log(max T): exp(x) is inf for larger x
  T underflow_below = T(0);  // log(smallest subnormal T): exp(x) is 0 for smaller x
  bool broke() const { return nonfinite > 0; }
};
template <class T>
NaiveSoftmax<T> softmax_naive(const std::vector<T>& x);

}  // namespace fd
