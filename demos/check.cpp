// check.cpp — `flashdemo check`: parse, call the grader, print the verdicts and hints.
#include "check.hpp"

#include <fmt/core.h>

#include <memory>
#include <optional>
#include <vector>

#include "common.hpp"
#include "flashdemo/io/file_io.hpp"
#include "flashdemo/io/npy.hpp"
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
#define FD_MISTAKE_HINT(id, ...) case Diagnosis::id:
      FD_MISTAKES(FD_MISTAKE_HINT)
#undef FD_MISTAKE_HINT
      for (const ui::MistakeInfo& m : ui::mistakes())
        if (diagnosis_of(m.mistake) == d) return m.hint;
  }
  return std::nullopt;
}

// An input of the problem (Q, K, V, dO): a finite matrix with no empty dimension, or refused
// with the file's name.
Mat<double> load_input(const std::string& path, const char* what) {
  const NpyArray a = read_npy(path, 0.8 * memory_available());
  require_finite(a, path);
  if (a.shape.size() != 2)
    throw NpyError(ui::tr(Msg::err_not_matrix, shown(path), what, a.shape.size()));
  if (a.shape[0] < 1 || a.shape[1] < 1)
    throw NpyError(ui::tr(Msg::err_empty_array, shown(path), what, a.shape[0], a.shape[1]));
  return to_matrix<double>(a);
}

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

CheckProblem load_problem(const CheckOptions& o) {
  CheckProblem p{load_input(o.q, "Q"),
                 load_input(o.k, "K"),
                 load_input(o.v, "V"),
                 {},
                 AttnParams{o.causal, o.align, o.scale}};
  if (p.K.cols() != p.Q.cols() || p.V.rows() != p.K.rows() || p.V.cols() != p.Q.cols())
    throw NpyError(ui::tr(Msg::check_err_shapes, p.Q.rows(), p.Q.cols(), p.K.rows(), p.K.cols(),
                          p.V.rows(), p.V.cols()));
  if (!o.dO.empty()) {
    p.dO = load_input(o.dO, "dO");
    if (p.dO.rows() != p.Q.rows() || p.dO.cols() != p.Q.cols())
      throw NpyError(
          ui::tr(Msg::check_err_do, o.dO, p.dO.rows(), p.dO.cols(), p.Q.rows(), p.Q.cols()));
  }
  return p;
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

void print_grade(int k, const std::string& path, Precision p, const Grade& g) {
  const bool no_location = std::isinf(g.err) && g.bound == 0;
  const std::string where = no_location ? "-" : fmt::format("({}, {})", g.worst_row, g.worst_col);
  const std::string bound = g.outcome == Outcome::no_verdict ? "-" : ui::sci(g.bound);
  ui::result_raw(fmt::format(fmt::runtime(kRow), kNames[k], path, precision_name(p), ui::sci(g.err),
                             where, bound, ui::verdict_word(as_verdict(g))));
  if (g.pass) return;
  const std::string why = explanation(p, g);
  if (!why.empty()) ui::result_raw(ui::wrap(why, 98, ui::tr(Msg::check_hint), kHintIndent));
}

nlohmann::json grade_event(int k, const std::string& path, Precision p, const Grade& g) {
  return {{"event", "grade"},
          {"array", kNames[k]},
          {"file", path},
          {"precision", precision_name(p)},
          {"pass", g.pass},
          {"verdict", ui::outcome_id(g.outcome)},
          {"max_error", ui::number(g.err)},
          {"worst", {g.worst_row, g.worst_col}},
          {"bound", ui::number(g.bound)},
          {"naive_error", ui::number(g.naive_err)},
          {"first_bad_row", g.first_bad_row},
          {"hint", g.pass ? "" : explanation(p, g)}};
}

// A submitted array, read and typed before anything is printed: a bad file is one error line.
struct Submitted {
  int k;
  Precision precision;
  Mat<double> values;
};

// Reads the file once: its dtype decides the precision it is judged in (unless --precision says).
Submitted submit(int k, const std::string& path, Judge j) {
  const NpyArray a = read_npy(path, 0.8 * memory_available());
  return {k, judged_in(j, a.type), to_matrix<double>(a)};
}

int run_check(const CheckOptions& o) {
  Grader grader(load_problem(o));
  const CheckProblem& p = grader.problem();
  std::vector<Submitted> submitted;
  for (int k = 0; k < 5; ++k)
    if (!o.files[k].empty()) submitted.push_back(submit(k, o.files[k], o.judge));
  Recording rec(TraceFiles{}, "flashdemo check");
  ui::heading(ui::tr(Msg::check_title), ui::tr(Msg::check_rule));
  ui::say(Msg::check_problem, p.Q.rows(), p.Q.cols(), p.K.rows(), p.K.cols(),
          ui::tr(!o.causal                          ? Msg::check_no_mask
                 : o.align == CausalAlign::top_left ? Msg::check_causal_tl
                                                    : Msg::check_causal_br) +
              (o.causal_implied ? ui::tr(Msg::align_implies_causal) : ""),
          p.params.scale_for(p.Q.cols()));
  ui::result_raw(fmt::format(fmt::runtime(kRow), "", ui::tr(Msg::check_col_file),
                             ui::tr(Msg::check_col_judged), ui::tr(Msg::check_col_err),
                             ui::tr(Msg::check_col_where), ui::tr(Msg::check_col_bound),
                             ui::tr(Msg::check_col_verdict)));
  int passed = 0, graded = 0, ungraded = 0;
  for (const Submitted& a : submitted) {
    const Grade g = grader.grade(ArrayKind(a.k), a.values, a.precision);
    print_grade(a.k, o.files[a.k], a.precision, g);
    rec.emit(grade_event(a.k, o.files[a.k], a.precision, g));
    passed += g.pass, ++graded, ungraded += g.outcome == Outcome::no_verdict;
  }
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
