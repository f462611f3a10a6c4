// exp_row.hpp — one row of scores turned into P, in place, by whole vectors (the fast path's
// softmax pass; fast_attention.cpp):
//   P[k] = exp((round(scale S[k]) - shift) - lo)  for k < keep,   P[k] = 0  for keep <= k < cols,
//   returns sum_k P[k]
// shift is the row's running maximum m (forward) or its logsumexp L (backward, where lo is L's
// rounding error); exp is exp_vector (vector_exp.hpp) for float, Eigen's for double; the row sum
// is a tree over the vector's lanes (lane_sum). Header-only so that scripts/exp_mca.sh can compile
// the loop itself.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "flashdemo/fast/level_namespace.hpp"
#include "flashdemo/fast/tile_product.hpp"
#include "flashdemo/fast/vector_exp.hpp"

namespace fd::fast {
inline namespace FD_FAST_LEVEL {

// exp on one vector: ours for float (vector_exp.hpp, within 1.06 ulp), Eigen's for double.
template <class T>
typename Simd<T>::V exp_lanes(typename Simd<T>::V x) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_vector(x);
  } else {
    Eigen::Array<T, Simd<T>::W, 1> a;
    std::memcpy(a.data(), &x, sizeof x);
    a = a.exp();
    std::memcpy(&x, a.data(), sizeof x);
    return x;
  }
}

// The sum of a vector's lanes, pairwise: a tree of depth log2 W, not a chain of W additions. Each
// level adds the upper half of the lanes to the lower half (lane x + w to lane x), as vectors.
template <class T, int N>
struct Lanes {
  typedef T V __attribute__((vector_size(N * sizeof(T))));
};

template <class T, int N, std::size_t... X>
T halves_sum(typename Lanes<T, N>::V v, std::index_sequence<X...>) {
  const typename Lanes<T, N / 2>::V half =
      __builtin_shufflevector(v, v, X...) + __builtin_shufflevector(v, v, (X + N / 2)...);
  if constexpr (N == 2) {
    return half[0];
  } else {
    return halves_sum<T, N / 2>(half, std::make_index_sequence<N / 4>());
  }
}

template <class T>
T lane_sum(typename Simd<T>::V v) {
  constexpr int W = int(Simd<T>::W);
  return halves_sum<T, W>(v, std::make_index_sequence<W / 2>());
}

// v as it is, rounded to T: the compiler may not fuse the product that made it into the next
// addition (the kernels compile with -ffp-contract=fast, and the scale must round once, alone).
template <class V>
V rounded(V v) {
  asm("" : "+v"(v));
  return v;
}

// v on lanes [0, count), 0 on the rest.
template <class T>
typename Simd<T>::V first_lanes(typename Simd<T>::V v, index_t count) {
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  typedef I VI __attribute__((vector_size(kSimdBytes)));
  VI lane;
  for (index_t x = 0; x < Simd<T>::W; ++x) lane[x] = I(x);
  return lane < I(count) ? v : typename Simd<T>::V{};
}

// P = exp((scale S - shift) - lo) on S[0, keep), 0 on S[keep, cols); returns rowsum P. The
// scale rounds once, as in the reference; lo (kLo) is L's rounding error in the backward, absent
// in the forward. Whole vectors from the row's start (the row has room for keep rounded up to whole
// vectors): every score goes through the same instructions wherever the row lies in memory
// (bit-reproducible results). each(k, P[k .. k + W)) is called for every vector formed.
template <bool kLo, class T, class Each>
T exp_row(T* S, index_t keep, index_t cols, T scale, T shift, T lo, Each each) {
  using V = typename Simd<T>::V;
  const index_t W = Simd<T>::W, end = padded<T>(keep);
  const auto arg = [&](const T* s) {
    const V x = rounded(Simd<T>::load(s) * scale) - shift;
    if constexpr (kLo)
      return V(x - lo);
    else
      return x;
  };
  V sum{};
  index_t k = 0;
  for (; k + W <= keep; k += W) {
    const V e = exp_lanes<T>(arg(S + k));
    Simd<T>::store(S + k, e);
    sum += e;
    each(k, e);
  }
  if (k < keep) {  // the last vector: its lanes past keep are masked keys
    const V e = first_lanes<T>(exp_lanes<T>(arg(S + k)), keep - k);
    Simd<T>::store(S + k, e);
    sum += e;
    each(k, e);
  }
  const T rowsum = lane_sum<T>(sum);  // before the call below, which would keep sum in memory
  std::fill(S + end, S + std::max(cols, end), T(0));
  return rowsum;
}

}  // namespace FD_FAST_LEVEL
}  // namespace fd::fast
