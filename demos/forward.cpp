// forward.cpp — `flashdemo forward`: parse, call the library, print. No math here.
#include "forward.hpp"

#include <fmt/core.h>

#include <memory>

#include "attention_cli.hpp"
#include "batch_arrays.hpp"
#include "device.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/judge/verdict.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_forward.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"
#include "ui/progress.hpp"
#include "ui/text_trace.hpp"
#include "ui/tile_map.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

void print_errors(const RunVerdict& v, const AttentionOptions& o) {
  print_reference_title(o);
  print_error_lines(o, v);
}

// The broken run beside the correct one: how far the mistake drifts, and where.
template <class T, class W>
void print_drift(const Inputs<T>& in, const ForwardResult<T>& broken,
                 const ReferenceForward<W>& ref, const AttentionOptions& o) {
  print_mistake(o.mistake);
  const MaxError e = max_abs_error(broken.O, ref.O);
  ui::result(Msg::forward_broken, ui::sci(e.value), e.index / o.d,
             rows_above(broken.O, ref.O, 1e-6), o.n);
  ui::result(Msg::forward_broken_L, ui::sci(max_abs_error(broken.L, ref.L).value));
  if (!ui::settings().quiet) ui::print_row_map(rows_off(broken.O, ref.O, 1e-6), "O");
  AttentionOptions fixed = o;
  fixed.mistake = Mistake::none;
  const auto good =
      flash_forward(in.Q, in.K, in.V, o.params(), o.tiles(), nullptr, fixed.variant());
  ui::result(Msg::forward_correct, ui::sci(max_abs_error(good.O, ref.O).value));
}

// Row q of P recovered from L beside the materialized reference row.
template <class T, class W>
void print_p_row(const Inputs<T>& in, const ForwardResult<T>& out, const ReferenceForward<W>& ref,
                 const AttentionOptions& o) {
  const index_t q = o.show_p, m = o.keys();
  const std::vector<T> p = recover_p_row(in.Q, in.K, out, o.params(), q);
  ui::section(ui::tr(Msg::show_p_title, q, q, q, q));
  ui::result_raw(fmt::format("  {:>6}  {:>20}  {:>20}  {:>9}\n", "k", ui::tr(Msg::show_p_recovered),
                             ui::tr(Msg::show_p_reference), "|diff|"));
  // The visible keys one per line (the middle elided past 24); the masked ones as one line.
  const index_t seen = o.params().mask_for(o.n, m).visible_keys(q);
  double sum = 0, worst = 0, worst_masked = 0;
  for (index_t k = 0; k < m; ++k) {
    const double mine = double(p[std::size_t(k)]), theirs = double(ref.P(q, k));
    sum += mine, worst = std::max(worst, std::abs(mine - theirs));
    if (k >= seen) {
      worst_masked = std::max(worst_masked, std::abs(mine - theirs));
      continue;
    }
    if (seen <= 24 || k < 10 || k >= seen - 10)
      ui::result_raw(fmt::format("  {:>6}  {:>20}  {:>20}  {:>9}\n", k, ui::fixed(mine, 15),
                                 ui::fixed(theirs, 15), ui::sci(std::abs(mine - theirs))));
    else if (k == 10)
      ui::result_raw(fmt::format("  {:>6}\n", "…"));
  }
  if (seen < m)
    ui::result(Msg::show_p_masked, ui::range(Range{seen, m}), m - seen, ui::sci(worst_masked));
  ui::result(Msg::show_p_sum, sum, ui::sci(worst));
}

