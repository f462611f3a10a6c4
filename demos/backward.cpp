// backward.cpp — `flashdemo backward`: parse, call the library, print. No math here.
#include "backward.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "attention_cli.hpp"
#include "batch_arrays.hpp"
#include "device.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/judge/verdict.hpp"
#include "flashdemo/reference/gradcheck.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"
#include "ui/progress.hpp"
#include "ui/text_trace.hpp"
#include "ui/tile_map.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

// The upstream gradient: --do when given (loss sum(O * dO)), else dO = 2 O (loss sum(O^2)).
struct Upstream {
  const LoadedArrays& files;
  bool given() const { return files.dO.size() > 0; }
  template <class T>
  Mat<T> dO(const Mat<T>& O) const {
    return given() ? Mat<T>(files.dO.cast<T>()) : Mat<T>(T(2) * O);
  }
};

// What the backward needs from the forward, against what a standard backward keeps.
void print_storage(const AttentionOptions& o, std::size_t bytes) {
  const double n = double(o.n), m = double(o.keys()), d = double(o.d);
  const double e = double(bytes) * double(o.heads());  // every head of a batch
  const double flash = (2 * n * d + 2 * m * d + n) * e;
  const double standard = (2 * n * d + 2 * m * d + n * m) * e;
  ui::say(Msg::backward_stored_flash, format_bytes(flash));
  ui::say(Msg::backward_stored_standard, format_bytes(standard));
  if (!o.lead.empty()) ui::say(Msg::backward_stored_heads, o.heads());
}

// The judge of the run: the reference and naive backward, with S, dO, dP and the gradients
// checked against the range of the precision they are computed in (refused, never inf).
template <class T>
BackwardJudge<T> judge_for(const Inputs<T>& in, const AttentionOptions& o, const Upstream& up) {
  const Mat<T> dO_given = up.given() ? Mat<T>(up.files.dO.cast<T>()) : Mat<T>();
  const BackwardJudge<T> j = backward_judge<T>(in.Q, in.K, in.V, up.given() ? &dO_given : nullptr,
                                               o.params(), o.precision);
  require_fits(j.forward.ref.S, "S = scale Q K^T", o.accumulator(), "");
  require_fits(j.dO, "dO = 2 O", o.working(), "");
  require_fits(j.ref.dP, "dP = dO V^T", o.accumulator(), "");
  require_fits(j.ref.dQ, "dQ", o.working(), "");
  require_fits(j.ref.dK, "dK", o.working(), "");
  require_fits(j.ref.dV, "dV", o.working(), "");
  return j;
}

template <class T>
void print_finite_differences(const Inputs<T>& in, const BackwardResult<T>& g,
                              const AttentionOptions& o, const Upstream& up) {
  const auto samples = finite_difference_grads(
      in.Q.template cast<double>(), in.K.template cast<double>(), in.V.template cast<double>(),
      o.params(), up.given() ? &up.files.dO : nullptr);
  ui::section(ui::tr(Msg::backward_fd_title, up.given() ? "sum(O * dO)" : "sum(O^2)"));
  ui::result_raw(fmt::format("  {:<14} {:>16} {:>16} {:>10}\n", ui::tr(Msg::col_entry),
                             ui::tr(Msg::col_flash_backward), ui::tr(Msg::col_finite_diff),
                             "|diff|"));
  const char* names[] = {"dQ", "dK", "dV"};
  const Mat<T>* grads[] = {&g.dQ, &g.dK, &g.dV};
  for (const GradSample& s : samples) {
    const int k = int(s.operand);
    const double mine = double((*grads[k])(s.row, s.col));
    ui::result_raw(fmt::format(
        "  {:<14} {:>16} {:>16} {:>10}\n", fmt::format("{}({},{})", names[k], s.row, s.col),
        ui::fixed(mine, 10), ui::fixed(s.value, 10), ui::sci(std::abs(mine - s.value))));
  }
}

