// portable_math.cpp — exp and log from +, -, *, / and fma alone (see portable_math.hpp for the
// equations and why). Compiled with -ffp-contract=off like the rest of the library outside fast/:
// every fused multiply-add here is written out.
#include "flashdemo/host_device/portable_math.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace fd::portable {
namespace {

// 1 / j! and 1 / (2j + 1): folded by the compiler, each division correctly rounded, so the same
// constants on every machine.
template <class T, int N>
constexpr std::array<T, N> inverse_factorials() {
  std::array<T, N> c{};
  c[0] = T(1);
  for (int j = 1; j < N; ++j) c[j] = c[j - 1] / T(j);
  return c;
}
template <class T, int N>
constexpr std::array<T, N> inverse_odds() {
  std::array<T, N> c{};
  for (int j = 0; j < N; ++j) c[j] = T(1) / T(2 * j + 1);
  return c;
}

constexpr auto kFactLd = inverse_factorials<long double, 17>();  // truncation < 2e-21 relative
constexpr auto kFactD = inverse_factorials<double, 14>();        // truncation < 5e-18 relative
// 1 / (2j+1)! and 1 / (2j)! for sin and cos, j = 0 .. 8 (truncation < 1e-19 at |r| <= pi/4).
constexpr auto kFact18 = inverse_factorials<double, 19>();
constexpr std::array<double, 9> kOddFact = [] {
  std::array<double, 9> c{};
  for (int j = 0; j < 9; ++j) c[std::size_t(j)] = kFact18[std::size_t(2 * j + 1)];
  return c;
}();
constexpr std::array<double, 9> kEvenFact = [] {
  std::array<double, 9> c{};
  for (int j = 0; j < 9; ++j) c[std::size_t(j)] = kFact18[std::size_t(2 * j)];
  return c;
}();
constexpr auto kOddLd = inverse_odds<long double, 15>();  // s^2 < 0.0295: < 1e-23
constexpr auto kOddD = inverse_odds<double, 12>();        // < 1e-18

// ln 2 = ln2_hi + ln2_lo; ln2_hi holds its first 32 (double) or 40 (long double) bits, so k ln2_hi
// is exact for every k an exponent can take.
constexpr double kLn2HiD = 0xB17217F7p-32, kLn2LoD = 0x1.A39EF35793C76p-33;
constexpr long double kLn2HiLd = 0xB17217F7D1p-40L, kLn2LoLd = 0xC.F79ABC9E3B39804p-44L;

// p 2^k: exact wherever the result is normal (the factor built from its bits), else ldexp.
double times_pow2(double p, int k) {
  if (k < -1021 || k > 1023) return std::ldexp(p, k);
  return p * std::bit_cast<double>(std::uint64_t(k + 1023) << 52);
}

// round(x) to an integer-valued double, ties to even, for |x| < 2^51 (the add rounds).
double round_near(double x) {
  constexpr double kShift = 0x1.8p52;
  return (x + kShift) - kShift;
}

double fmadd(double a, double b, double c) {
  return __builtin_fma(a, b, c);  // hardware fma, or the C library's exact one: one rounding
}

template <class T>
bool exp_outside(T x, T hi, T lo, T* out) {  // NaN, overflow, underflow
  if (std::isnan(x)) return *out = x, true;
  if (x > hi) return *out = std::numeric_limits<T>::infinity(), true;
  if (x < lo) return *out = T(0), true;
  return false;
}

template <class T>
bool log_outside(T x, T* out) {  // NaN, x < 0, 0, inf
  if (std::isnan(x) || x < 0) return *out = std::numeric_limits<T>::quiet_NaN(), true;
  if (x == 0) return *out = -std::numeric_limits<T>::infinity(), true;
  if (std::isinf(x)) return *out = x, true;
  return false;
}

// x = f 2^e with f in [sqrt(1/2), sqrt(2)): exact.
template <class T>
T reduce_log(T x, int* e) {
  T f = std::frexp(x, e);
  if (f < T(0.70710678118654752440L)) f *= 2, *e -= 1;
  return f;
}

}  // namespace

