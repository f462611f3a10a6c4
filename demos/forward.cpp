// forward.cpp — `flashdemo forward`: parse, call the library, print. No math here.
#include "forward.hpp"

#include <fmt/core.h>

#include <memory>

#include "attention_cli.hpp"
#include "device.hpp"
#include "flashdemo/compare.hpp"
#include "flashdemo/flash_forward.hpp"
#include "flashdemo/reference.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"
#include "ui/text_trace.hpp"
#include "ui/tile_map.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

template <class T>
nlohmann::json result_event(const ForwardResult<T>& out, const ReferenceForward<double>& ref) {
  return {{"event", "result"},
          {"subcommand", "forward"},
          {"err_O", ui::number(max_abs_error(out.O, ref.O).value)},
          {"err_L", ui::number(max_abs_error(out.L, ref.L).value)}};
}

template <class T>
void print_errors(const ForwardResult<T>& out, const ReferenceForward<double>& ref,
                  const ForwardResult<double>& naive, const AttentionOptions& o) {
  const Vec<double> finite_L = ref.L.unaryExpr([](double v) { return std::isinf(v) ? 0.0 : v; });
  ui::section(ui::tr(Msg::against_reference));
  print_error_line("O", o, max_abs_error(out.O, ref.O).value, max_abs_error(naive.O, ref.O).value,
                   ref.O.cwiseAbs().maxCoeff());
  print_error_line("L", o, max_abs_error(out.L, ref.L).value, max_abs_error(naive.L, ref.L).value,
                   finite_L.cwiseAbs().maxCoeff());
}

// The broken run beside the correct one: how far the mistake drifts, and where.
template <class T>
void print_drift(const Inputs<T>& in, const ForwardResult<T>& broken,
                 const ReferenceForward<double>& ref, const AttentionOptions& o) {
  print_mistake(o.mistake);
  const MaxError e = max_abs_error(broken.O, ref.O);
  ui::result(Msg::forward_broken, ui::sci(e.value), e.index / o.d,
             rows_above(broken.O, ref.O, 1e-6), o.n);
  ui::result(Msg::forward_broken_L, ui::sci(max_abs_error(broken.L, ref.L).value));
  AttentionOptions fixed = o;
  fixed.mistake = Mistake::none;
  const auto good =
      flash_forward(in.Q, in.K, in.V, o.params(), o.tiles(), nullptr, fixed.variant());
  ui::result(Msg::forward_correct, ui::sci(max_abs_error(good.O, ref.O).value));
}

// Row q of P recovered from L beside the materialized reference row.
template <class T>
void print_p_row(const Inputs<T>& in, const ForwardResult<T>& out,
                 const ReferenceForward<double>& ref, const AttentionOptions& o) {
  const index_t q = o.show_p, m = o.keys();
  const std::vector<T> p = recover_p_row(in.Q, in.K, out.L, o.params(), q);
  ui::section(ui::tr(Msg::show_p_title, q, q, q, q));
  ui::result_raw(fmt::format("  {:>6}  {:>20}  {:>20}  {:>9}\n", "k", ui::tr(Msg::show_p_recovered),
                             ui::tr(Msg::show_p_reference), "|diff|"));
  double sum = 0, worst = 0;
  for (index_t k = 0; k < m; ++k) {
    const double mine = double(p[std::size_t(k)]), theirs = ref.P(q, k);
    sum += mine, worst = std::max(worst, std::abs(mine - theirs));
    if (m <= 24 || k < 10 || k >= m - 10)
      ui::result_raw(fmt::format("  {:>6}  {:>20.15f}  {:>20.15f}  {:>9}\n", k, mine, theirs,
                                 ui::sci(std::abs(mine - theirs))));
    else if (k == 10)
      ui::result_raw(fmt::format("  {:>6}\n", "…"));
  }
  ui::result(Msg::show_p_sum, sum, ui::sci(worst));
}

template <class T>
void run_forward_as(const AttentionOptions& o, const LoadedArrays& files) {
  ensure_reference_fits(o, 3);
  const Inputs<T> in = inputs_for<T>(o, files);
  Recording rec(o.trace_files, "flashdemo forward");
  rec.emit(problem_event(o, "forward"));
  if (o.parts.heading) ui::heading(ui::tr(Msg::forward_title), ui::tr(Msg::forward_source));
  if (o.parts.problem) print_problem(o);
  ui::say_raw("\n");
  if (o.parts.map && o.trace >= ui::TraceLevel::summary)
    ui::print_tile_map(o.tiling(), o.params().mask_for(o.n, o.keys()));
  ui::ForwardTrace trace(o.trace);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section(ui::tr(Msg::forward_trace_title));
    trace.print_header();
    rec.add_text(&trace);
  }
  const ForwardResult<T> out = forward_on_device(o, in, rec.sink());
  const auto ref =
      reference_forward<double>(in.Q.template cast<double>(), in.K.template cast<double>(),
                                in.V.template cast<double>(), o.params());
  const auto low = reference_forward<T>(in.Q, in.K, in.V, o.params(), o.precision);
  const ForwardResult<double> naive{low.O.template cast<double>(), low.L.template cast<double>()};
  if (o.mistake != Mistake::none) print_drift(in, out, ref, o);
  if (o.parts.results) print_errors(out, ref, naive, o);
  if (o.show_p >= 0) print_p_row(in, out, ref, o);
  rec.emit(result_event(out, ref));
  rec.finish();
  save_if(o.files.save_o, out.O);
  save_if(o.files.save_lse, out.L);
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
  require_device(o);
  const LoadedArrays files = prepare_inputs(o);
  if (o.show_p >= o.n) throw Error(kUsage, ui::tr(Msg::err_show_p, o.show_p, o.n));
  dispatch_dtype(o, [&]<class T>() { run_forward_as<T>(o, files); });
}

}  // namespace fd::demos