// The forward the backward starts from: the student's O and L (--o, --lse) in place of the run's
// own, stored in the run's format, first judged against the reference forward (printed).
template <class T>
ForwardResult<T> given_forward(const LoadedArrays& files, const AttentionOptions& o,
                               const BackwardJudge<T>& judge, RunVerdict& verdict) {
  ForwardResult<T> f;  // no L_lo, no O_acc: the arrays as given
  f.O = files.O.cast<T>().unaryExpr([&](T v) { return round_to(o.precision, v); });
  f.L = files.L.col(0).cast<T>();
  const RunVerdict v = judge_forward(judge.forward, view(f.O), view(f.L), o.working());
  verdict = v;
  if (o.parts.results) {
    ui::section(ui::tr(Msg::backward_given_title, o.files.o, o.files.lse));
    print_error_lines(o, v);
    ui::say(Msg::backward_given_note);
  }
  return f;
}

void print_results(const RunVerdict& v, const AttentionOptions& o) {
  ui::section(ui::tr(Msg::backward_against, reference_name(o)));
  print_error_lines(o, v);
  ui::say(Msg::backward_d_note);
}

template <class T, class R>
void print_drift(const BackwardResult<T>& g, const R& ref, const AttentionOptions& o) {
  print_mistake(o.mistake);
  const char* names[] = {"dQ", "dK", "dV"};
  const Mat<T>* mine[] = {&g.dQ, &g.dK, &g.dV};
  decltype(&ref.dQ) refs[] = {&ref.dQ, &ref.dK, &ref.dV};
  ui::result_raw("\n");
  for (int k = 0; k < 3; ++k)
    ui::result(Msg::backward_broken, names[k], names[k],
               ui::sci(max_abs_error(*mine[k], *refs[k]).value),
               rows_above(*mine[k], *refs[k], 1e-6), refs[k]->rows());
  for (int k = 0; k < 3 && !ui::settings().quiet; ++k) {
    const std::vector<bool> off = rows_off(*mine[k], *refs[k], 1e-6);
    if (std::count(off.begin(), off.end(), true) > 0) ui::print_row_map(off, names[k]);
  }
}

// One head of the run: computed, judged and (as its options ask) printed and traced; its
// outputs handed to `saved`. With a batch, head 0 is shown and the others run quietly.
// given: the verdict of the student's O and L (--o, --lse), when given.
template <class T>
RunVerdict backward_head(const AttentionOptions& o, const LoadedArrays& files, Recording* rec,
                         HeadOutputs& saved, RunVerdict& given_verdict) {
  const Inputs<T> in = inputs_for<T>(o, files);
  const Upstream up{files};
  if (up.given()) require_fits(files.dO, "dO", o.working(), o.files.dO);
  ui::Progress progress("flashdemo backward");
  progress.phase(ui::tr(Msg::progress_reference));
  const BackwardJudge<T> judge = judge_for(in, o, up);
  if (o.parts.heading) ui::heading(ui::tr(Msg::backward_title), ui::tr(Msg::backward_source));
  if (o.parts.problem) print_problem(o, cuda::Pass::bwd);
  if (o.parts.problem && up.given())
    ui::say(Msg::backward_loss_given, o.files.dO);
  else if (o.parts.problem)
    ui::say(Msg::backward_loss_square);
  if (o.parts.problem) print_storage(o, o.emulated() ? 2 : sizeof(T));
  progress.phase(ui::tr(Msg::progress_forward));
  // The run's own forward (on the forward's tiles), unless --o, --lse replace it and --do makes
  // its O unneeded (dO = 2 O takes the run's own O, the judge's loss).
  const bool given = files.O.size() > 0;
  ForwardResult<T> fwd =
      given && up.given() ? ForwardResult<T>{} : forward_on_device(o, in, nullptr);
  const Tiling tiling = o.tiling(cuda::Pass::bwd);  // the backward's
  const Mat<T> dO = up.dO<T>(fwd.O).unaryExpr([&](T v) { return round_to(o.precision, v); });
  if (given) fwd = given_forward(files, o, judge, given_verdict);
  if (o.parts.map && o.trace >= ui::TraceLevel::summary) {
    ui::say_raw("\n");
    ui::print_tile_map(tiling, o.params().mask_for(o.n, o.keys()));
  }
  ui::BackwardTrace trace(o.trace, tiling, o.params().mask_for(o.n, o.keys()));
  TextSinks text(rec);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section(ui::tr(Msg::backward_trace_title));
    trace.print_header();
    text.add(&trace);
  }
  const Mask mask = o.params().mask_for(o.n, o.keys());
  progress.phase(ui::tr(Msg::progress_backward), count_tiles(tiling, mask).computed());
  if (progress.on() && o.impl == Impl::teaching && o.device == Device::cpu) text.add(&progress);
  const BackwardResult<T> g = backward_on_device(o, in, fwd, dO, rec ? rec->sink() : nullptr);
  progress.phase(ui::tr(Msg::progress_naive));
  const char* names[] = {"dQ", "dK", "dV"};
  const Mat<T>* mine[] = {&g.dQ, &g.dK, &g.dV};
  const Mat<wider_t<T>>* refs[] = {&judge.ref.dQ, &judge.ref.dK, &judge.ref.dV};
  const std::string* saves[] = {&o.files.save_dq, &o.files.save_dk, &o.files.save_dv};
  for (int k = 0; k < 3; ++k)
    if (o.mistake == Mistake::none || !saves[k]->empty())
      refuse_nonfinite(names[k], *mine[k], *refs[k], o.accumulator());
  RunVerdict v = judge_backward(judge, view(g.dQ), view(g.dK), view(g.dV), view(g.D), o.working());
  v.set_used("D", o.mistake != Mistake::no_d);  // no-d drops D: shown, not judged
  if (o.mistake != Mistake::none && o.parts.results) print_drift(g, judge.ref, o);
  if (o.parts.results) print_results(v, o);
  if (o.parts.results && o.mistake != Mistake::none) print_mistake_verdict(o.mistake, v.pass());
  progress.phase(ui::tr(Msg::progress_check));
  if (o.parts.extra) print_finite_differences(in, g, o, up);
  saved.add(o.files.save_q, in.Q), saved.add(o.files.save_k, in.K);
  saved.add(o.files.save_v, in.V), saved.add(o.files.save_do, dO);
  saved.add(o.files.save_o, fwd.O), saved.add(o.files.save_lse, fwd.L);
  saved.add(o.files.save_dq, g.dQ), saved.add(o.files.save_dk, g.dK);
  saved.add(o.files.save_dv, g.dV);
  return v;
}

