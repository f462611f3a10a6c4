// variant.hpp — how a teaching run may differ from the correct algorithm: the precision its
// matmul inputs are rounded to, and a classic mistake it makes on purpose (for the lab).
//
//   no-max         p = exp(S) with no max subtracted: exp overflows once scores pass ~88 (fp32)
//                  or ~709 (fp64); below that the result is still exact
//   no-rescale     alpha is forgotten on O (l is still rescaled): O mixes tiles summed against
//                  different maxima, so rows whose max grows after the first tile go wrong
//   l-starts-at-1  each row starts from (m, l) = (0, 1) as if it had seen one extra score 0;
//                  with the correct start m = -inf the 1 would be wiped out by alpha = 0
//   finite-mask    masked scores are -1e6 instead of -inf: identical until real scores fall
//                  below -1e6 or a row sees no key at all (it then averages V instead of 0)
//   no-d           the backward drops D: dS = P * dP instead of P * (dP - D)
//   wrong-align    top-left causal alignment where bottom-right was meant (differs when n != m)
#pragma once

#include "flashdemo/host_device/precision.hpp"

namespace fd {

enum class Mistake { none, no_max, no_rescale, l_starts_at_1, finite_mask, no_d, wrong_align };

// The finite value a finite-mask run puts where -inf belongs.
inline constexpr double kFiniteMask = -1e6;

struct Variant {
  Precision p_in = Precision::fp32;  // P (and dS) as matmul inputs; fp32 and fp64: unrounded
  Mistake mistake = Mistake::none;
};

}  // namespace fd
