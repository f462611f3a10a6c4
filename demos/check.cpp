// check.cpp — `flashdemo check`: parse, call the grader, print the verdicts and hints.
#include "check.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "batch_arrays.hpp"
#include "common.hpp"
#include "flashdemo/io/file_io.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/judge/batch.hpp"
#include "flashdemo/judge/grade.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/mistakes.hpp"
#include "ui/output.hpp"
#include "ui/verdict.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

enum class Judge { auto_, fp64, fp32, bf16, fp16 };

struct CheckOptions {
  std::string q, k, v, dO;
  std::string files[5];  // O, L, dQ, dK, dV, as ArrayKind
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  bool causal_implied = false;  // by --causal-align
  std::optional<double> scale;
  Judge judge = Judge::auto_;
  Judge dtype = Judge::auto_;  // --dtype: the same as --precision (they must agree when both)
  bool judge_given = false;
  index_t Br = 0, Bc = 0;  // --block-q, --block-k: the submitter's tiles (0: not given)
  std::vector<TileSizes> tiles() const {
    if (Br == 0 && Bc == 0) return {};
    return {TileSizes{Br ? Br : Bc, Bc ? Bc : Br}};
  }
};

const char* kNames[] = {"O", "L", "dQ", "dK", "dV"};

// The hint for a diagnosis; none for Diagnosis::none. A --break mistake's is its catalogue's.
std::optional<Msg> hint(Diagnosis d) {
  switch (d) {
    case Diagnosis::none:
      return std::nullopt;
    case Diagnosis::has_nan:
      return Msg::hint_nan;
    case Diagnosis::wrong_shape:
      return Msg::hint_shape;
    case Diagnosis::transposed:
      return Msg::hint_transposed;
    case Diagnosis::missing_mask:
      return Msg::hint_missing_mask;
    case Diagnosis::extra_mask:
      return Msg::hint_extra_mask;
    case Diagnosis::unscaled:
      return Msg::hint_unscaled;
    case Diagnosis::l_is_max:
      return Msg::hint_l_is_max;
    case Diagnosis::l_base2:
      return Msg::hint_l_base2;
    case Diagnosis::rows_scaled:
      return Msg::hint_rows_scaled;
    case Diagnosis::grad_unscaled:
      return Msg::hint_grad_unscaled;
    case Diagnosis::as_fp32:
      return Msg::hint_as_fp32;
    case Diagnosis::as_fp16:
      return Msg::hint_as_fp16;
    case Diagnosis::as_bf16:
      return Msg::hint_as_bf16;
#define FD_MISTAKE_HINT(id, ...) case Diagnosis::id:
      FD_MISTAKES(FD_MISTAKE_HINT)
#undef FD_MISTAKE_HINT
      for (const ui::MistakeInfo& m : ui::mistakes())
        if (diagnosis_of(m.mistake) == d) return m.hint;
  }
  return std::nullopt;
}

using ui::shape_text;

const char* judge_name(Judge j) {
  const char* names[] = {"auto", "fp64", "fp32", "bf16", "fp16"};
  return names[int(j)];
}

Precision judged_in(Judge j, NpyType type) {
  switch (j) {
    case Judge::fp64:
      return Precision::fp64;
    case Judge::fp32:
      return Precision::fp32;
    case Judge::bf16:
      return Precision::bf16;
    case Judge::fp16:
      return Precision::fp16;
    case Judge::auto_:
      break;
  }
  return type == NpyType::f2   ? Precision::fp16
         : type == NpyType::f4 ? Precision::fp32
                               : Precision::fp64;
}

const std::string kRow = "  {:<4} {:<22} {:<6} {:>9}  {:<12} {:>9}  {}\n";

const std::string kHintIndent = "             ";

// The line under a failing array: the diagnosis, else the first wrong row; under an array with
// no verdict, why. Printed as results, so --quiet keeps them.
std::string explanation(Precision p, const Grade& g) {
  if (g.outcome == Outcome::no_verdict)
    return ui::tr(Msg::check_no_verdict, precision_name(p), ui::sci(g.naive_err), precision_name(p),
                  ui::grade_hint(p, "--precision"));
  if (const auto h = hint(g.diagnosis)) return ui::tr(*h);
  if (g.first_bad_row == 0) return ui::tr(Msg::check_first_wrong_0);
  if (g.first_bad_row > 0) return ui::tr(Msg::check_first_wrong, g.first_bad_row);
  return "";
}

