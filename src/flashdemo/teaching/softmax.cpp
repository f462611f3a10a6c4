// softmax.cpp — online and three-pass softmax of one vector (see softmax.hpp).
#include "flashdemo/teaching/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fd {

template <class T>
RowState<T> online_softmax_stats(const std::vector<T>& x, index_t block, TraceSink* sink) {
  // x: n values -> (m, l)
  RowState<T> state;
  std::vector<T> buf(block);
  const index_t n = index_t(x.size());
  for (index_t b = 0; b * block < n; ++b) {
    const Range r{b * block, std::min(n, (b + 1) * block)};
    std::copy(x.begin() + r.begin, x.begin() + r.end, buf.begin());
    const T m_old = state.m;
    const T alpha = state.update(buf.data(), r.size());  // m_new, alpha, l <- block b
    if (sink)
      sink->on(
          SoftmaxBlockEvent{b, r, double(m_old), double(state.m), double(alpha), double(state.l)});
  }
  return state;
}

template <class T>
std::vector<T> softmax_from_state(const std::vector<T>& x, const RowState<T>& state) {
  std::vector<T> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = shifted_exp(x[i], state.m) / state.l;
  return y;
}

template <class T>
std::vector<T> softmax_three_pass(const std::vector<T>& x) {
  const T M = *std::max_element(x.begin(), x.end());  // pass 1: the max
  T Z = T(0);
  for (T v : x) Z += shifted_exp(v, M);  // pass 2: the sum
  std::vector<T> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = shifted_exp(x[i], M) / Z;  // pass 3: normalize
  return y;
}

template <class T>
T logsumexp_direct(const std::vector<T>& x) {
  const T M = *std::max_element(x.begin(), x.end());
  if (is_neg_inf(M)) return M;
  T Z = T(0);
  for (T v : x) Z += fexp(v - M);
  return M + flog(Z);  // log sum exp(x) = M + log sum exp(x - M)
}

template <class T>
NaiveSoftmax<T> softmax_naive(const std::vector<T>& x) {
  NaiveSoftmax<T> r;
  r.overflow_above = flog(std::numeric_limits<T>::max());
  r.underflow_below = flog(std::numeric_limits<T>::denorm_min());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const T e = fexp(x[i]);
    if (std::isinf(e) && r.culprit < 0) r.culprit = index_t(i);
    r.Z += e;
  }
  if (r.Z == T(0)) r.culprit = 0;
  for (T v : x) r.y.push_back(fexp(v) / r.Z);
  for (T v : r.y) r.nonfinite += std::isfinite(v) ? 0 : 1;
  return r;
}

#define FD_INSTANTIATE(T)                                                                \
  template RowState<T> online_softmax_stats(const std::vector<T>&, index_t, TraceSink*); \
  template std::vector<T> softmax_from_state(const std::vector<T>&, const RowState<T>&); \
  template std::vector<T> softmax_three_pass(const std::vector<T>&);                     \
  template T logsumexp_direct(const std::vector<T>&);                                    \
  template NaiveSoftmax<T> softmax_naive(const std::vector<T>&);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd
