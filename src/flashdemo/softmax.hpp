// softmax.hpp — softmax of one vector, two ways (lecture demo 1).
//
// Three passes (standard):  M = max_i x_i;  Z = sum_i exp(x_i - M);  y_i = exp(x_i - M) / Z
// One pass (online):        blocks of size B fold into RowState (m, l); y_i = exp(x_i - m) / l
//                           and logsumexp(x) = m + log(l).
#pragma once

#include <vector>

#include "flashdemo/online_softmax.hpp"
#include "flashdemo/trace.hpp"

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

}  // namespace fd