RuleVerdict as_verdict(const Grade& g) {
  return {g.outcome, g.err, g.naive_err, g.bound};
}

// The array's row of the table: its (in a batch, the worst head's) error, where, the bound, the
// verdict.
void print_row(int k, const std::string& path, Precision p, const Grade& g) {
  const bool no_location = std::isinf(g.err) && g.bound == 0;
  const std::string where = no_location ? "-" : fmt::format("({}, {})", g.worst_row, g.worst_col);
  const std::string bound = g.outcome == Outcome::no_verdict ? "-" : ui::sci(g.bound);
  ui::result_raw(fmt::format(fmt::runtime(kRow), kNames[k], path, precision_name(p), ui::sci(g.err),
                             where, bound, ui::verdict_word(as_verdict(g))));
}

void print_grade(int k, const std::string& path, Precision p, const Grade& g) {
  print_row(k, path, p, g);
  if (g.pass) return;
  const std::string why = explanation(p, g);
  if (!why.empty()) ui::result_raw(ui::wrap(why, 98, ui::tr(Msg::check_hint), kHintIndent));
}

// One array's grade event: the shown head's numbers, the heads' count (1 without leading
// dimensions), the hint of the first failing head.
nlohmann::json grade_event(int k, const std::string& path, Precision p, const BatchGrade& b,
                           const std::vector<index_t>& lead) {
  const Grade &g = b.shown, &hinted = b.hinted();  // (shown: the worst, failing if any head fails)
  return {{"event", "grade"},
          {"array", kNames[k]},
          {"file", path},
          {"precision", precision_name(p)},
          {"pass", b.pass()},
          {"verdict", ui::outcome_id(g.outcome)},
          {"max_error", ui::number(g.err)},
          {"worst", {g.worst_row, g.worst_col}},
          {"head", head_index(lead, b.shown_head)},
          {"heads", b.heads},
          {"heads_passed", b.passed},
          {"bound", ui::number(g.bound)},
          {"naive_error", ui::number(g.naive_err)},
          {"first_bad_row", hinted.first_bad_row},
          {"hint", b.pass() ? "" : explanation(p, hinted)}};
}

// A submitted array, read, typed and cut into the problem's heads before anything is printed: a
// bad file is one error line. With one head any shape is graded (a wrong one fails with its
// hint); with several, the leading dimensions must be the problem's.
struct Submitted {
  int k;
  Precision precision;
  Heads values;
};

Submitted submit(int k, const std::string& path, Judge j, const HeadsProblem& p) {
  const NpyArray a = read_npy(path, 0.8 * memory_available());
  const Precision precision = judged_in(j, a.type);
  if (p.Q.lead.empty()) return {k, precision, Heads{{}, {to_matrix<double>(a)}}};
  const index_t rows = ArrayKind(k) == ArrayKind::dK || ArrayKind(k) == ArrayKind::dV ? p.m : p.n;
  const std::vector<index_t> want =
      expected_shape(p.Q.lead, ArrayKind(k) == ArrayKind::L ? std::vector<index_t>{rows}
                                                            : std::vector<index_t>{rows, p.d});
  const bool fits = a.shape.size() > p.Q.lead.size() && a.shape.size() <= p.Q.lead.size() + 2 &&
                    std::equal(p.Q.lead.begin(), p.Q.lead.end(), a.shape.begin());
  if (!fits) require_shape(a, path, kNames[k], want);  // (refuses: it cannot be want)
  return {k, precision, split_heads(a, p.Q.lead.size())};
}

// "(1, 3)": head k's leading indices.
std::string head_text(const std::vector<index_t>& lead, index_t k) {
  return shape_text(head_index(lead, k));
}

// Under a batched array's row: how many heads passed, which is shown, and the first failing
// head's hint.
void print_heads(const std::vector<index_t>& lead, Precision p, const BatchGrade& b) {
  ui::result_raw(
      kHintIndent +
      ui::tr(Msg::check_heads, b.passed, b.heads, shape_text(lead), head_text(lead, b.shown_head)) +
      "\n");
  if (b.first_failing < 0) return;
  const std::string why = explanation(p, b.hinted());
  ui::result_raw(
      ui::wrap(ui::tr(Msg::check_first_failing_head, head_text(lead, b.first_failing), why), 98,
               ui::tr(Msg::check_hint), kHintIndent));
}

