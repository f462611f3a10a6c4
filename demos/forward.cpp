// forward.cpp — `flashdemo forward`: parse, call the library, print. No math here.
#include "forward.hpp"

#include <fmt/core.h>

#include <memory>

#include "attention_cli.hpp"
#include "flashdemo/compare.hpp"
#include "flashdemo/flash_forward.hpp"
#include "flashdemo/reference.hpp"
#include "ui/format.hpp"
#include "ui/text_trace.hpp"
#include "ui/tile_map.hpp"

namespace fd::demos {
namespace {

template <class T>
void print_errors(const Inputs<T>& in, const ForwardResult<T>& out, const AttentionOptions& o) {
  const auto ref =
      reference_forward<double>(in.Q.template cast<double>(), in.K.template cast<double>(),
                                in.V.template cast<double>(), o.params());
  ForwardResult<double> naive{ref.O, ref.L};  // in fp64 the naive path is the reference
  if constexpr (!std::is_same_v<T, double>) {
    const auto lo = reference_forward<T>(in.Q, in.K, in.V, o.params());
    naive = {lo.O.template cast<double>(), lo.L.template cast<double>()};
  }
  const Vec<double> finite_L = ref.L.unaryExpr([](double v) { return std::isinf(v) ? 0.0 : v; });
  ui::section("Against the reference (standard attention in fp64, S and P materialized):");
  print_error_line("O", o.dtype, max_abs_error(out.O, ref.O).value,
                   max_abs_error(naive.O, ref.O).value, ref.O.cwiseAbs().maxCoeff());
  print_error_line("L", o.dtype, max_abs_error(out.L, ref.L).value,
                   max_abs_error(naive.L, ref.L).value, finite_L.cwiseAbs().maxCoeff());
}

template <class T>
void run_forward(const AttentionOptions& o) {
  ensure_reference_fits(o, std::is_same_v<T, float> ? 3 : 2);
  const Inputs<T> in = inputs_for<T>(o);
  ui::heading("flashdemo forward · FlashAttention forward: exact attention, one tile at a time",
              "lecture 5, demo 2 (05_flash_attention.py: flash_attention_forward)");
  print_problem(o);
  fmt::print("\n");
  if (o.trace >= ui::TraceLevel::summary)
    ui::print_tile_map(o.tiling(), o.params().mask_for(o.n, o.keys()));
  ui::ForwardTrace trace(o.trace);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section("Trace: each tile updates its rows' running max m and sum l");
    trace.print_header();
  }
  const ForwardResult<T> out = flash_forward(in.Q, in.K, in.V, o.params(), o.tiles(),
                                             o.trace >= ui::TraceLevel::tiles ? &trace : nullptr);
  print_errors(in, out, o);
}

}  // namespace

void setup_forward(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  o->n = 100, o->d = 32, o->Br = 16, o->Bc = 24;  // lecture: n, d = 100, 32; blocks 16 x 24
  CLI::App* sub = app.add_subcommand(
      "forward", "Exact tiled attention with online softmax, causal tiles skipped (demo 2)");
  add_attention_options(sub, *o);
  sub->callback([o] { dispatch_dtype(o->dtype, [&]<class T>() { run_forward<T>(*o); }); });
}

}  // namespace fd::demos
