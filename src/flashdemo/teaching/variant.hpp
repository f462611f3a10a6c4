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
//
// FD_MISTAKES is the one table of them: every other list (the Mistake enum, the grader's
// Diagnosis and the runs it tries, the --break choices, the UI's words and hints, the docs'
// list, which tests/cli/test_mistakes.cpp holds to it) is derived from its rows.
#pragma once

#include "flashdemo/host_device/precision.hpp"

namespace fd {

// X(id, name, backward_only, regraded, tiled):
//   id             the enumerator of Mistake and of Diagnosis (src/flashdemo/judge/grade.hpp); the
//                  UI's words for it are the messages mistake_<id> (one line), mistake_<id>_why
//                  (why it drifts) and hint_<id> (what `check` says when it names it), in
//                  demos/ui/messages/mistakes.inc
//   name           the --break value, and the "break" field of the JSON trace
//   backward_only  offered by `backward --break` only
//   regraded       the place in which the grader tries re-running the tiled path with this mistake
//                  to explain a failing array (1 first; 0: another candidate names it, as the other
//                  causal alignment names wrong-align)
//   tiled          whether what it computes depends on the tile sizes (the grader then tries the
//                  common ones)
// Rows in the order `--break list` shows them.
#define FD_MISTAKES(X)                               \
  X(no_max, "no-max", false, 4, false)               \
  X(no_rescale, "no-rescale", false, 5, true)        \
  X(l_starts_at_1, "l-starts-at-1", false, 2, false) \
  X(finite_mask, "finite-mask", false, 3, false)     \
  X(no_d, "no-d", true, 1, false)                    \
  X(wrong_align, "wrong-align", false, 0, false)

enum class Mistake {
  none,
#define FD_MISTAKE_ID(id, ...) id,
  FD_MISTAKES(FD_MISTAKE_ID)
#undef FD_MISTAKE_ID
};

// One row of FD_MISTAKES.
struct MistakeRow {
  Mistake mistake;
  const char* name;
  bool backward_only;
  int regraded;
  bool tiled;
};

inline constexpr MistakeRow kMistakes[] = {
#define FD_MISTAKE_ROW(id, name, backward_only, regraded, tiled) \
  {Mistake::id, name, backward_only, regraded, tiled},
    FD_MISTAKES(FD_MISTAKE_ROW)
#undef FD_MISTAKE_ROW
};

// The row of a mistake (Mistake::none has none: nullptr).
constexpr const MistakeRow* mistake_row(Mistake mistake) {
  for (const MistakeRow& row : kMistakes)
    if (row.mistake == mistake) return &row;
  return nullptr;
}

// The --break value of a mistake ("" for none).
constexpr const char* mistake_name(Mistake mistake) {
  const MistakeRow* row = mistake_row(mistake);
  return row ? row->name : "";
}

// The finite value a finite-mask run puts where -inf belongs.
inline constexpr double kFiniteMask = -1e6;

struct Variant {
  Precision p_in = Precision::fp32;  // P (and dS) as matmul inputs; fp32 and fp64: unrounded
  Mistake mistake = Mistake::none;
};

}  // namespace fd