// The grades of array k (O, L, dQ, dK, dV), or null when it was not submitted.
const BatchGrade* grade_of(int k, const std::vector<Submitted>& submitted,
                           const std::vector<BatchGrade>& grades) {
  for (std::size_t x = 0; x < submitted.size(); ++x)
    if (submitted[x].k == k) return &grades[x];
  return nullptr;
}

// After the table: where the gradients' pattern places the bug (dV right, dQ and dK wrong: in
// dS), and which tiles the tiled mistakes were replayed at when a failure went unexplained.
void print_notes(const std::vector<Submitted>& submitted, const std::vector<BatchGrade>& grades,
                 const CheckOptions& o, const HeadsProblem& p) {
  const BatchGrade *dQ = grade_of(2, submitted, grades), *dK = grade_of(3, submitted, grades),
                   *dV = grade_of(4, submitted, grades);
  if (dQ && dK && dV &&
      points_at_ds(dV->pass(), dQ->pass(), dQ->hinted().diagnosis, dK->pass(),
                   dK->hinted().diagnosis))
    ui::result_raw("\n" +
                   ui::wrap(ui::tr(Msg::check_ds_hint), 98, ui::tr(Msg::check_hint), kHintIndent));
  bool unexplained = false;
  for (const BatchGrade& b : grades)
    unexplained = unexplained || (b.first_failing >= 0 && b.hinted().diagnosis == Diagnosis::none &&
                                  std::isfinite(b.hinted().err));
  if (!unexplained || !diagnoses_replay(p.n, p.m, p.d)) return;
  std::string tiles;
  for (const TileSizes& t : replayed_tiles(o.tiles()))
    tiles += (tiles.empty() ? "" : ", ") + fmt::format("{}x{}", t.Br, t.Bc);
  ui::result_raw("\n" +
                 ui::wrap(ui::tr(Msg::check_tiles_tried, tiles), 98, kHintIndent, kHintIndent));
}

int run_check(const CheckOptions& o) {
  const HeadsProblem p = load_problem(o.q, o.k, o.v, o.dO);
  std::vector<Submitted> submitted;
  for (int k = 0; k < 5; ++k)
    if (!o.files[k].empty()) submitted.push_back(submit(k, o.files[k], o.judge, p));
  Recording rec(TraceFiles{}, "flashdemo check");
  ui::heading(ui::tr(Msg::check_title), ui::tr(Msg::check_rule));
  const AttnParams params{o.causal, o.align, o.scale};
  const std::string mask = ui::tr(!o.causal                          ? Msg::check_no_mask
                                  : o.align == CausalAlign::top_left ? Msg::check_causal_tl
                                                                     : Msg::check_causal_br) +
                           (o.causal_implied ? ui::tr(Msg::align_implies_causal) : "");
  if (p.Q.lead.empty())
    ui::say(Msg::check_problem, p.n, p.d, p.m, p.d, mask, params.scale_for(p.d));
  else
    ui::say(Msg::check_problem_heads, p.Q.heads.size(), shape_text(p.Q.lead), p.n, p.d, p.m, p.d,
            mask, params.scale_for(p.d));
  ui::result_raw(fmt::format(fmt::runtime(kRow), "", ui::tr(Msg::check_col_file),
                             ui::tr(Msg::check_col_judged), ui::tr(Msg::check_col_err),
                             ui::tr(Msg::check_col_where), ui::tr(Msg::check_col_bound),
                             ui::tr(Msg::check_col_verdict)));
  std::vector<Submission> submissions;
  for (const Submitted& a : submitted)
    submissions.push_back({ArrayKind(a.k), a.precision, &a.values});
  const std::vector<BatchGrade> grades =
      grade_heads(p.Q, p.K, p.V, p.has_dO ? &p.dO : nullptr, params, submissions, o.tiles());
  int passed = 0, graded = 0, ungraded = 0;
  for (std::size_t x = 0; x < submitted.size(); ++x) {
    const Submitted& a = submitted[x];
    const BatchGrade& b = grades[x];
    const Grade& g = b.shown;
    if (p.Q.lead.empty()) {
      print_grade(a.k, o.files[a.k], a.precision, g);
    } else {
      print_row(a.k, o.files[a.k], a.precision, g);
      print_heads(p.Q.lead, a.precision, b);
    }
    rec.emit(grade_event(a.k, o.files[a.k], a.precision, b, p.Q.lead));
    passed += b.pass(), ++graded, ungraded += g.outcome == Outcome::no_verdict;
  }
  print_notes(submitted, grades, o, p);
  if (ungraded)
    ui::result(Msg::check_summary_ungraded, passed, graded, ungraded);
  else
    ui::result(Msg::check_summary, passed, graded);
  rec.emit({{"event", "result"},
            {"subcommand", "check"},
            {"pass", passed == graded},
            {"passed", passed},
            {"graded", graded},
            {"no_verdict", ungraded}});
  RunFiles none;
  rec.finish(none);
  return passed == graded ? kOk : kCheckFailed;
}

}  // namespace