long double exp(long double x) {
  long double out;
  if (exp_outside(x, 11357.3L, -11400.0L, &out)) return out;
  const long double k = std::floor(x * 0xB.8AA3B295C17F0BCp-3L + 0.5L);  // round(x log2 e)
  const long double r = (x - k * kLn2HiLd) - k * kLn2LoLd;               // |r| <= ln2 / 2
  long double p = kFactLd[16];
  for (int j = 15; j >= 0; --j) p = kFactLd[std::size_t(j)] + r * p;  // sum r^j / j!
  return std::ldexp(p, int(k));                                       // 2^k exp(r)
}

FD_FMA_CLONES double exp(double x) {
  double out;
  if (exp_outside(x, 709.8, -746.0, &out)) return out;
  const double k = round_near(x * 0x1.71547652B82FEp0);  // round(x log2 e)
  const double r = fmadd(-k, kLn2LoD, x - k * kLn2HiD);  // x - k ln 2, |r| <= 0.35
  double p = kFactD[13];
  for (int j = 12; j >= 0; --j) p = fmadd(r, p, kFactD[std::size_t(j)]);  // sum r^j / j!
  return times_pow2(p, int(k));                                           // 2^k exp(r)
}

long double log(long double x) {
  long double out;
  if (log_outside(x, &out)) return out;
  int e = 0;
  const long double f = reduce_log(x, &e);
  const long double s = (f - 1) / (f + 1), s2 = s * s;  // f - 1 exact (Sterbenz)
  long double t = kOddLd[14];
  for (int j = 13; j >= 0; --j) t = kOddLd[std::size_t(j)] + s2 * t;  // sum s^2j / (2j + 1)
  const long double E = e;
  return E * kLn2HiLd + (E * kLn2LoLd + 2 * s * t);  // e ln 2 + 2 atanh(s)
}

FD_FMA_CLONES double log(double x) {
  double out;
  if (log_outside(x, &out)) return out;
  int e = 0;
  const double f = reduce_log(x, &e);
  const double s = (f - 1) / (f + 1), s2 = s * s;
  double t = kOddD[11];
  for (int j = 10; j >= 0; --j) t = fmadd(s2, t, kOddD[std::size_t(j)]);
  const double E = e;
  return fmadd(E, kLn2HiD, fmadd(E, kLn2LoD, 2 * s * t));  // e ln 2 + 2 atanh(s)
}

// sin and cos of x = q pi/2 + r, |r| <= pi/4 (pi/2 in three parts of 33, 33 and 53 bits: q times
// each of the first two is exact for |q| < 2^20):
//   sin(r) = sum_j (-1)^j r^(2j+1) / (2j+1)!,  cos(r) = sum_j (-1)^j r^(2j) / (2j)!   (j <= 8)
//   sin(x), cos(x) = (s, c), (c, -s), (-s, -c), (-c, s) for q mod 4 = 0, 1, 2, 3
FD_FMA_CLONES SinCos sincos(double x) {
  if (!std::isfinite(x) || std::abs(x) > 0x1p19) return {std::sin(x), std::cos(x)};
  const double q = round_near(x * 0x1.45F306DC9C883p-1);  // round(x 2/pi)
  const double r =
      fmadd(-q, 0x1.3198A2E037073p-69, (x - q * 0x1.921FB544p0) - q * 0x1.0B4611A6p-34);
  const double r2 = r * r;
  double s = 0, c = 0;
  for (int j = 8; j >= 0; --j) {  // Horner in r^2 over (-1)^j / (2j+1)! and (-1)^j / (2j)!
    const double sign = (j % 2) ? -1.0 : 1.0;
    s = fmadd(r2, s, sign * kOddFact[std::size_t(j)]);
    c = fmadd(r2, c, sign * kEvenFact[std::size_t(j)]);
  }
  s *= r;
  switch (static_cast<std::int64_t>(q) & 3) {
    case 0:
      return {s, c};
    case 1:
      return {c, -s};
    case 2:
      return {-s, -c};
    default:
      return {-c, s};
  }
}

}  // namespace fd::portable