template <class T>
void run_backward_as(const AttentionOptions& o, LoadedArrays& files) {
  ensure_reference_fits(o, 9, sizeof(wider_t<T>), o.heads());
  Recording rec(o.trace_files, ui::tr(Msg::backward_title));
  rec.emit(problem_event(o, "backward", cuda::Pass::bwd));
  HeadOutputs saved(o.lead);
  HeadsVerdict given;  // the student's O and L (--o, --lse), head by head
  const HeadsVerdict verdict =
      run_heads(o, files, rec, [&](index_t k, const AttentionOptions& head, Recording* traced) {
        RunVerdict g;
        const RunVerdict v = backward_head<T>(head, files, traced, saved, g);
        if (!g.arrays().empty()) given.add(k, g);
        return v;
      });
  if (given.heads > 0) print_heads(o, given, Msg::heads_given_title);
  print_heads(o, verdict);
  rec.emit(result_event(o, "backward", verdict));
  conclude(o, verdict.all);
  rec.finish(files.files);
  saved.stage(files.files);
  files.files.commit();
}

}  // namespace

void setup_backward(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  o->n = 70, o->d = 16, o->Br = 16, o->Bc = 16;  // lecture: n, d = 70, 16; blocks 16 x 16
  o->draws_per_mask = true;                      // lecture: Q, K, V drawn inside the loop
  CLI::App* sub = app.add_subcommand("backward", ui::tr(Msg::backward_help));
  add_attention_options(sub, *o, Subcommand::backward);
  sub->footer(ui::tr(Msg::backward_examples));
  sub->callback([o] {
    if (o->list_mistakes) return print_mistake_list(Subcommand::backward);
    run_backward(*o);
  });
}

void run_backward(AttentionOptions& o) {
  LoadedArrays files = validate_run(o, Subcommand::backward);
  dispatch_dtype(o, [&]<class T>() { run_backward_as<T>(o, files); });
}

}  // namespace fd::demos
