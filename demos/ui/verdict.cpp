// verdict.cpp — the words of a verdict (see verdict.hpp).
#include "ui/verdict.hpp"

#include "ui/format.hpp"
#include "ui/i18n.hpp"
#include "ui/output.hpp"

namespace fd::ui {

std::optional<Precision> wider_precision(Precision p) {
  switch (p) {
    case Precision::bf16:
    case Precision::fp16:
      return Precision::fp32;
    case Precision::fp32:
      return Precision::fp64;
    case Precision::fp64:
      break;
  }
  return std::nullopt;
}

std::string grade_hint(Precision p, const char* option) {
  const auto w = wider_precision(p);
  if (!w) return tr(Msg::verdict_no_wider);
  return tr(std::string(option) == "--dtype" ? Msg::verdict_try_dtype : Msg::verdict_try_precision,
            precision_name(*w));
}

std::string verdict_word(const RuleVerdict& v) {
  switch (v.outcome) {
    case Outcome::pass:
      return paint(tr(Msg::word_pass), Paint::good);
    case Outcome::fail:
      return paint(tr(Msg::word_fail), Paint::bad);
    case Outcome::no_verdict:
      break;
  }
  return paint(tr(Msg::word_no_verdict), Paint::bad);
}

const char* outcome_id(Outcome o) {
  switch (o) {
    case Outcome::pass:
      return "pass";
    case Outcome::fail:
      return "fail";
    case Outcome::no_verdict:
      break;
  }
  return "no verdict";
}

std::string verdict_text(Precision p, const RuleVerdict& v, const char* option) {
  if (v.outcome == Outcome::no_verdict)
    return paint(tr(Msg::verdict_none, precision_name(p), sci(v.naive), grade_hint(p, option)),
                 Paint::bad);
  return tr(Msg::verdict_2x, precision_name(p), sci(v.naive), sci(v.floor), sci(v.bound),
            verdict_word(v));
}

std::string overflow_hint(Precision p) {
  const auto w = wider_precision(p);
  return w ? tr(Msg::overflow_try_dtype, precision_name(*w)) : tr(Msg::overflow_smaller);
}

}  // namespace fd::ui
