// vector_exp.hpp — exp(x) on a whole vector of floats, for the fast path's P = exp(S - m):
//   x = n ln2 + r,  n = round(x / ln2),  |r| <= ln2 / 2     (Cody-Waite: ln2 in two parts)
//   e^r = 1 + (r + r^2 q),  q = sum_{k=2..7} r^(k-2) / k!   (Taylor, Horner; the r^8 term
//                                                             is below 2.5e-9 relative)
//   e^x = 2^n e^r                                  (vscalefps on AVX-512, else n added to the
//                                                    exponent bits)
// Accuracy: within 1.06 units in the last place of exp(x), with or without fused multiply-adds
// (every float of the range: 1.059 at worst with them, at x = -5.889; 1.023 without). The 1 is
// added last, to a sum that is small beside it: a Horner step p r + 1 at the end would round a
// product of the size of the result. Estrin's scheme for q (a shorter chain: 9.3 cycles a vector
// against 10.1 here) did worse on every 7th float (1.058 against 1.034 ulp); not taken.
// Range: x < -86.5 gives 0 (the true value is below 2.7e-38, where floats turn subnormal);
// x must be at most 88.5 (above, the result is wrong, not inf): the callers' arguments are
// S - m <= 0, S - L (about 0 at most), or lanes they discard. Every lane goes through the same
// instructions: the result depends only on x.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "flashdemo/fast/tile_product.hpp"

namespace fd::fast {
inline namespace FD_FAST_LEVEL {

inline Simd<float>::V exp_vector(Simd<float>::V x) {
  using VF = Simd<float>::V;
  constexpr float log2e = 1.44269504088896341f, magic = 12582912.0f;  // 1.5 * 2^23
  constexpr float ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
  const VF t = x * log2e + magic;  // n sits in the low bits of t's mantissa (x log2e rounded
                                   // once, with the magic; a product rounded alone can land on
                                   // a tie, e.g. x = -81.4447937, and round to another n)
  const VF n = t - magic;          // n as a float, exactly
  VF r = x - n * ln2_hi;           // exact: n ln2_hi has few bits
  r = r - n * ln2_lo;              // |r| <= ln2 / 2
  VF q = r * (1.0f / 5040) + (1.0f / 720);
  q = q * r + (1.0f / 120);
  q = q * r + (1.0f / 24);
  q = q * r + (1.0f / 6);
  q = q * r + 0.5f;
  const VF p = 1.0f + ((r * r) * q + r);  // e^r, in [0.70, 1.42]
#if defined(__AVX512F__)
  // times 2^n by vscalefps, and 0 where x < -86.5 by its zero mask (a NaN x keeps its lane, and
  // gives NaN as the integer path does): one instruction where the integer path below takes five.
  const __mmask16 keep = _mm512_cmp_ps_mask((__m512)x, _mm512_set1_ps(-86.5f), _CMP_NLT_UQ);
  return (VF)_mm512_maskz_scalef_ps(keep, (__m512)p, (__m512)n);
#else
  typedef std::uint32_t VU __attribute__((vector_size(kSimdBytes)));  // bits: wrap, never UB
  const VU underflow = (VU)(x < -86.5f);  // all ones where the result is 0
  VU bits, tb, mb;
  std::memcpy(&bits, &p, sizeof p);
  std::memcpy(&tb, &t, sizeof t);
  const VF mv = VF{} + magic;
  std::memcpy(&mb, &mv, sizeof mv);
  bits += (tb - mb) << 23;  // times 2^n (n in two's complement; out-of-range lanes are masked
                            // or are the caller's don't-care lanes)
  bits &= ~underflow;
  VF out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
#endif
}

}  // namespace FD_FAST_LEVEL
}  // namespace fd::fast
