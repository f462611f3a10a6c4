// portable_math.hpp — exp and log with the same bits on every x86-64 (host code).
//
//   exp(x) = 2^k exp(r),      k = round(x / ln 2),  r = x - k ln2_hi - k ln2_lo,  |r| <= ln2 / 2
//            exp(r) = sum_{j=0..N} r^j / j!        (N = 16 in long double, 13 in double)
//   log(x) = e ln 2 + log(f), x = f 2^e, f in [sqrt(1/2), sqrt(2))
//            log(f) = 2 atanh(s) = 2 sum_j s^(2j+1) / (2j+1),   s = (f - 1) / (f + 1), |s| < 0.172
//   sin, cos: x = q pi/2 + r, |r| <= pi/4, Taylor series in r (double)
//   float:   the double result rounded to float
//
// Why not the C library's: glibc picks its exp and log at run time from the CPU found (an FMA and
// an SSE2 variant that differ in the last bit of some results), and its long double expl and logl
// run the x87 instructions F2XM1 and FYL2X, whose last bits differ between Intel and AMD. A
// reference computed with them prints other digits on another machine. These use only +, -, *, /
// and fma, each correctly rounded (fma in hardware or in the C library's exact fallback), in an
// order fixed by the code (portable_math.cpp is compiled without contraction): the same bits on
// every machine. Accuracy: a few units of 2^-64 relative in long double, about one unit in the
// last place in double (tests/host_device/test_portable_math.cpp measures both).
#pragma once

// A CPU function whose loops are fmadds, compiled twice where the build targets an x86-64 without
// FMA (the default, portable build): as it is, and for CPUs with FMA; the program picks the one
// the CPU runs as it loads (target_clones). In the first, fmadd is a call to the C library's fma
// for each term, which made the reference's products and the teaching path 4x slower; in the
// second, the instruction. The bits are the same: fma rounds once either way. GCC only (clang 14
// clones no function template).
#if defined(__x86_64__) && !defined(__FMA__) && !defined(__CUDACC__) && defined(__ELF__) && \
    defined(__GNUC__) && !defined(__clang__)
#define FD_FMA_CLONES __attribute__((target_clones("default", "fma")))
#else
#define FD_FMA_CLONES
#endif

namespace fd::portable {

long double exp(long double x);
long double log(long double x);
double exp(double x);
double log(double x);
struct SinCos {
  double sin, cos;
};
SinCos sincos(double x);  // |x| <= 2^19 portably (the lecture's generator: angles in [0, 2 pi))
inline float exp(float x) {
  return static_cast<float>(exp(static_cast<double>(x)));
}
inline float log(float x) {
  return static_cast<float>(log(static_cast<double>(x)));
}

}  // namespace fd::portable
