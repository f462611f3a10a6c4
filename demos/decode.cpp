// decode.cpp — `flashdemo decode`: split-KV attention ("flash-decoding") on the CPU. The library
// (flashdemo/at_scale/split_kv.hpp) plans the splits, computes them on OpenMP threads and merges
// them (online_softmax.hpp: merge_splits); this file prints the problem, the plan, the splits and
// their L_s, the merge of the first rows, the verdict against the reference (compare.hpp: the 2x
// rule), and the timing of S splits and of S = 1 beside a parallel read of as many bytes
// (benchmark.hpp: time_loop, read_bandwidth). --device cuda runs on the GPU (decode_gpu.cpp),
// printing the same parts (decode_parts.hpp).
// --json: one `decode_split` object per split, then one `result` (docs/trace-format.md, section
// 10).
#include "decode.hpp"
#include "decode_parts.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "flashdemo/at_scale/split_kv.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/tools/benchmark.hpp"
#include "ui/format.hpp"
#include "ui/json_trace.hpp"
#include "ui/output.hpp"
#include "ui/progress.hpp"
#include "ui/verdict.hpp"

namespace fd::demos::decoding {
namespace {

using ui::Msg;

constexpr index_t kShownSplits = 8, kShownRows = 4;  // the text's tables
constexpr index_t kShownEfficiencies = 8;            // eff(S) listed in the plan
constexpr index_t kJsonRows = 64;                    // rows of head 0 in each decode_split

}  // namespace

SplitPlan plan_for(const DecodeOptions& o, index_t workers, index_t min_tiles) {
  const Tiling t = o.tiling();
  const index_t units = decode_units(o.shape(), o.tiles());
  if (o.splits == 0) return plan_splits(units, workers, t.Tc(), min_tiles);
  if (o.splits > t.Tc())
    throw Error(kUsage, ui::tr(Msg::decode_err_splits, o.splits, t.Tc(), o.m, t.Bc));
  return forced_splits(units, workers, t.Tc(), o.splits, min_tiles);
}

namespace {

// Everything the run holds at once, in bytes: Q, K, V (and dO, which the shared draws make), the
// draws of one array in double, the partial and merged outputs of S splits and of S = 1, the read
// buffer (as large as K and V), and one head's reference, naive run and magnitudes (S and P,
// n x m each, and their inputs in the wider type).
double bytes_needed(const DecodeOptions& o, index_t num_splits, double t_bytes, double w_bytes) {
  const double H = double(o.heads()), n = double(o.n), m = double(o.m), d = double(o.d);
  const double inputs = H * (2 * n + 2 * m) * d * t_bytes;
  const double draws = H * m * d * 8;
  const double outputs = H * (double(num_splits) + 2) * n * (d + 1) * 2 * t_bytes;
  const double read = 2 * H * m * d * t_bytes;
  const double reference = 6 * n * m * w_bytes + 2 * (n + 2 * m) * d * w_bytes;
  return inputs + draws + outputs + read + reference;
}

}  // namespace

std::vector<index_t> checked_heads(const DecodeOptions& o) {
  if (o.heads() == 1) return {0};
  return {0, o.heads() - 1};
}

template <class T>
Checked check_heads(const DecodeOptions& o, Precision p, const std::vector<HeadArrays<T>>& heads,
                    index_t splits) {
  const index_t n = o.n, m = o.m, d = o.d;
  Checked all;
  for (const HeadArrays<T>& h : heads) {
    const Mat<T> Q = MatView<T>(h.Q, n, d), K = MatView<T>(h.K, m, d), V = MatView<T>(h.V, m, d);
    const ForwardJudge<T> j = forward_judge<T>(Q, K, V, o.params(), p, merges_split_kv(splits));
    require_fits(j.ref.S, "S = scale Q K^T", p, "");
    all.fold(judge_forward(j, MatView<T>(h.O, n, d), VecView<T>(h.L, n), p));
  }
  return all;
}
template Checked check_heads(const DecodeOptions&, Precision, const std::vector<HeadArrays<float>>&,
                             index_t);
template Checked check_heads(const DecodeOptions&, Precision,
                             const std::vector<HeadArrays<double>>&, index_t);

namespace {

// The CPU run's checked heads, from the arrays of every head.
template <class T>
Checked check(const DecodeOptions& o, const bench::Arrays<T>& a, const SplitKvResult<T>& r) {
  const index_t n = o.n, m = o.m, d = o.d;
  std::vector<HeadArrays<T>> heads;
  for (index_t h : checked_heads(o))
    heads.push_back({a.Q.data() + h * n * d, a.K.data() + h * m * d, a.V.data() + h * m * d,
                     r.O.data() + h * n * d, r.L.data() + h * n});
  return check_heads(o, precision_of<T>(), heads, r.splits);
}

struct Timing {
  bench::Times split, single;  // S splits; S = 1
  bench::ReadBandwidth read;
  double bytes = 0;  // of K and V the run must read
  double gbps(const bench::Times& t) const { return bytes / (t.median_ms * 1e6); }
};

template <class T>
Timing time_runs(const DecodeOptions& o, const SplitPlan& plan, const bench::Arrays<T>& a,
                 SplitKvResult<T>& out) {
  Timing t;
  t.bytes = kv_bytes(o.shape(), o.mask(), sizeof(T));
  auto run = [&](index_t num_splits, SplitKvResult<T>& r) {
    return bench::summarize(bench::time_loop(
        [&] {
          split_kv_forward(o.shape(), o.params(), num_splits, o.workers(), a.Q.data(), a.K.data(),
                           a.V.data(), r);
        },
        1, o.reps));
  };
  SplitKvResult<T> single;
  t.split = run(plan.splits, out);
  t.single = plan.splits == 1 ? t.split : run(1, single);
  t.read = bench::read_bandwidth(t.bytes, o.workers(), o.reps);
  return t;
}

std::string L_text(double v) {
  return ui::fixed(v, 4);
}

}  // namespace

void print_problem(const DecodeOptions& o, const char* dtype) {
  const Tiling t = o.tiling();
  ui::heading(ui::tr(Msg::decode_title), ui::tr(Msg::decode_source));
  ui::say(Msg::decode_problem, o.b, o.h, o.heads(), o.n, o.d, o.m, o.d, dtype,
          o.scale ? "" : fmt::format("1/sqrt({}) = ", o.d), o.params().scale_for(o.d));
  ui::say(Msg::decode_tiles, t.Tc(), t.Bc, t.Br);
  ui::say(!o.causal                          ? Msg::mask_none
          : o.align == CausalAlign::top_left ? Msg::mask_top_left
                                             : Msg::mask_bottom_right,
          o.causal_implied ? ui::tr(Msg::align_implies_causal) : "");
  index_t unseeing = 0;
  for (index_t q = 0; q < o.n; ++q) unseeing += o.mask().visible_keys(q) == 0;
  if (unseeing > 0) ui::say(Msg::rows_unseeing, unseeing, o.n);
  if (o.device == Device::cuda)
    ui::say(Msg::decode_inputs_gpu, o.seed);
  else
    ui::say(Msg::decode_inputs, o.seed);
}

void print_plan(const SplitPlan& plan, const std::string& units_line) {
  ui::result_section(ui::tr(Msg::decode_plan_title));
  ui::result_raw(units_line);
  std::string effs;
  const index_t shown = std::min(plan.max_splits, kShownEfficiencies);
  for (index_t num_splits = 1; num_splits <= shown; ++num_splits)
    effs += fmt::format("{}{:.0f}%", num_splits > 1 ? " " : "",
                        100 * plan.efficiency[std::size_t(num_splits - 1)]);
  ui::result(Msg::decode_plan_eff, effs,
             plan.max_splits > shown ? ui::tr(Msg::decode_plan_more) : "");
  // A forced S may lie beyond Smax, where the table stops.
  const double eff = 100 * split_efficiency(plan.units, plan.splits, plan.workers);
  if (plan.forced)
    ui::result(Msg::decode_plan_forced, plan.splits, eff,
               plan_splits(plan.units, plan.workers, plan.key_tiles, plan.min_tiles).splits);
  else
    ui::result(Msg::decode_plan_auto, plan.splits, 100 * kSplitEfficiency, 100 * plan.best);
}

template <class T>
void print_splits(const DecodeOptions& o, const SplitKvResult<T>& r) {
  const Tiling t = o.tiling();
  const index_t num_splits = r.splits, n = o.n, shown_s = std::min(num_splits, kShownSplits),
                shown_r = std::min(n, kShownRows);
  ui::result_section(ui::tr(Msg::decode_splits_title, o.heads()));
  std::string header = fmt::format("  {:<6} {:<16} {:<10}", ui::tr(Msg::decode_col_split),
                                   ui::tr(Msg::decode_col_keys), ui::tr(Msg::decode_col_tiles));
  for (index_t q = 0; q < shown_r; ++q)
    header += fmt::format(" {:>12}", ui::tr(Msg::decode_col_row, q));
  ui::result_raw(header + "\n");
  for (index_t s = 0; s < shown_s; ++s) {
    const Range keys = split_keys(t, num_splits, s);
    const Range tiles{s * t.Tc() / num_splits, (s + 1) * t.Tc() / num_splits};
    std::string line = fmt::format("  {:<6} {:<16} {:<10}", s, ui::range(keys), ui::range(tiles));
    for (index_t q = 0; q < shown_r; ++q)
      line += fmt::format(" {:>12}", L_text(double(r.L_part[std::size_t(s * n + q)])));
    ui::result_raw(line + "\n");
  }
  if (shown_s < num_splits || shown_r < n)
    ui::result(Msg::decode_shown, shown_s, num_splits, shown_r, n);
}

template <class T>
void print_merge(const DecodeOptions& o, const SplitKvResult<T>& r) {
  const index_t num_splits = r.splits, n = o.n, shown_s = std::min(num_splits, kShownSplits);
  ui::result_section(ui::tr(Msg::decode_merge_title));
  for (index_t q = 0; q < std::min(n, kShownRows); ++q) {
    const T* L_s = r.L_part.data() + q;  // head 0, row q: split s at L_s[s * n]
    const RowState<T> state = merge_lse(L_s, num_splits, n);
    const T L = r.L[std::size_t(q)];
    if (is_neg_inf(L)) {
      ui::result(Msg::decode_merge_empty, q);
      continue;
    }
    std::string ls, ws;
    double sum = 0;
    for (index_t s = 0; s < num_splits; ++s) {
      const T w = split_weight(L_s[s * n], L);
      sum += double(w);
      if (s >= shown_s) continue;
      ls += fmt::format("{:>9}", L_text(double(L_s[s * n])));
      ws += fmt::format("{:>9}", ui::fixed(double(w), 4));
    }
    if (shown_s < num_splits) ls += " …", ws += " …";
    ui::result(Msg::decode_merge_L_s, q, ls);
    ui::result(Msg::decode_merge_w, ws);
    ui::result(Msg::decode_merge_L, L_text(double(state.m)), ui::fixed(double(state.l), 4),
               L_text(double(L)), num_splits, ui::fixed(sum, 4));
  }
}

void print_verdicts(const DecodeOptions& o, const Checked& c, Precision p) {
  ui::result_section(
      ui::tr(Msg::against_reference, p == Precision::fp64 ? ui::tr(Msg::reference_wide) : "fp64"));
  std::string heads;
  for (index_t head : checked_heads(o)) heads += (heads.empty() ? "" : ", ") + std::to_string(head);
  ui::result(Msg::decode_checked, heads);
  ui::result(Msg::error_line, "|O - O_ref|", ui::sci(c["O"].err), ui::verdict_text(p, c["O"]));
  ui::result(Msg::error_line, "|L - L_ref|", ui::sci(c["L"].err), ui::verdict_text(p, c["L"]));
}

template <class T>
void emit_splits_json(const DecodeOptions& o, const SplitKvResult<T>& r) {
  const Tiling tiling = o.tiling();
  const index_t num_splits = r.splits, n = o.n, rows = std::min(n, kJsonRows);
  for (index_t s = 0; s < num_splits; ++s) {
    const Range keys = split_keys(tiling, num_splits, s);
    nlohmann::json L = nlohmann::json::array(), w = nlohmann::json::array();
    for (index_t q = 0; q < rows; ++q) {
      const T L_s = r.L_part[std::size_t(s * n + q)];
      L.push_back(ui::number(double(L_s)));
      w.push_back(double(split_weight(L_s, r.L[std::size_t(q)])));
    }
    nlohmann::json j = {{"event", "decode_split"},
                        {"split", s},
                        {"keys", ui::json_range(keys)},
                        {"tiles", ui::json_range(Range{s * tiling.Tc() / num_splits,
                                                       (s + 1) * tiling.Tc() / num_splits})},
                        {"L", L},
                        {"weight", w}};
    ui::out() << j.dump() << "\n";
  }
}

template <class T>
nlohmann::json result_json(const DecodeOptions& o, const SplitPlan& plan, const SplitKvResult<T>& r,
                           const Checked& c, Precision p) {
  const Tiling tiling = o.tiling();
  nlohmann::json L = nlohmann::json::array();
  for (index_t q = 0; q < std::min(o.n, kJsonRows); ++q)
    L.push_back(ui::number(double(r.L[std::size_t(q)])));
  nlohmann::json j = {{"event", "result"},
                      {"subcommand", "decode"},
                      {"device", o.device == Device::cuda ? "cuda" : "cpu"},
                      {"b", o.b},
                      {"h", o.h},
                      {"n", o.n},
                      {"m", o.m},
                      {"d", o.d},
                      {"dtype", precision_name(p)},
                      {"causal", o.causal},
                      {"align", o.align == CausalAlign::top_left ? "top-left" : "bottom-right"},
                      {"scale", o.params().scale_for(o.d)},
                      {"Br", tiling.Br},
                      {"Bc", tiling.Bc},
                      {"Tc", tiling.Tc()},
                      {"units", plan.units},
                      {"max_splits", plan.max_splits},
                      {"splits", plan.splits},
                      {"forced", plan.forced},
                      {"efficiency", split_efficiency(plan.units, plan.splits, plan.workers)},
                      {"best_efficiency", plan.best},
                      {"L", L},
                      {"reference", p == Precision::fp64 ? "long double" : "fp64"},
                      {"heads_checked", checked_heads(o)},
                      {"reps", o.reps}};
  for (const auto& [name, v] : {std::pair{"O", c["O"]}, std::pair{"L", c["L"]}}) {
    const std::string x(name);
    j["err_" + x] = ui::number(v.err);
    j["naive_" + x] = ui::number(v.naive);
    j["bound_" + x] = ui::number(v.bound);
    j["verdict_" + x] = ui::outcome_id(v.outcome);
  }
  j["pass"] = c["O"].pass() && c["L"].pass();
  return j;
}

#define FD_INSTANTIATE(T)                                                        \
  template void print_splits(const DecodeOptions&, const SplitKvResult<T>&);     \
  template void print_merge(const DecodeOptions&, const SplitKvResult<T>&);      \
  template void emit_splits_json(const DecodeOptions&, const SplitKvResult<T>&); \
  template nlohmann::json result_json(const DecodeOptions&, const SplitPlan&,    \
                                      const SplitKvResult<T>&, const Checked&, Precision);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

namespace {

std::string ms_text(double ms) {
  return fmt::format("{:.3f}", ms);
}
std::string gbps_text(double gbps) {
  return fmt::format("{:.1f}", gbps);
}

std::string cpu_units_line(const DecodeOptions& o, const SplitPlan& plan) {
  return ui::tr(Msg::decode_plan_units, o.heads(), o.tiling().Tr(), plan.units, plan.workers,
                kMaxSplits, plan.max_splits);
}

void print_timing(const DecodeOptions& o, const SplitPlan& plan, const Timing& t) {
  ui::result_section(ui::tr(Msg::decode_timing_title, o.reps, plan.workers, format_bytes(t.bytes)));
  ui::result(plan.forced ? Msg::decode_time_forced : Msg::decode_time_split, plan.splits,
             ms_text(t.split.median_ms), gbps_text(t.gbps(t.split)));
  if (plan.splits == 1)
    ui::result(Msg::decode_time_same, plan.workers, plan.units);
  else
    ui::result(Msg::decode_time_single, ms_text(t.single.median_ms), gbps_text(t.gbps(t.single)),
               t.single.median_ms / t.split.median_ms);
  ui::result(Msg::decode_read, format_bytes(t.read.bytes), plan.workers, ms_text(t.read.median_ms),
             gbps_text(t.read.gbps));
  ui::result(Msg::decode_read_ratio, 100 * t.gbps(t.split) / t.read.gbps,
             100 * t.gbps(t.single) / t.read.gbps);
}

template <class T>
void emit_json(const DecodeOptions& o, const SplitPlan& plan, const SplitKvResult<T>& r,
               const Checked& c, const Timing& t) {
  emit_splits_json(o, r);
  nlohmann::json j = result_json(o, plan, r, c, precision_of<T>());
  j["threads"] = plan.workers;
  j["kv_bytes"] = t.bytes;
  j["median_ms"] = t.split.median_ms;
  j["gbps"] = t.gbps(t.split);
  j["median_ms_unsplit"] = t.single.median_ms;
  j["gbps_unsplit"] = t.gbps(t.single);
  j["speedup"] = t.single.median_ms / t.split.median_ms;
  j["read_ms"] = t.read.median_ms;
  j["read_gbps"] = t.read.gbps;
  j["of_read"] = t.gbps(t.split) / t.read.gbps;
  ui::out() << j.dump() << "\n";
}

template <class T>
void run_decode_as(const DecodeOptions& o, const SplitPlan& plan) {
  bench::Case c;
  c.b = o.b, c.h = o.h, c.n = o.n, c.m = o.m, c.d = o.d, c.seed = o.seed;
  c.precision = precision_of<T>();
  ui::Progress progress("flashdemo decode");  // stderr, on a terminal, past a second
  progress.phase(ui::tr(Msg::progress_splits));
  const bench::Arrays<T> a = bench::random_arrays<T>(c);
  SplitKvResult<T> r;
  split_kv_forward(o.shape(), o.params(), plan.splits, o.workers(), a.Q.data(), a.K.data(),
                   a.V.data(), r);
  progress.phase(ui::tr(Msg::progress_reference));
  const Checked checked = check(o, a, r);
  progress.phase(ui::tr(Msg::progress_timing));
  const Timing timing = time_runs(o, plan, a, r);
  progress.stop();
  if (ui::settings().json) {
    emit_json(o, plan, r, checked, timing);
  } else {
    print_problem(o, precision_name(c.precision));
    print_plan(plan, cpu_units_line(o, plan));
    print_splits(o, r);
    print_merge(o, r);
    print_verdicts(o, checked, c.precision);
    print_timing(o, plan, timing);
  }
  conclude_run(checked, c.precision);
}

// What only one device takes: refused in one line (exit 2) before anything runs.
void check_device_options(const DecodeOptions& o) {
  if (o.device == Device::cpu) {
    if (low_precision(o.dtype))
      throw Error(kUsage, ui::tr(Msg::decode_err_dtype_cpu, dtype_name(o.dtype)));
    return;
  }
  if (o.threads) throw Error(kUsage, ui::tr(Msg::decode_err_threads_gpu));
  const cuda::Refusal r = cuda::decode_refuses(o.d, dtype_precision(o.dtype));
  switch (r.why) {
    case cuda::Refusal::Why::none:
      return;
    case cuda::Refusal::Why::d_unsupported:
      throw Error(kUsage, ui::tr(Msg::decode_err_d_gpu, ui::spoken_list(r.head_dims), o.d));
    default:
      throw Error(kUsage, ui::tr(Msg::decode_err_dtype_gpu, dtype_name(o.dtype)));
  }
}

void run_decode(DecodeOptions o) {
  if (o.reps == 0) o.reps = o.device == Device::cuda ? 20 : 5;
  check_device_options(o);
  if (o.device == Device::cuda) {
    plan_for(o, 1);  // a --splits beyond the key tiles: refused (exit 2) before the GPU is sought
    if (o.splits > kMaxSplits) throw Error(kUsage, ui::tr(Msg::decode_err_splits_gpu, o.splits));
    return run_decode_gpu(o);
  }
  const SplitPlan plan = plan_for(o, o.workers());  // a --splits too large: refused before any work
  const bool wide = o.dtype == DType::fp64;
  ensure_fits(bytes_needed(o, plan.splits, wide ? 8 : 4, wide ? sizeof(long double) : 8),
              ui::tr(Msg::decode_memory_what));
  ensure_threads(o.workers());
  wide ? run_decode_as<double>(o, plan) : run_decode_as<float>(o, plan);
}

}  // namespace
}  // namespace fd::demos::decoding

