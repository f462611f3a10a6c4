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
  const double n = double(o.n), m = double(o.keys()), d = double(o.d), e = double(bytes);
  const double flash = (2 * n * d + 2 * m * d + n) * e;
  const double standard = (2 * n * d + 2 * m * d + n * m) * e;
  fmt::print("  stored by the forward:  FlashAttention  Q, K, V, O + L (n)       = {:>10}\n",
             format_bytes(flash));
  fmt::print("                          standard        Q, K, V, O + P (n x m)   = {:>10}\n",
             format_bytes(standard));
}

template <class T>
BackwardResult<double> reference_gradients(const Inputs<T>& in, const AttentionOptions& o,
                                           const Upstream& up) {
  // Each path differentiates the same loss; with dO = 2 O each uses its own O.
  const Mat<double> Q = in.Q.template cast<double>(), K = in.K.template cast<double>(),
                    V = in.V.template cast<double>();
  const auto r = reference_backward<double>(
      Q, K, V, up.dO<double>(reference_forward(Q, K, V, o.params()).O), o.params());
  return {r.dQ, r.dK, r.dV, r.D};
}

template <class T>
BackwardResult<double> naive_gradients(const Inputs<T>& in, const AttentionOptions& o,
                                       const Upstream& up) {
  const auto O = reference_forward<T>(in.Q, in.K, in.V, o.params(), o.precision).O;
  Mat<T> dO = up.dO<T>(O);
  dO = dO.unaryExpr([&](T v) { return round_to(o.precision, v); });
  const auto r = reference_backward<T>(in.Q, in.K, in.V, dO, o.params(), o.precision);
  return {r.dQ.template cast<double>(), r.dK.template cast<double>(), r.dV.template cast<double>(),
          r.D.template cast<double>()};
}

template <class T>
void print_finite_differences(const Inputs<T>& in, const BackwardResult<T>& g,
                              const AttentionOptions& o, const Upstream& up) {
  const auto samples = finite_difference_grads(
      in.Q.template cast<double>(), in.K.template cast<double>(), in.V.template cast<double>(),
      o.params(), up.given() ? &up.files.dO : nullptr);
  ui::section(fmt::format("Against central finite differences of {} (fp64 reference, h = 1e-5):",
                          up.given() ? "sum(O * dO)" : "sum(O^2)"));
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
void print_results(const BackwardResult<T>& g, const BackwardResult<double>& ref,
                   const BackwardResult<double>& naive, const AttentionOptions& o) {
  ui::section("Against the reference backward (fp64, P materialized, analytic gradients):");
  const char* names[] = {"dQ", "dK", "dV"};
  const Mat<T>* mine[] = {&g.dQ, &g.dK, &g.dV};
  const Mat<double>* refs[] = {&ref.dQ, &ref.dK, &ref.dV};
  const Mat<double>* naives[] = {&naive.dQ, &naive.dK, &naive.dV};
  for (int k = 0; k < 3; ++k)
    print_error_line(names[k], o, max_abs_error(*mine[k], *refs[k]).value,
                     max_abs_error(*naives[k], *refs[k]).value, refs[k]->cwiseAbs().maxCoeff());
  print_error_line("D", o, max_abs_error(g.D, ref.D).value, max_abs_error(naive.D, ref.D).value,
                   ref.D.cwiseAbs().maxCoeff());
  fmt::print("  (D = rowsum(dO * O) here; D_ref = rowsum(P * dP) from the materialized P)\n");
}

template <class T>
void print_drift(const BackwardResult<T>& g, const BackwardResult<double>& ref,
                 const AttentionOptions& o) {
  print_mistake(o.mistake);
  const char* names[] = {"dQ", "dK", "dV"};
  const Mat<T>* mine[] = {&g.dQ, &g.dK, &g.dV};
  const Mat<double>* refs[] = {&ref.dQ, &ref.dK, &ref.dV};
  fmt::print("\n");
  for (int k = 0; k < 3; ++k)
    fmt::print("  broken: max |{} - {}_ref| = {:<8} {} of {} rows off by more than 1e-6\n",
               names[k], names[k], ui::sci(max_abs_error(*mine[k], *refs[k]).value),
               rows_above(*mine[k], *refs[k], 1e-6), refs[k]->rows());
}

template <class T>
void run_backward(const AttentionOptions& o, const LoadedArrays& files) {
  ensure_reference_fits(o, 9);
  const Inputs<T> in = inputs_for<T>(o, files);
  const Upstream up{files};
  ui::heading("flashdemo backward · FlashAttention-2 backward: P recomputed from the saved L",
              "lecture 5, demo 3 (05_flash_attention.py: flash_attention_backward)");
  print_problem(o);
  fmt::print("  loss = {};  D = rowsum(dO * O);  outer loop over key tiles\n\n",
             up.given() ? "sum(O * dO) with dO = " + o.files.dO : "sum(O^2), so dO = 2 O");
  print_storage(o, o.emulated() ? 2 : sizeof(T));
  fmt::print("\n");
  const ForwardResult<T> fwd =
      flash_forward(in.Q, in.K, in.V, o.params(), o.tiles(), nullptr, o.variant());
  const Mat<T> dO = up.dO<T>(fwd.O).unaryExpr([&](T v) { return round_to(o.precision, v); });
  if (o.trace >= ui::TraceLevel::summary)
    ui::print_tile_map(o.tiling(), o.params().mask_for(o.n, o.keys()));
  ui::BackwardTrace trace(o.trace);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section("Trace: key tiles j outside, query tiles i inside; P recomputed from L");
    trace.print_header();
  }
  const BackwardResult<T> g =
      flash_backward(in.Q, in.K, in.V, fwd.O, fwd.L, dO, o.params(), o.tiles(),
                     o.trace >= ui::TraceLevel::tiles ? &trace : nullptr, o.variant());
  const BackwardResult<double> ref = reference_gradients(in, o, up);
  if (o.mistake != Mistake::none) print_drift(g, ref, o);
  print_results(g, ref, naive_gradients(in, o, up), o);
  print_finite_differences(in, g, o, up);
  save_if(o.files.save_o, fwd.O);
  save_if(o.files.save_lse, fwd.L);
  save_if(o.files.save_dq, g.dQ);
  save_if(o.files.save_dk, g.dK);
  save_if(o.files.save_dv, g.dV);
}

}  // namespace

void setup_backward(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  o->n = 70, o->d = 16, o->Br = 16, o->Bc = 16;  // lecture: n, d = 70, 16; blocks 16 x 16
  CLI::App* sub = app.add_subcommand(
      "backward", "FlashAttention-2 backward, P recomputed from the saved logsumexp L (demo 3)");
  add_attention_options(sub, *o, Subcommand::backward);
  sub->callback([o] {
    if (o->list_mistakes) return print_mistake_list(Subcommand::backward);
    const LoadedArrays files = prepare_inputs(*o);
    dispatch_dtype(*o, [&]<class T>() { run_backward<T>(*o, files); });
  });
}

}  // namespace fd::demos
