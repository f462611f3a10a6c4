// verdict.hpp — how a verdict of the correctness rule reads (compare.hpp computes it):
//   pass/fail:   "naive fp32 2.4e-07, bound 2x + 1e-6 = 1.5e-06: pass"
//   no verdict:  "no verdict: naive fp16 overflows here (its error is inf), so there is no
//                 bound; --dtype fp32 grades it"
#pragma once

#include <optional>
#include <string>

#include "flashdemo/judge/compare.hpp"

namespace fd::ui {

// The next wider precision, in which a yardstick or a value that overflowed p fits: fp32 for
// bf16 and fp16, fp64 for fp32, none for fp64.
std::optional<Precision> wider_precision(Precision p);

// How the user gets the run graded: "--dtype fp32 grades it" (option "--dtype") or
// "--precision fp64 grades it" (option "--precision").
std::string grade_hint(Precision p, const char* option);

// "naive fp32 2.4e-07, bound 2x + 1e-6 = 1.5e-06: pass" or the no-verdict sentence; coloured.
std::string verdict_text(Precision p, const RuleVerdict& v, const char* option = "--dtype");

// "pass" / "FAIL" / "no verdict", coloured: the word of a table column.
std::string verdict_word(const RuleVerdict& v);

// "pass", "fail" or "no verdict": the fixed, untranslated name of an outcome in JSON events.
const char* outcome_id(Outcome o);

// What to do about a value beyond p's range: "use --dtype fp64 or smaller values".
std::string overflow_hint(Precision p);

}  // namespace fd::ui
