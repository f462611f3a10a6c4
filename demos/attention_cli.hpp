// attention_cli.hpp — what `forward` and `backward` share: their options, the problem header,
// and the verdict lines of DESIGN.md's correctness rule.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common.hpp"
#include "flashdemo/attention.hpp"
#include "flashdemo/tiling.hpp"
#include "ui/text_trace.hpp"

namespace fd::demos {

struct AttentionOptions {
  index_t n = 100, m = 0, d = 32;  // m = 0 means "same as n"
  index_t Br = 16, Bc = 16;
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  DType dtype = DType::fp64;  // the lecture's tensors are float64
  std::uint32_t seed = 0;
  std::optional<double> scale;
  ui::TraceLevel trace = ui::TraceLevel::summary;

  index_t keys() const { return m ? m : n; }
  AttnParams params() const { return AttnParams{causal, align, scale}; }
  Tiling tiling() const { return Tiling{n, keys(), Br, Bc}; }
  TileSizes tiles() const { return TileSizes{Br, Bc}; }
};

// --n --m --d --block-q --block-k --causal --causal-align --dtype --seed --scale --trace;
// the defaults shown are those already in `o`.
void add_attention_options(CLI::App* sub, AttentionOptions& o);

// Refuses sizes whose fp64 reference (extra_nm matrices of n x m doubles) would not fit.
void ensure_reference_fits(const AttentionOptions& o, double extra_nm);

// The problem: shapes, precision, scale, tiles, mask, where the inputs come from.
void print_problem(const AttentionOptions& o);

// "max |X - X_ref| = 1.2e-16   exact to double rounding" (fp64) or the 2x-rule line (fp32).
void print_error_line(const std::string& label, DType dtype, double err, double err_naive,
                      double ref_max_abs);

template <class T>
Inputs<T> inputs_for(const AttentionOptions& o) {
  return lecture_inputs<T>(o.seed, o.n, o.keys(), o.d);
}

// Runs f.template operator()<T>() with T = float or double as --dtype says.
template <class F>
void dispatch_dtype(DType dtype, F&& f) {
  if (dtype == DType::fp32)
    f.template operator()<float>();
  else
    f.template operator()<double>();
}

}  // namespace fd::demos
