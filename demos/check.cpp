// check.cpp — `flashdemo check`: parse, call the grader, print the verdicts and hints.
#include "check.hpp"

#include <fmt/core.h>

#include <memory>

#include "common.hpp"
#include "flashdemo/grade.hpp"
#include "flashdemo/npy.hpp"
#include "ui/format.hpp"

namespace fd::demos {
namespace {

enum class Judge { auto_, fp64, fp32, bf16, fp16 };

struct CheckOptions {
  std::string q, k, v, dO;
  std::string files[5];  // O, L, dQ, dK, dV, as ArrayKind
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  std::optional<double> scale;
  Judge judge = Judge::auto_;
};

const char* kNames[] = {"O", "L", "dQ", "dK", "dV"};

const char* hint(Diagnosis d) {
  switch (d) {
    case Diagnosis::none:
      return nullptr;
    case Diagnosis::has_nan:
      return "contains NaN or inf: exp overflowed (is the running max subtracted?) or a row "
             "that sees no key divided 0 by 0 (it should give O = 0, L = -inf)";
    case Diagnosis::wrong_shape:
      return "the shape is not the reference's";
    case Diagnosis::transposed:
      return "the shape is the reference's transposed: save X, not X.T";
    case Diagnosis::missing_mask:
      return "matches attention without the causal mask: is the mask applied to S?";
    case Diagnosis::extra_mask:
      return "matches causal attention: a mask was applied (or pass --causal to check that)";
    case Diagnosis::wrong_align:
      return "matches the other causal alignment: top-left vs bottom-right (--causal-align)";
    case Diagnosis::unscaled:
      return "matches scores not multiplied by the scale 1/sqrt(d)";
    case Diagnosis::l_is_max:
      return "L equals the row max m: L should be m + log(l)";
    case Diagnosis::rows_scaled:
      return "each row is off by its own factor: divide O by l exactly once, at the end";
    case Diagnosis::no_max:
      return "matches exp(S) without the running max subtracted: it overflows for large scores";
    case Diagnosis::no_rescale:
      return "rows after the first key tile are wrong: is the rescale factor exp(m_old - m_new) "
             "applied to O?";
    case Diagnosis::l_starts_at_1:
      return "matches l starting at 1 (with m at 0): start every row from m = -inf, l = 0";
    case Diagnosis::finite_mask:
      return "matches a finite mask value (-1e6) instead of -inf: rows that see no key go wrong";
    case Diagnosis::no_d:
      return "matches dS = P * dP: the backward needs D = rowsum(dO * O): dS = P * (dP - D)";
    case Diagnosis::grad_unscaled:
      return "off by the factor scale: dQ = scale * dS K and dK = scale * dS^T Q";
  }
  return nullptr;
}

Mat<double> load(const std::string& path, bool finite) {
  const NpyArray a = read_npy(path);
  if (finite) require_finite(a, path);
  return to_matrix<double>(a);
}

Precision judged_in(Judge j, const std::string& path) {
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
  return read_npy(path).type == NpyType::f4 ? Precision::fp32 : Precision::fp64;
}

const char* precision_label(Precision p) {
  const char* names[] = {"fp64", "fp32", "bf16", "fp16"};
  return names[int(p)];
}

CheckProblem load_problem(const CheckOptions& o) {
  CheckProblem p{load(o.q, true),
                 load(o.k, true),
                 load(o.v, true),
                 {},
                 AttnParams{o.causal, o.align, o.scale}};
  if (p.K.cols() != p.Q.cols() || p.V.rows() != p.K.rows() || p.V.cols() != p.Q.cols())
    throw NpyError(
        fmt::format("shapes do not fit: Q {} x {}, K {} x {}, V {} x {} (want n x d, "
                    "m x d, m x d)",
                    p.Q.rows(), p.Q.cols(), p.K.rows(), p.K.cols(), p.V.rows(), p.V.cols()));
  if (!o.dO.empty()) {
    p.dO = load(o.dO, true);
    if (p.dO.rows() != p.Q.rows() || p.dO.cols() != p.Q.cols())
      throw NpyError(fmt::format("{}: dO has shape ({}, {}), expected ({}, {})", o.dO, p.dO.rows(),
                                 p.dO.cols(), p.Q.rows(), p.Q.cols()));
  }
  return p;
}

void print_grade(int k, const std::string& path, Precision p, const Grade& g) {
  const std::string where = std::isinf(g.err) && g.diagnosis != Diagnosis::none && g.bound == 0
                                ? "-"
                                : fmt::format("({}, {})", g.worst_row, g.worst_col);
  fmt::print("  {:<4} {:<22} {:<6} {:>9}  {:<12} {:>9}  {}\n", kNames[k], path, precision_label(p),
             ui::sci(g.err), where, ui::sci(g.bound), g.pass ? "pass" : "FAIL");
  if (g.pass) return;
  if (const char* h = hint(g.diagnosis))
    ui::wrap(h, 98, "       hint: ", "             ");
  else if (g.first_bad_row >= 0)
    fmt::print("       first wrong row: {}; rows before it are right\n", g.first_bad_row);
}

int run_check(const CheckOptions& o) {
  Grader grader(load_problem(o));
  const CheckProblem& p = grader.problem();
  ui::heading("flashdemo check · your arrays against the fp64 reference",
              "the correctness rule of DESIGN.md: fp64 within 1e-12 relative, lower precisions "
              "within 2x naive + 1e-6");
  fmt::print("\n  Q: {} x {},  K, V: {} x {},  {}, scale = {:.6g}\n\n", p.Q.rows(), p.Q.cols(),
             p.K.rows(), p.K.cols(),
             !o.causal                          ? "no mask"
             : o.align == CausalAlign::top_left ? "causal (top-left)"
                                                : "causal (bottom-right)",
             p.params.scale_for(p.Q.cols()));
  fmt::print("  {:<4} {:<22} {:<6} {:>9}  {:<12} {:>9}  {}\n", "", "file", "judged", "max err",
             "worst at", "bound", "verdict");
  int passed = 0, graded = 0;
  for (int k = 0; k < 5; ++k) {
    if (o.files[k].empty()) continue;
    const Precision prec = judged_in(o.judge, o.files[k]);
    Mat<double> X = load(o.files[k], false);
    const Grade g = grader.grade(ArrayKind(k), X, prec);
    print_grade(k, o.files[k], prec, g);
    passed += g.pass, ++graded;
  }
  fmt::print("\n  {} of {} arrays pass.\n", passed, graded);
  return passed == graded ? kOk : kCheckFailed;
}

}  // namespace

void setup_check(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand(
      "check", "Grade your O, L, dQ, dK, dV (.npy) against the reference, with hints");
  sub->add_option("--q", o->q, "Q (.npy, n x d)")->required();
  sub->add_option("--k", o->k, "K (.npy, m x d)")->required();
  sub->add_option("--v", o->v, "V (.npy, m x d)")->required();
  auto* dO = sub->add_option("--do", o->dO, "dO (.npy, n x d): the upstream gradient you used");
  const char* help[] = {"Your O (n x d)", "Your L, the logsumexp of each row (n)", "Your dQ",
                        "Your dK", "Your dV"};
  const char* flags[] = {"--o", "--lse", "--dq", "--dk", "--dv"};
  for (int k = 0; k < 5; ++k) {
    auto* opt = sub->add_option(flags[k], o->files[k], help[k]);
    if (k >= 2) opt->needs(dO);
  }
  sub->add_flag("--causal", o->causal, "The mask you used was causal");
  add_align(sub, o->align);
  add_finite(sub, "--scale", o->scale, "The softmax scale you used [1/sqrt(d)]");
  add_choice<Judge>(sub, "--precision", o->judge,
                    {{"auto", Judge::auto_},
                     {"fp64", Judge::fp64},
                     {"fp32", Judge::fp32},
                     {"bf16", Judge::bf16},
                     {"fp16", Judge::fp16}},
                    "Judge in this precision (auto: float32 files as fp32, float64 as fp64)")
      ->default_str("auto");
  sub->callback([o] {
    bool any = false;
    for (const std::string& f : o->files) any = any || !f.empty();
    if (!any) throw Error(kUsage, "give at least one array to grade: --o, --lse, --dq, --dk, --dv");
    const int code = run_check(*o);
    if (code != kOk) throw Error(code, "some arrays failed their grade (see above)");
  });
}

}  // namespace fd::demos
