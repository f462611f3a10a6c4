// flashdemo/host_device/base.hpp — the portability layer shared by the CPU library and the CUDA
// kernels.
//
//   FD_HOST_DEVICE      = __host__ __device__ inline under nvcc, inline elsewhere
//   FD_UNROLL           = #pragma unroll in nvcc's device pass (a loop of constant count,
//                         unrolled so that its loads can be in flight together), nothing elsewhere
//   ceil_div(a, b)      = ceil(a / b) for a >= 0, b > 0      (number of tiles covering a)
//   fexp, flog          = exp / log chosen by precision, callable on host and device (and for
//                         long double, the fp64 reference's type, on the host); on the host the
//                         portable ones (portable_math.hpp), the same bits on every machine
//   neg_inf<T>()        = -infinity, the value of a masked score (never a finite sentinel)
//   fmadd(a, b, c)      = a * b + c, fused wherever the machine can (one rounding)
//   fmul(a, b)          = a * b, rounded, never fused into what follows
#pragma once

#include <cmath>
#include <cstdint>

#include "flashdemo/host_device/portable_math.hpp"

#if defined(__CUDACC__)
#define FD_HOST_DEVICE __host__ __device__ inline
#else
#define FD_HOST_DEVICE inline
#endif
#if defined(__CUDA_ARCH__)  // nvcc's device pass (its host pass hands the code to g++)
#define FD_UNROLL _Pragma("unroll")
#else
#define FD_UNROLL
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

#if defined(__CUDA_ARCH__)
#define FD_PORTABLE_OR(device_call, host_call) device_call
#else
#define FD_PORTABLE_OR(device_call, host_call) host_call
#endif
FD_HOST_DEVICE float fexp(float x) {
  return FD_PORTABLE_OR(::expf(x), portable::exp(x));
}
FD_HOST_DEVICE double fexp(double x) {
  return FD_PORTABLE_OR(::exp(x), portable::exp(x));
}
FD_HOST_DEVICE float flog(float x) {
  return FD_PORTABLE_OR(::logf(x), portable::log(x));
}
FD_HOST_DEVICE double flog(double x) {
  return FD_PORTABLE_OR(::log(x), portable::log(x));
}
#undef FD_PORTABLE_OR
#if !defined(__CUDACC__)
// long double: the wider reference that fp64 paths are judged against (host only).
inline long double fexp(long double x) {
  return portable::exp(x);
}
inline long double flog(long double x) {
  return portable::log(x);
}
#endif

// a * b + c rounded once, on every machine: the FMA instruction where the build targets one (every
// GPU; x86-64-v3 and up), else the C library's fma (the instruction where the CPU has it, an exact
// emulation where not). In long double twice (x87 has no fused multiply-add). Written out so that
// no compiler decides loop by loop which of the two it emits (the library is built with
// -ffp-contract=off): every dot product of every path, and the reference's products, round the
// same way on every machine.
FD_HOST_DEVICE float fmadd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}
FD_HOST_DEVICE double fmadd(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return fma(a, b, c);
#else
  return __builtin_fma(a, b, c);
#endif
}
#if !defined(__CUDACC__)
inline long double fmadd(long double a, long double b, long double c) {
  return a * b + c;
}
#endif

// a * b rounded as stored, which no compiler may fuse into the add or subtract that follows
// (nvcc would turn S - L with S = scale * dot into one fma, and S would differ by an ulp from the
// S the forward stored: P = exp(S - L) of the max key would no longer be exactly 1).
FD_HOST_DEVICE float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  float p = a * b;
#if defined(__x86_64__)
  asm("" : "+x"(p));  // the product leaves the register as a rounded float
#endif
  return p;
#endif
}
FD_HOST_DEVICE double fmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  double p = a * b;
#if defined(__x86_64__)
  asm("" : "+x"(p));
#endif
  return p;
#endif
}
#if !defined(__CUDACC__)
inline long double fmul(long double a, long double b) {
  return a * b;  // x87 has no fused multiply-add
}
#endif

template <class T>
FD_HOST_DEVICE T fmax2(T a, T b) {
  return a < b ? b : a;
}

template <class T>
FD_HOST_DEVICE T fmin2(T a, T b) {
  return b < a ? b : a;
}

}  // namespace fd
