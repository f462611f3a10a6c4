// attention_cli.cpp — the options and output `forward` and `backward` share.
#include "attention_cli.hpp"

#include <fmt/core.h>

#include "flashdemo/compare.hpp"
#include "ui/format.hpp"

namespace fd::demos {
namespace {
constexpr index_t kMaxSize = index_t(1) << 31;
}

void add_attention_options(CLI::App* sub, AttentionOptions& o) {
  add_count(sub, "--n", o.n, "Queries (rows of Q)", kMaxSize);
  add_count(sub, "--m", o.m, "Keys (rows of K and V)", kMaxSize)->default_str("n");
  add_count(sub, "--d", o.d, "Head dimension", index_t(1) << 16);
  add_count(sub, "--block-q", o.Br, "Br: query rows per tile", kMaxSize);
  add_count(sub, "--block-k", o.Bc, "Bc: keys per tile", kMaxSize);
  sub->add_flag("--causal", o.causal, "Causal mask: query q sees only keys up to the diagonal");
  add_align(sub, o.align);
  add_dtype(sub, o.dtype);
  add_seed(sub, o.seed);
  add_finite(sub, "--scale", o.scale, "Softmax scale [1/sqrt(d)]");
  add_choice<ui::TraceLevel>(sub, "--trace", o.trace,
                             {{"none", ui::TraceLevel::none},
                              {"summary", ui::TraceLevel::summary},
                              {"tiles", ui::TraceLevel::tiles},
                              {"rows", ui::TraceLevel::rows}},
                             "How much to show: none, summary (tile map), tiles (a line per "
                             "tile), rows (every row after every tile)")
      ->default_str("summary");
}

void ensure_reference_fits(const AttentionOptions& o, double extra_nm) {
  const double n = double(o.n), m = double(o.keys()), d = double(o.d);
  const double words = (n + 2 * m) * d * 4 + extra_nm * n * m;  // inputs, copies; n x m arrays
  ensure_fits(words * 8.0, fmt::format("the fp64 reference ({} matrices of n x m)", extra_nm));
}

void print_problem(const AttentionOptions& o) {
  const AttnParams params = o.params();
  const index_t m = o.keys();
  fmt::print("\n  Q: {} x {},  K, V: {} x {},  {},  scale = {}{:.6g},  tiles Br = {}, Bc = {}\n",
             o.n, o.d, m, o.d, dtype_name(o.dtype),
             o.scale ? "" : fmt::format("1/sqrt({}) = ", o.d), params.scale_for(o.d), o.Br, o.Bc);
  fmt::print("  mask: {}\n", !o.causal ? "none (every query sees every key)"
                             : o.align == CausalAlign::top_left
                                 ? "causal, top-left (query q sees keys k <= q)"
                                 : "causal, bottom-right (query q sees keys k <= q + m - n)");
  const Mask mask = params.mask_for(o.n, m);
  index_t unseeing = 0;
  for (index_t q = 0; q < o.n; ++q) unseeing += mask.visible_keys(q) == 0;
  if (unseeing > 0)
    fmt::print("  {} of {} rows see no key at all (bottom-right, n > m): their O = 0, L = -inf\n",
               unseeing, o.n);
  fmt::print("  inputs: Q, K, V = torch.randn(.., dtype=float64) x 3 after torch.manual_seed({})\n",
             o.seed);
}

void print_error_line(const std::string& label, DType dtype, double err, double err_naive,
                      double ref_max_abs) {
  std::string verdict;
  if (dtype == DType::fp64) {
    verdict = err <= double_bound(ref_max_abs) ? "exact to double rounding"
                                               : "FAIL: above 1e-12 relative";
  } else {
    const double bound = two_x_bound(err_naive);
    verdict = fmt::format("naive fp32 {}, bound 2x + 1e-6 = {}: {}", ui::sci(err_naive),
                          ui::sci(bound), err <= bound ? "pass" : "FAIL");
  }
  fmt::print("  max |{} - {}_ref| = {:<8}  {}\n", label, label, ui::sci(err), verdict);
}

}  // namespace fd::demos