namespace fd::demos {

void setup_decode(CLI::App& app) {
  using decoding::DecodeOptions;
  using ui::Msg;
  auto o = std::make_shared<DecodeOptions>();
  CLI::App* sub = app.add_subcommand("decode", ui::tr(Msg::decode_help));
  const index_t big = index_t(1) << 24;
  add_choice<Device>(sub, "--device", o->device, {{"cpu", Device::cpu}, {"cuda", Device::cuda}},
                     ui::tr(Msg::decode_opt_device))
      ->default_str("cpu");
  add_shape(sub, *o, decoding::kDecodeShape);
  add_count(sub, "--splits", o->splits, ui::tr(Msg::decode_opt_splits), big)->default_str("auto");
  add_count(sub, "--threads", o->threads, ui::tr(Msg::decode_opt_threads), 1024)
      ->default_str("all");
  add_dtype(sub, o->dtype, true, ui::tr(Msg::decode_opt_dtype))->default_str("fp32");
  add_causal(sub, *o);
  add_choice<CausalAlign>(
      sub, "--causal-align", o->align,
      {{"bottom-right", CausalAlign::bottom_right}, {"top-left", CausalAlign::top_left}},
      ui::tr(Msg::decode_opt_align))
      ->default_str("bottom-right")
      ->each([o](const std::string&) {
        o->causal_implied = o->causal_implied || !o->causal;
        o->causal = true;
      });
  add_seed(sub, o->seed);
  add_finite(sub, "--scale", o->scale, ui::tr(Msg::opt_scale));
  add_count(sub, "--reps", o->reps, ui::tr(Msg::decode_opt_reps), 100000)
      ->default_str("5 cpu, 20 cuda");
  sub->footer(ui::tr(Msg::decode_examples));
  sub->callback([o] { decoding::run_decode(*o); });
}

}  // namespace fd::demos
