// mistakes.cpp — the lab's catalogue of classic mistakes (see flashdemo/variant.hpp).
#include "ui/mistakes.hpp"

namespace fd::ui {

const std::vector<MistakeInfo>& mistakes() {
  static const std::vector<MistakeInfo> all = {
      {Mistake::no_max, "no-max", "exp(S) without subtracting the running max m",
       "Mathematically the max cancels, so nothing changes while exp(S) fits the format.\n"
       "Once a score passes about 88 (fp32) or 709 (fp64) exp overflows to inf and O turns\n"
       "into inf/inf = NaN. Large scores are common: try --scale 40 (fp32) or --scale 300.",
       false},
      {Mistake::no_rescale, "no-rescale", "alpha = exp(m_old - m_new) forgotten on O",
       "l is rescaled but O is not, so O mixes terms summed against different maxima. Rows\n"
       "whose max never grows after their first key tile stay right; every row whose max\n"
       "grows later is wrong. The first key tile alone is always right.",
       false},
      {Mistake::l_starts_at_1, "l-starts-at-1", "each row starts from (m, l) = (0, 1)",
       "As if every row had seen one extra score 0 with value 0: l and L come out too large,\n"
       "O too small. With the correct start m = -inf the extra 1 would do no harm: the first\n"
       "tile multiplies it by alpha = exp(-inf - m_new) = 0.",
       false},
      {Mistake::finite_mask, "finite-mask", "masked scores set to -1e6 instead of -inf",
       "exp(-1e6 - m) is 0 in every format, so nothing changes while real scores stay above\n"
       "-1e6 and every row sees a key. A row that sees no key (bottom-right, n > m: try\n"
       "--m 60 --causal-align bottom-right) averages V over masked keys instead of giving 0;\n"
       "huge negative scores (--scale 1e6) fall below the sentinel.",
       false},
      {Mistake::no_d, "no-d", "the backward drops D: dS = P * dP instead of P * (dP - D)",
       "D_i = rowsum(dO_i * O_i) is the softmax's correction: without it every row of dS\n"
       "keeps P_ij * D_i too much, and dQ and dK drift (dV, which does not use dS, is right).",
       true},
      {Mistake::wrong_align, "wrong-align", "top-left causal mask where bottom-right was meant",
       "With n != m the two alignments put the diagonal in different places: bottom-right\n"
       "lets query q see keys up to q + m - n. Rows differ wherever m - n keys are hidden or\n"
       "shown by mistake; with n == m the alignments agree (try --m 60).",
       false},
  };
  return all;
}

const MistakeInfo& info(Mistake mistake) {
  for (const MistakeInfo& m : mistakes())
    if (m.mistake == mistake) return m;
  return mistakes().front();
}

}  // namespace fd::ui
