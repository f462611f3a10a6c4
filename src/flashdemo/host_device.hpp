// host_device.hpp — the portability layer shared by the CPU library and the CUDA kernels.
//
//   FD_HOST_DEVICE      = __host__ __device__ inline under nvcc, inline elsewhere
//   ceil_div(a, b)      = ceil(a / b) for a >= 0, b > 0      (number of tiles covering a)
//   fexp, flog          = exp / log chosen by precision, callable on host and device
//   neg_inf<T>()        = -infinity, the value of a masked score (never a finite sentinel)
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FD_HOST_DEVICE __host__ __device__ inline
#else
#define FD_HOST_DEVICE inline
#endif

namespace fd {

// Every index and size is 64-bit: n * m and n * d pass 2^31 long before memory runs out.
using index_t = std::int64_t;

FD_HOST_DEVICE constexpr index_t ceil_div(index_t a, index_t b) {
  return (a + b - 1) / b;
}

template <class T>
FD_HOST_DEVICE T neg_inf() {
  return static_cast<T>(-INFINITY);
}

template <class T>
FD_HOST_DEVICE bool is_neg_inf(T x) {
  return x == neg_inf<T>();
}

FD_HOST_DEVICE float fexp(float x) {
  return ::expf(x);
}
FD_HOST_DEVICE double fexp(double x) {
  return ::exp(x);
}
FD_HOST_DEVICE float flog(float x) {
  return ::logf(x);
}
FD_HOST_DEVICE double flog(double x) {
  return ::log(x);
}

template <class T>
FD_HOST_DEVICE T fmax2(T a, T b) {
  return a < b ? b : a;
}

template <class T>
FD_HOST_DEVICE T fmin2(T a, T b) {
  return b < a ? b : a;
}

}  // namespace fd