void setup_check(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand("check", ui::tr(Msg::check_help));
  add_file(sub, "--q", o->q, ui::tr(Msg::check_opt_q))->required();
  add_file(sub, "--k", o->k, ui::tr(Msg::check_opt_k))->required();
  add_file(sub, "--v", o->v, ui::tr(Msg::check_opt_v))->required();
  auto* dO = add_file(sub, "--do", o->dO, ui::tr(Msg::check_opt_do));
  const Msg help[] = {Msg::check_opt_o, Msg::check_opt_lse, Msg::check_opt_dq, Msg::check_opt_dk,
                      Msg::check_opt_dv};
  const char* flags[] = {"--o", "--lse", "--dq", "--dk", "--dv"};
  for (int k = 0; k < 5; ++k) {
    auto* opt = add_file(sub, flags[k], o->files[k], ui::tr(help[k]));
    if (k >= 2) opt->needs(dO);
  }
  sub->add_flag("--causal", o->causal, ui::tr(Msg::check_opt_causal));
  add_align(sub, o->align, o->causal, o->causal_implied);
  add_finite(sub, "--scale", o->scale, ui::tr(Msg::check_opt_scale));
  add_count(sub, "--block-q", o->Br, ui::tr(Msg::check_opt_block_q), index_t(1) << 20)
      ->default_str("");
  add_count(sub, "--block-k", o->Bc, ui::tr(Msg::check_opt_block_k), index_t(1) << 20)
      ->default_str("");
  const std::vector<std::pair<std::string, Judge>> formats{
      {"fp64", Judge::fp64}, {"fp32", Judge::fp32}, {"bf16", Judge::bf16}, {"fp16", Judge::fp16}};
  std::vector<std::pair<std::string, Judge>> judges{{"auto", Judge::auto_}};
  judges.insert(judges.end(), formats.begin(), formats.end());
  add_choice<Judge>(sub, "--precision", o->judge, judges, ui::tr(Msg::check_opt_precision))
      ->default_str("auto")
      ->each([o](const std::string&) { o->judge_given = true; });
  std::vector<std::pair<std::string, Judge>> dtypes = formats;
  dtypes.insert(dtypes.end(), {{"f64", Judge::fp64}, {"f32", Judge::fp32}});
  add_choice<Judge>(sub, "--dtype", o->dtype, dtypes, ui::tr(Msg::check_opt_dtype))
      ->default_str("auto");
  sub->footer(ui::tr(Msg::check_examples));
  sub->callback([o] {
    bool any = false;
    for (const std::string& f : o->files) any = any || !f.empty();
    if (!any) throw Error(kUsage, ui::tr(Msg::check_need_array));
    if (o->dtype != Judge::auto_) {  // --dtype X is --precision X
      if (o->judge_given && o->judge != o->dtype)
        throw Error(kUsage, ui::tr(Msg::err_dtype_precision, judge_name(o->dtype),
                                   judge_name(o->judge), judge_name(o->dtype)));
      o->judge = o->dtype;
    }
    const int code = run_check(*o);
    if (code != kOk) throw Error(code, ui::tr(Msg::check_failed));
  });
}

}  // namespace fd::demos
