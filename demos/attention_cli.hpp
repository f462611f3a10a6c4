// attention_cli.hpp — what `forward` and `backward` share: their options (sizes or .npy inputs,
// mask, precision, mistakes), the problem header, and the verdict lines of DESIGN.md's rule.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common.hpp"
#include "flashdemo/attention.hpp"
#include "flashdemo/tiling.hpp"
#include "flashdemo/variant.hpp"
#include "recording.hpp"
#include "ui/text_trace.hpp"

namespace fd::demos {

struct ArrayFiles {
  std::string q, k, v, dO;                                  // inputs (.npy)
  std::string save_o, save_lse, save_dq, save_dk, save_dv;  // outputs (.npy)
};

enum class Device { cpu, cuda };

struct AttentionOptions {
  index_t n = 100, m = 0, d = 32;  // m = 0 means "same as n"
  index_t Br = 16, Bc = 16;
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  DType dtype = DType::fp64;  // the lecture's tensors are float64
  std::uint32_t seed = 0;
  std::optional<double> scale;
  ui::TraceLevel trace = ui::TraceLevel::summary;
  ArrayFiles files;
  TraceFiles trace_files;                 // --trace-json, --html
  Precision precision = Precision::fp64;  // bf16 / fp16: emulated, computed in fp32
  Mistake mistake = Mistake::none;        // --break
  bool list_mistakes = false;             // --break list
  index_t show_p = -1;                    // --show-p ROW (forward)
  Parts parts;
  Device device = Device::cpu;  // --device
  bool deterministic = false;   // --deterministic (backward on the GPU)

  index_t keys() const { return m ? m : n; }
  AttnParams params() const { return AttnParams{causal, align, scale}; }
  Tiling tiling() const { return Tiling{n, keys(), Br, Bc}; }
  TileSizes tiles() const { return TileSizes{Br, Bc}; }
  Variant variant() const { return Variant{precision, mistake}; }
  bool emulated() const { return precision == Precision::bf16 || precision == Precision::fp16; }
};

enum class Subcommand { forward, backward };

// Sizes, tiles, mask, dtype, seed, scale, trace, .npy files, --precision, --break; the defaults
// shown are those already in `o`.
void add_attention_options(CLI::App* sub, AttentionOptions& o, Subcommand which);

// Reads --q/--k/--v (and --do) when given, sets n, m, d from them, and checks every output path
// before anything runs (one-line error on any problem). A mistake that needs a mask turns it on:
// finite-mask needs masked scores (causal); wrong-align means bottom-right was intended.
struct LoadedArrays {
  Mat<double> Q, K, V, dO;  // dO empty unless --do
};
LoadedArrays prepare_inputs(AttentionOptions& o);

// Refuses sizes whose fp64 reference (extra_nm matrices of n x m doubles) would not fit.
void ensure_reference_fits(const AttentionOptions& o, double extra_nm);

// The problem: shapes, precision, scale, tiles, mask, where the inputs come from.
void print_problem(const AttentionOptions& o);

// The "problem" event that opens a JSON trace: sizes, tiles, mask and the tile grid.
nlohmann::json problem_event(const AttentionOptions& o, const char* subcommand);

// The name of the precision a run is judged in: fp64, fp32, bf16 or fp16.
const char* precision_name(const AttentionOptions& o);

// "max |X - X_ref| = 1.2e-16   exact to double rounding" (fp64) or the 2x-rule line.
void print_error_line(const std::string& label, const AttentionOptions& o, double err,
                      double err_naive, double ref_max_abs);

// What a --break mistake does and why it drifts (or, at these scores, does not).
void print_mistake(Mistake mistake);
void print_mistake_list(Subcommand which);

// Inputs in T: the files when given, else the lecture's random draws; rounded to the emulated
// precision when --precision asks.
template <class T>
Inputs<T> inputs_for(const AttentionOptions& o, const LoadedArrays& files) {
  Inputs<T> in = files.Q.size() ? Inputs<T>{files.Q.cast<T>(), files.K.cast<T>(), files.V.cast<T>()}
                                : lecture_inputs<T>(o.seed, o.n, o.keys(), o.d);
  if (o.emulated())
    for (Mat<T>* x : {&in.Q, &in.K, &in.V})
      *x = x->unaryExpr([&](T v) { return round_to(o.precision, v); });
  return in;
}

// Runs f.template operator()<T>() with T = float or double as --dtype / --precision say.
template <class F>
void dispatch_dtype(const AttentionOptions& o, F&& f) {
  if (o.dtype == DType::fp32 || o.emulated())
    f.template operator()<float>();
  else
    f.template operator()<double>();
}

// Writes `x` to `path` unless path is empty.
template <class X>
void save_if(const std::string& path, const X& x);

}  // namespace fd::demos
