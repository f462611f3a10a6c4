// forward.cpp — `flashdemo forward`: parse, call the library, print. No math here.
#include "forward.hpp"

#include <fmt/core.h>

#include <memory>

#include "common.hpp"
#include "flashdemo/compare.hpp"
#include "flashdemo/flash_forward.hpp"
#include "flashdemo/reference.hpp"
#include "ui/format.hpp"
#include "ui/text_trace.hpp"
#include "ui/tile_map.hpp"

namespace fd::demos {
namespace {

constexpr index_t kMaxSize = index_t(1) << 31;

struct ForwardOptions {
  index_t n = 100, m = 0, d = 32;  // lecture: n, d = 100, 32; m = 0 means "same as n"
  index_t Br = 16, Bc = 24;        // lecture: block_q=16, block_k=24
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  DType dtype = DType::fp64;  // lecture: dtype=torch.float64
  std::uint32_t seed = 0;
  std::optional<double> scale;
  ui::TraceLevel trace = ui::TraceLevel::summary;
};

void print_problem(const ForwardOptions& o, index_t m, const AttnParams& params) {
  const double scale = params.scale_for(o.d);
  fmt::print("\n  Q: {} x {},  K, V: {} x {},  {},  scale = {}{:.6g},  tiles Br = {}, Bc = {}\n",
             o.n, o.d, m, o.d, dtype_name(o.dtype),
             o.scale ? "" : fmt::format("1/sqrt({}) = ", o.d), scale, o.Br, o.Bc);
  fmt::print("  mask: {}\n", !o.causal ? "none (every query sees every key)"
                             : o.align == CausalAlign::top_left
                                 ? "causal, top-left (query q sees keys k <= q)"
                                 : "causal, bottom-right (query q sees keys k <= q + m - n)");
  index_t unseeing = 0;
  for (index_t q = 0; q < o.n; ++q) unseeing += params.mask_for(o.n, m).visible_keys(q) == 0;
  if (unseeing > 0)
    fmt::print("  {} of {} rows see no key at all (bottom-right, n > m): their O = 0, L = -inf\n",
               unseeing, o.n);
  fmt::print(
      "  inputs: Q, K, V = torch.randn(.., dtype=float64) x 3 after torch.manual_seed({})"
      "\n",
      o.seed);
}

// The verdict of DESIGN.md's correctness rule for one array.
template <class T>
std::string verdict(double err, double err_naive, double ref_max) {
  if constexpr (std::is_same_v<T, double>)
    return err <= double_bound(ref_max) ? "exact to double rounding" : "FAIL: above 1e-12 relative";
  const double bound = two_x_bound(err_naive);
  return fmt::format("naive fp32 {}, bound 2x + 1e-6 = {}: {}", ui::sci(err_naive), ui::sci(bound),
                     err <= bound ? "pass" : "FAIL");
}

template <class T>
void print_errors(const Inputs<T>& in, const ForwardResult<T>& out, const AttnParams& params) {
  const auto ref =
      reference_forward<double>(in.Q.template cast<double>(), in.K.template cast<double>(),
                                in.V.template cast<double>(), params);
  ForwardResult<T> naive;
  if constexpr (!std::is_same_v<T, double>) naive = reference_forward<T>(in.Q, in.K, in.V, params);
  auto naive_err = [&](const auto& x, const auto& r) {
    return std::is_same_v<T, double> ? 0.0 : max_abs_error(x, r).value;
  };
  const double eO = max_abs_error(out.O, ref.O).value, eL = max_abs_error(out.L, ref.L).value;
  ui::section("Against the reference (standard attention in fp64, S and P materialized):");
  fmt::print("  max |O - O_ref| = {:<8}  {}\n", ui::sci(eO),
             verdict<T>(eO, naive_err(naive.O, ref.O), ref.O.cwiseAbs().maxCoeff()));
  const Vec<double> finite_L = ref.L.unaryExpr([](double v) { return std::isinf(v) ? 0.0 : v; });
  fmt::print("  max |L - L_ref| = {:<8}  {}\n", ui::sci(eL),
             verdict<T>(eL, naive_err(naive.L, ref.L), finite_L.cwiseAbs().maxCoeff()));
}

template <class T>
void run_forward(const ForwardOptions& o) {
  const index_t m = o.m ? o.m : o.n;
  const double words = double(o.n + 2 * m) * double(o.d) * 3 + 2.0 * double(o.n) * double(m);
  ensure_fits(words * 8.0 * (std::is_same_v<T, float> ? 1.5 : 1.0),
              "the reference (S and P, n x m in fp64)");
  const AttnParams params{o.causal, o.align, o.scale};
  const Inputs<T> in = lecture_inputs<T>(o.seed, o.n, m, o.d);
  ui::heading("flashdemo forward · FlashAttention forward: exact attention, one tile at a time",
              "lecture 5, demo 2 (05_flash_attention.py: flash_attention_forward)");
  print_problem(o, m, params);
  fmt::print("\n");
  if (o.trace >= ui::TraceLevel::summary)
    ui::print_tile_map(Tiling{o.n, m, o.Br, o.Bc}, params.mask_for(o.n, m));
  ui::ForwardTrace trace(o.trace);
  if (o.trace >= ui::TraceLevel::tiles) {
    ui::section("Trace: each tile updates its rows' running max m and sum l");
    trace.print_header();
  }
  const ForwardResult<T> out = flash_forward(in.Q, in.K, in.V, params, TileSizes{o.Br, o.Bc},
                                             o.trace >= ui::TraceLevel::tiles ? &trace : nullptr);
  print_errors(in, out, params);
}

}  // namespace

void setup_forward(CLI::App& app) {
  auto o = std::make_shared<ForwardOptions>();
  CLI::App* sub = app.add_subcommand(
      "forward", "Exact tiled attention with online softmax, causal tiles skipped (demo 2)");
  add_count(sub, "--n", o->n, "Queries (rows of Q)", kMaxSize);
  add_count(sub, "--m", o->m, "Keys (rows of K and V)", kMaxSize)->default_str("n");
  add_count(sub, "--d", o->d, "Head dimension", index_t(1) << 16);
  add_count(sub, "--block-q", o->Br, "Br: query rows per tile", kMaxSize);
  add_count(sub, "--block-k", o->Bc, "Bc: keys per tile", kMaxSize);
  sub->add_flag("--causal", o->causal, "Causal mask: query q sees only keys up to the diagonal");
  add_align(sub, o->align);
  add_dtype(sub, o->dtype);
  add_seed(sub, o->seed);
  add_finite(sub, "--scale", o->scale, "Softmax scale [1/sqrt(d)]");
  add_choice<ui::TraceLevel>(sub, "--trace", o->trace,
                             {{"none", ui::TraceLevel::none},
                              {"summary", ui::TraceLevel::summary},
                              {"tiles", ui::TraceLevel::tiles},
                              {"rows", ui::TraceLevel::rows}},
                             "How much to show: none, summary (tile map), tiles (a line per "
                             "tile), rows (every row after every tile)")
      ->default_str("summary");
  sub->callback(
      [o] { o->dtype == DType::fp32 ? run_forward<float>(*o) : run_forward<double>(*o); });
}

}  // namespace fd::demos