// One head of the run: computed, judged and (as its options ask) printed and traced; its
// outputs handed to `saved`. With a batch, head 0 is shown and the others run quietly.
template <class T>
RunVerdict forward_head(const AttentionOptions& o, const LoadedArrays& files, Recording* rec,
                        HeadOutputs& saved) {
  const Inputs<T> in = inputs_for<T>(o, files);
  ui::Progress progress("flashdemo forward");
  progress.phase(ui::tr(Msg::progress_reference));
  const ForwardJudge<T> judge = forward_judge<T>(in.Q, in.K, in.V, o.params(), o.precision);
  require_fits(judge.ref.S, "S = scale Q K^T", o.accumulator(), "");
  const auto& ref = judge.ref;
  if (o.parts.heading) ui::heading(ui::tr(Msg::forward_title), ui::tr(Msg::forward_source));
  if (o.parts.problem) print_problem(o);
  if (o.parts.map && o.trace >= ui::TraceLevel::summary) {
    ui::say_raw("\n");
    ui::print_tile_map(o.tiling(), o.params().mask_for(o.n, o.keys()));
  }
  ui::ForwardTrace trace(o.trace, o.tiling(), o.params().mask_for(o.n, o.keys()));
  TextSinks text(rec);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section(ui::tr(Msg::forward_trace_title));
    trace.print_header();
    text.add(&trace);
  }
  progress.phase(ui::tr(Msg::progress_flash), o.tiling().Tr() * o.tiling().Tc());
  if (progress.on() && o.impl == Impl::teaching && o.device == Device::cpu) text.add(&progress);
  const ForwardResult<T> out = forward_on_device(o, in, rec ? rec->sink() : nullptr);
  if (o.mistake == Mistake::none || !o.files.save_o.empty())
    refuse_nonfinite("O", out.O, ref.O, o.accumulator());
  if (o.mistake == Mistake::none || !o.files.save_lse.empty())
    refuse_nonfinite("L", out.L, ref.L, o.accumulator());
  const RunVerdict verdict = judge_forward(judge, view(out.O), view(out.L), o.working());
  if (o.mistake != Mistake::none && o.parts.results) print_drift(in, out, ref, o);
  if (o.parts.results) print_errors(verdict, o);
  if (o.parts.results && o.mistake != Mistake::none)
    print_mistake_verdict(o.mistake, verdict.pass());
  if (o.show_p >= 0) print_p_row(in, out, ref, o);
  saved.add(o.files.save_q, in.Q), saved.add(o.files.save_k, in.K);
  saved.add(o.files.save_v, in.V);
  saved.add(o.files.save_o, out.O), saved.add(o.files.save_lse, out.L);
  return verdict;
}

template <class T>
void run_forward_as(const AttentionOptions& o, LoadedArrays& files) {
  ensure_reference_fits(o, 3, sizeof(wider_t<T>), o.heads());
  Recording rec(o.trace_files, ui::tr(Msg::forward_title));
  rec.emit(problem_event(o, "forward"));
  HeadOutputs saved(o.lead);
  const HeadsVerdict verdict =
      run_heads(o, files, rec, [&](index_t, const AttentionOptions& head, Recording* traced) {
        return forward_head<T>(head, files, traced, saved);
      });
  print_heads(o, verdict);
  rec.emit(result_event(o, "forward", verdict));
  conclude(o, verdict.all);
  rec.finish(files.files);
  saved.stage(files.files);
  files.files.commit();
}

}  // namespace

void setup_forward(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  o->n = 100, o->d = 32, o->Br = 16, o->Bc = 24;  // lecture: n, d = 100, 32; blocks 16 x 24
  CLI::App* sub = app.add_subcommand("forward", ui::tr(Msg::forward_help));
  add_attention_options(sub, *o, Subcommand::forward);
  add_row(sub, "--show-p", o->show_p, ui::tr(Msg::opt_show_p));
  sub->footer(ui::tr(Msg::forward_examples));
  sub->callback([o] {
    if (o->list_mistakes) return print_mistake_list(Subcommand::forward);
    run_forward(*o);
  });
}

void run_forward(AttentionOptions& o) {
  LoadedArrays files = validate_run(o, Subcommand::forward);
  dispatch_dtype(o, [&]<class T>() { run_forward_as<T>(o, files); });
}

}  // namespace fd::demos
