// backward.cpp — `flashdemo backward`: parse, call the library, print. No math here.
#include "backward.hpp"

#include <fmt/core.h>

#include <memory>

#include "attention_cli.hpp"
#include "flashdemo/compare.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/gradcheck.hpp"
#include "flashdemo/reference.hpp"
#include "ui/format.hpp"
#include "ui/text_trace.hpp"
#include "ui/tile_map.hpp"

namespace fd::demos {
namespace {

// What the backward needs from the forward, against what a standard backward keeps.
void print_storage(const AttentionOptions& o, std::size_t bytes) {
  const double n = double(o.n), m = double(o.keys()), d = double(o.d), e = double(bytes);
  const double flash = (2 * n * d + 2 * m * d + n) * e,
               standard = (2 * n * d + 2 * m * d + n * m) * e;
  fmt::print("  stored by the forward:  FlashAttention  Q, K, V, O + L (n)       = {:>10}\n",
             format_bytes(flash));
  fmt::print("                          standard        Q, K, V, O + P (n x m)   = {:>10}\n",
             format_bytes(standard));
}

template <class T>
BackwardResult<double> reference_gradients(const Inputs<T>& in, const AttentionOptions& o) {
  // Each path differentiates its own loss sum(O^2): dO = 2 O with its own O.
  const Mat<double> Q = in.Q.template cast<double>(), K = in.K.template cast<double>(),
                    V = in.V.template cast<double>();
  const auto r = reference_backward<double>(Q, K, V, 2.0 * reference_forward(Q, K, V, o.params()).O,
                                            o.params());
  return {r.dQ, r.dK, r.dV, r.D};
}

template <class T>
BackwardResult<double> naive_gradients(const Inputs<T>& in, const AttentionOptions& o) {
  const auto O = reference_forward<T>(in.Q, in.K, in.V, o.params()).O;
  const auto r = reference_backward<T>(in.Q, in.K, in.V, T(2) * O, o.params());
  return {r.dQ.template cast<double>(), r.dK.template cast<double>(), r.dV.template cast<double>(),
          r.D.template cast<double>()};
}

template <class T>
void print_finite_differences(const Inputs<T>& in, const BackwardResult<T>& g,
                              const AttentionOptions& o) {
  const auto samples =
      finite_difference_grads(in.Q.template cast<double>(), in.K.template cast<double>(),
                              in.V.template cast<double>(), o.params());
  ui::section("Against central finite differences of sum(O^2) (fp64 reference, h = 1e-5):");
  fmt::print("  {:<14} {:>16} {:>16} {:>10}\n", "entry", "flash backward", "finite diff.",
             "|diff|");
  const char* names[] = {"dQ", "dK", "dV"};
  const Mat<T>* grads[] = {&g.dQ, &g.dK, &g.dV};
  for (const GradSample& s : samples) {
    const int k = int(s.operand);
    const double mine = double((*grads[k])(s.row, s.col));
    fmt::print("  {:<14} {:>16.10f} {:>16.10f} {:>10}\n",
               fmt::format("{}({},{})", names[k], s.row, s.col), mine, s.value,
               ui::sci(std::abs(mine - s.value)));
  }
}

template <class T>
void print_results(const Inputs<T>& in, const BackwardResult<T>& g, const AttentionOptions& o) {
  const BackwardResult<double> ref = reference_gradients(in, o), naive = naive_gradients(in, o);
  ui::section("Against the reference backward (fp64, P materialized, analytic gradients):");
  const std::pair<const char*, std::pair<const Mat<T>*, const Mat<double>*>> arrays[] = {
      {"dQ", {&g.dQ, &ref.dQ}}, {"dK", {&g.dK, &ref.dK}}, {"dV", {&g.dV, &ref.dV}}};
  const Mat<double>* naive_arrays[] = {&naive.dQ, &naive.dK, &naive.dV};
  for (int k = 0; k < 3; ++k) {
    const auto& [name, pair] = arrays[k];
    print_error_line(name, o.dtype, max_abs_error(*pair.first, *pair.second).value,
                     max_abs_error(*naive_arrays[k], *pair.second).value,
                     pair.second->cwiseAbs().maxCoeff());
  }
  print_error_line("D", o.dtype, max_abs_error(g.D, ref.D).value,
                   max_abs_error(naive.D, ref.D).value, ref.D.cwiseAbs().maxCoeff());
  fmt::print("  (D = rowsum(dO * O) here; D_ref = rowsum(P * dP) from the materialized P)\n");
  print_finite_differences(in, g, o);
}

template <class T>
void run_backward(const AttentionOptions& o) {
  ensure_reference_fits(o, std::is_same_v<T, float> ? 9 : 6);
  const Inputs<T> in = inputs_for<T>(o);
  ui::heading("flashdemo backward · FlashAttention-2 backward: P recomputed from the saved L",
              "lecture 5, demo 3 (05_flash_attention.py: flash_attention_backward)");
  print_problem(o);
  fmt::print("  loss = sum(O^2), so dO = 2 O;  D = rowsum(dO * O);  outer loop over key tiles\n\n");
  print_storage(o, sizeof(T));
  fmt::print("\n");
  const ForwardResult<T> fwd = flash_forward(in.Q, in.K, in.V, o.params(), o.tiles());
  const Mat<T> dO = T(2) * fwd.O;
  if (o.trace >= ui::TraceLevel::summary)
    ui::print_tile_map(o.tiling(), o.params().mask_for(o.n, o.keys()));
  ui::BackwardTrace trace(o.trace);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section("Trace: key tiles j outside, query tiles i inside; P recomputed from L");
    trace.print_header();
  }
  const BackwardResult<T> g =
      flash_backward(in.Q, in.K, in.V, fwd.O, fwd.L, dO, o.params(), o.tiles(),
                     o.trace >= ui::TraceLevel::tiles ? &trace : nullptr);
  print_results(in, g, o);
}

}  // namespace

void setup_backward(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  o->n = 70, o->d = 16, o->Br = 16, o->Bc = 16;  // lecture: n, d = 70, 16; blocks 16 x 16
  CLI::App* sub = app.add_subcommand(
      "backward", "FlashAttention-2 backward, P recomputed from the saved logsumexp L (demo 3)");
  add_attention_options(sub, *o);
  sub->callback([o] { dispatch_dtype(o->dtype, [&]<class T>() { run_backward<T>(*o); }); });
}

}  // namespace fd::demos
