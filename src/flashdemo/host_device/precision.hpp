// precision.hpp — lower precisions emulated in fp32, on the host and in kernels.
//
// round_to(p, x) returns the float nearest to x that format p can hold, ties to even:
//   bf16: 8 exponent bits, 8 significant bits  -> keep the top 16 bits of the fp32 pattern
//   fp16: 5 exponent bits, 11 significant bits -> max 65504, subnormals below 2^-14 in steps
//         of 2^-24, overflow (|x| >= 65520) to inf
//   fp32 and fp64: x unchanged.
// Matrix products then accumulate in fp32, as tensor cores do.
#pragma once

#include <cstdint>
#include <cstring>

#include "flashdemo/host_device/base.hpp"

namespace fd {

enum class Precision { fp64, fp32, bf16, fp16 };

// fp64, fp32, bf16, fp16: the names used on the command line and in JSON.
inline const char* precision_name(Precision p) {
  const char* names[] = {"fp64", "fp32", "bf16", "fp16"};
  return names[int(p)];
}

// The largest finite value of each format: a value beyond it becomes inf when stored there.
//   fp64 1.797...e308,  fp32 and bf16 3.4e38 (bf16: 3.3895e38),  fp16 65504
inline constexpr double largest_finite(Precision p) {
  switch (p) {
    case Precision::fp64:
      return 1.7976931348623157e308;
    case Precision::fp32:
      return 3.4028234663852886e38;
    case Precision::bf16:
      return 3.3895313892515355e38;
    case Precision::fp16:
      return 65504.0;
  }
  return 0;
}

// The precision a path computing in T works in (bf16 and fp16 are emulated in float).
template <class T>
constexpr Precision precision_of() {
  return sizeof(T) == sizeof(float) ? Precision::fp32 : Precision::fp64;
}

FD_HOST_DEVICE std::uint32_t float_bits(float x) {
  std::uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

FD_HOST_DEVICE float bits_float(std::uint32_t b) {
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}

// Drops the low `drop` bits of the fp32 significand, rounding to nearest even.
FD_HOST_DEVICE float round_significand(float x, int drop) {
  const std::uint32_t b = float_bits(x);
  const std::uint32_t lsb = (b >> drop) & 1u, half = (1u << (drop - 1)) - 1u;
  return bits_float((b + half + lsb) & ~((1u << drop) - 1u));
}

FD_HOST_DEVICE float round_bf16(float x) {
  if (x != x) return x;  // NaN stays NaN
  return round_significand(x, 16);
}

FD_HOST_DEVICE float round_fp16(float x) {
  const float a = x < 0 ? -x : x;
  if (!(a < 65520.0f)) return a == a ? (x < 0 ? -INFINITY : INFINITY) : x;  // overflow, NaN
  if (a < 6.103515625e-05f) {  // subnormal: multiples of 2^-24
    const float q = 5.9604644775390625e-08f;
    const float r = ::rintf(a / q) * q;  // rint rounds ties to even
    return x < 0 ? -r : r;
  }
  return round_significand(x, 13);
}

template <class T>
FD_HOST_DEVICE T round_to(Precision p, T x) {
  if (p == Precision::bf16) return T(round_bf16(float(x)));
  if (p == Precision::fp16) return T(round_fp16(float(x)));
  return x;
}

}  // namespace fd
