// ladder.cpp — `flashdemo ladder`: every GPU rung of flashdemo/impl.hpp (kGpuRungs: teaching, simt,
// tc, mma, hopper), bottom to top, on one case, in one table. Each rung is run, verified and timed
// exactly as `bench` does it (flashdemo/tools/benchmark.hpp: the same inputs, FLOPs, sampled
// verification before timing, device-timed runs); teaching and simt in fp32, tc, mma and hopper
// in --dtype (bf16 or fp16); --pass fwd or bwd (the backward: teaching, mma and hopper; simt and
// tc refuse it; hopper fails with its reason on a GPU other than sm_90). Above the
// table, cuBLAS's bf16 GEMM in the same run, the ceiling each rung is a share of. A rung that
// refuses the case or the pass (cuda::refuses) or fails gets a row saying why; the exit code
// is 1 only when a rung that ran failed its verification.
// --steps: then hopper's ideas each on and off (cuda::hopper_steps), timed alone on the same case
// and read against the rung's own choice: what each idea costs or buys here.
// --json: one `gemm_ceiling` object, then per rung a `bench` object (with `rung`, `idea`, and
// `of_ceiling`, `speedup` when known) or a `rung_skipped` object, and with --steps one
// `hopper_step` object per setting (docs/trace-format.md, section 9).
#include "ladder.hpp"

#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "cuda/host/cuda_api.hpp"
#include "cuda/host/rungs_api.hpp"
#include "device.hpp"
#include "flashdemo/impl.hpp"
#include "flashdemo/tools/benchmark.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

constexpr index_t kCeilingSide = 8192;  // the square bf16 GEMM of the ceiling
// The teaching rung's timed runs: about this many seconds (3 runs at least), not --reps runs of
// a kernel that takes seconds each at n = 16384 (bench::fit_to_budget).
constexpr double kTeachingBudgetS = 3.0;

struct LadderOptions : ProblemShape {                    // b, h, n, m (0: n), d, causal
  LadderOptions() { b = 4, h = 16, n = 4096, d = 128; }  // 16k tokens, h d = 2048
  Device device = Device::cuda;
  DType dtype = DType::bf16;  // of the tensor-core rungs
  bench::Pass pass = bench::Pass::fwd;
  index_t reps = 20, warmup = 3;
  std::uint32_t seed = 0;
  bool steps = false;  // --steps: hopper's ideas each on and off, after the table
};

Msg idea(Impl rung, bench::Pass pass) {
  switch (rung) {
    case Impl::simt:
      return Msg::idea_simt;
    case Impl::tc:
      return Msg::idea_tc;
    case Impl::mma:
      return Msg::idea_mma;
    case Impl::hopper:
      return pass == bench::Pass::bwd ? Msg::idea_hopper_bwd : Msg::idea_hopper;
    default:
      return Msg::idea_teaching;
  }
}

// One rung's outcome: measured (verified or not), or not run and why.
struct Row {
  Impl rung = Impl::teaching;
  int step = 0;  // 0 at the bottom of the ladder
  Precision precision = Precision::fp32;
  std::optional<bench::Measurement> m;
  std::string why, why_en;  // not run: in the current language, and in English for JSON
  std::string kind;         // not run: "refused" or "failed"
};

bench::Case case_for(const LadderOptions& o, Precision p) {
  bench::Case c;
  c.b = o.b, c.h = o.h, c.n = o.n, c.m = o.keys(), c.d = o.d, c.causal = o.causal;
  c.pass = o.pass, c.precision = p, c.seed = o.seed;
  return c;
}

// Runs every rung; arrays are drawn once per precision (the same draws, rounded for bf16/fp16).
std::vector<Row> climb(const LadderOptions& o) {
  std::vector<Row> rows;
  std::optional<bench::Arrays<float>> arrays;
  Precision drawn = Precision::fp64;
  int step = 0;
  for (Impl rung : kGpuRungs) {
    Row row;
    row.rung = rung, row.step = step++;
    row.precision = tensor_cores(rung) ? dtype_precision(o.dtype) : Precision::fp32;
    row.why = refusal(rung, o.d, row.precision, cuda_pass(o.pass));
    if (!row.why.empty()) {
      row.why_en = cuda::refuses(rung, o.d, row.precision, cuda_pass(o.pass)).english;
      row.kind = "refused";
      rows.push_back(row);
      continue;
    }
    const bench::Case c = case_for(o, row.precision);
    if (!arrays || drawn != row.precision) {
      arrays.reset();  // one set of inputs at a time
      arrays = bench::random_arrays<float>(c), drawn = row.precision;
    }
    try {
      const double budget_s = rung == Impl::teaching ? kTeachingBudgetS : 0;
      row.m = bench::measure(c, *arrays, gpu_runner<float>(c, rung, false, *arrays), o.warmup,
                             o.reps, {}, budget_s);
    } catch (const cuda::CudaError& e) {
      row.why = ui::tr(Msg::ladder_kernel_failed, e.what());
      row.why_en =
          fmt::format(fmt::runtime(ui::text(Msg::ladder_kernel_failed, ui::Lang::en)), e.what());
      row.kind = "failed";
    }
    rows.push_back(row);
  }
  return rows;
}

// The nearest rung below that ran and was verified: the speed-up's base.
const Row* below(const std::vector<Row>& rows, std::size_t k) {
  for (std::size_t j = k; j-- > 0;)
    if (rows[j].m && rows[j].m->timed) return &rows[j];
  return nullptr;
}

// The case's fields of every object ladder prints for a kernel run.
nlohmann::json case_json(const LadderOptions& o, Precision p) {
  return {{"device", "cuda"},
          {"dtype", precision_name(p)},
          {"pass", bench::pass_name(o.pass)},
          {"b", o.b},
          {"h", o.h},
          {"n", o.n},
          {"m", o.keys()},
          {"d", o.d},
          {"causal", o.causal}};
}

void emit_json(const LadderOptions& o, const std::vector<Row>& rows, double ceiling,
               const std::string& ceiling_why) {
  nlohmann::json g = {{"event", "gemm_ceiling"}, {"dtype", "bf16"},
                      {"n", kCeilingSide},       {"reps", o.reps},
                      {"measured", ceiling > 0}, {"why", ceiling > 0 ? "" : ceiling_why}};
  g["tflops"] = ceiling > 0 ? nlohmann::json(ceiling) : nlohmann::json(nullptr);
  ui::out() << g.dump() << "\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    nlohmann::json j = case_json(o, r.precision);
    j.update({{"impl", impl_name(r.rung)},
              {"rung", r.step},
              {"idea", ui::text(idea(r.rung, o.pass), ui::Lang::en)}});
    if (!r.m || !r.m->timed) {
      j["event"] = "rung_skipped";
      j["reason"] = r.m ? "unverified" : r.kind;
      if (r.m)
        j.update({{"why", "failed verification"},
                  {"verified_rows", r.m->verdict.rows},
                  {"max_error", ui::number(r.m->verdict.err)},
                  {"error_bound", ui::number(r.m->verdict.bound)}});
      else
        j["why"] = r.why_en;
      ui::out() << j.dump() << "\n";
      continue;
    }
    const bench::Measurement& m = *r.m;
    j.update({{"event", "bench"},
              {"median_ms", m.times.median_ms},
              {"min_ms", m.times.min_ms},
              {"max_ms", m.times.max_ms},
              {"reps", m.times.reps},
              {"tflops", m.tflops},
              {"verified", true},
              {"verified_rows", m.verdict.rows},
              {"max_error", m.verdict.err},
              {"error_bound", m.verdict.bound}});
    if (ceiling > 0) j["of_ceiling"] = m.tflops / ceiling;
    if (const Row* base = below(rows, k))
      j["speedup"] = base->m->times.median_ms / m.times.median_ms;
    ui::out() << j.dump() << "\n";
  }
}

void print_table(const LadderOptions& o, const std::vector<Row>& rows, double ceiling,
                 const std::string& ceiling_why) {
  const bench::Case c = case_for(o, Precision::fp32);
  const bool halved = o.causal && o.n == o.keys();
  const bool bwd = o.pass == bench::Pass::bwd;
  ui::say(Msg::ladder_case, o.b, o.h, o.n, o.keys(), o.d,
          ui::tr(o.causal ? Msg::ladder_causal : Msg::ladder_not_causal), bwd ? "2.5 x " : "",
          halved ? " / 2" : "", bench::flops(c), ui::tr(bwd ? Msg::ladder_bwd : Msg::ladder_fwd),
          o.warmup, o.reps);
  if (ceiling > 0)
    ui::result(Msg::ladder_ceiling, kCeilingSide, kCeilingSide, kCeilingSide, ceiling, o.reps);
  else
    ui::result(Msg::ladder_no_ceiling, ceiling_why);
  ui::result_raw("\n");
  ui::result(Msg::ladder_columns, ui::tr(Msg::ladder_col_rung), "dtype", "ms", "TFLOP/s",
             ui::tr(Msg::ladder_col_ceiling), ui::tr(Msg::ladder_col_speedup),
             ui::tr(Msg::ladder_col_verified), ui::tr(Msg::ladder_col_idea));
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    const char* dtype = precision_name(r.precision);
    if (!r.m) {
      ui::result(Msg::ladder_not_run, impl_name(r.rung), dtype, r.why);
      continue;
    }
    const bench::Measurement& m = *r.m;
    if (!m.timed) {
      const Verdict& v = m.verdict;
      ui::result(Msg::ladder_unverified_row, impl_name(r.rung), dtype, "", "", "", "",
                 ui::tr(Msg::ladder_no), ui::tr(idea(r.rung, o.pass)),
                 ui::tr(Msg::bench_unverified, ui::sci(v.err), v.worst, ui::sci(v.bound)));
      continue;
    }
    const Row* base = below(rows, k);
    ui::result(Msg::ladder_columns, impl_name(r.rung), dtype,
               fmt::format("{:.3f}", m.times.median_ms), fmt::format("{:.1f}", m.tflops),
               ceiling > 0 ? fmt::format("{:.1f}%", 100.0 * m.tflops / ceiling) : "",
               base ? fmt::format("{:.2f}x", base->m->times.median_ms / m.times.median_ms) : "-",
               ui::tr(Msg::ladder_yes), ui::tr(idea(r.rung, o.pass)));
  }
  for (const Row& r : rows)  // a rung timed fewer times than --reps (kTeachingBudgetS)
    if (r.m && r.m->timed && index_t(r.m->times.reps) < o.reps)
      ui::result(Msg::ladder_fewer_reps, impl_name(r.rung), r.m->times.reps,
                 r.m->times.median_ms / 1000);
}

// --steps: one setting of hopper's, timed (median ms, the case's TFLOP/s at it) or not run and why.
struct StepRow {
  cuda::HopperStep step;
  std::optional<double> ms, tflops;
  std::string why;  // in English (CUDA's words)
};

// hopper's settings (cuda::HopperStep): the key of its `hopper_step` object, and its words.
struct StepName {
  cuda::HopperStep step;
  const char* key;
  Msg words;
};
constexpr StepName kStepNames[] = {
    {cuda::HopperStep::rung_choice, "rung_choice", Msg::step_rung_choice},
    {cuda::HopperStep::fwd_none, "fwd_none", Msg::step_fwd_none},
    {cuda::HopperStep::fwd_overlap, "fwd_overlap", Msg::step_fwd_overlap},
    {cuda::HopperStep::fwd_ping_pong, "fwd_ping_pong", Msg::step_fwd_ping_pong},
    {cuda::HopperStep::fwd_both, "fwd_both", Msg::step_fwd_both},
    {cuda::HopperStep::fwd_three_consumers, "fwd_three_consumers", Msg::step_fwd_three_consumers},
    {cuda::HopperStep::fwd_three_overlap, "fwd_three_overlap", Msg::step_fwd_three_overlap},
    {cuda::HopperStep::fwd_persistent, "fwd_persistent", Msg::step_fwd_persistent},
    {cuda::HopperStep::fwd_o_staged, "fwd_o_staged", Msg::step_fwd_o_staged},
    {cuda::HopperStep::fwd_o_registers, "fwd_o_registers", Msg::step_fwd_o_registers},
    {cuda::HopperStep::fwd_bc176, "fwd_bc176", Msg::step_fwd_bc176},
    {cuda::HopperStep::fwd_persistent_overlap, "fwd_persistent_overlap",
     Msg::step_fwd_persistent_overlap},
    {cuda::HopperStep::fwd_prefetch, "fwd_prefetch", Msg::step_fwd_prefetch},
    {cuda::HopperStep::fwd_stages4, "fwd_stages4", Msg::step_fwd_stages4},
    {cuda::HopperStep::fwd_padding_computed, "fwd_padding_computed",
     Msg::step_fwd_padding_computed},
    {cuda::HopperStep::fwd_exp_fma8, "fwd_exp_fma8", Msg::step_fwd_exp_fma8},
    {cuda::HopperStep::fwd_exp_fma4, "fwd_exp_fma4", Msg::step_fwd_exp_fma4},
    {cuda::HopperStep::bwd_atomics, "bwd_atomics", Msg::step_bwd_atomics},
    {cuda::HopperStep::bwd_none, "bwd_none", Msg::step_bwd_none},
    {cuda::HopperStep::bwd_p, "bwd_p", Msg::step_bwd_p},
    {cuda::HopperStep::bwd_dq, "bwd_dq", Msg::step_bwd_dq},
    {cuda::HopperStep::bwd_p_dq, "bwd_p_dq", Msg::step_bwd_p_dq},
    {cuda::HopperStep::bwd_next, "bwd_next", Msg::step_bwd_next},
    {cuda::HopperStep::bwd_k_registers, "bwd_k_registers", Msg::step_bwd_k_registers},
    {cuda::HopperStep::bwd_kv_registers, "bwd_kv_registers", Msg::step_bwd_kv_registers},
    {cuda::HopperStep::bwd_dq_spread, "bwd_dq_spread", Msg::step_bwd_dq_spread},
    {cuda::HopperStep::bwd_dq_halves, "bwd_dq_halves", Msg::step_bwd_dq_halves},
    {cuda::HopperStep::bwd_br64, "bwd_br64", Msg::step_bwd_br64},
    {cuda::HopperStep::bwd_dq_by_keys, "bwd_dq_by_keys", Msg::step_bwd_dq_by_keys},
    {cuda::HopperStep::bwd_stages3, "bwd_stages3", Msg::step_bwd_stages3},
    {cuda::HopperStep::bwd_dq_sets2, "bwd_dq_sets2", Msg::step_bwd_dq_sets2},
    {cuda::HopperStep::bwd_rotate, "bwd_rotate", Msg::step_bwd_rotate},
    {cuda::HopperStep::bwd_persistent, "bwd_persistent", Msg::step_bwd_persistent},
};
const StepName& name_of(cuda::HopperStep step) {
  for (const StepName& n : kStepNames)
    if (n.step == step) return n;
  return kStepNames[0];
}
// The setting in words (in `lang`): the rung's choice names its d.
std::string step_words(cuda::HopperStep step, index_t d, ui::Lang lang) {
  return fmt::format(fmt::runtime(ui::text(name_of(step).words, lang)), d);
}

// Every setting of cuda::hopper_steps on the case, the rung's own choice first; inputs drawn as
// the rungs' are (the same seed and precision).
std::vector<StepRow> time_steps(const LadderOptions& o) {
  const Precision p = dtype_precision(o.dtype);
  const bench::Case c = case_for(o, p);
  const bench::Arrays<float> a = bench::random_arrays<float>(c);
  const cuda::Shape s{o.b, o.h, o.n, o.keys(), o.d};
  const AttnParams params{o.causal, {}, {}};
  const Variant v{p, Mistake::none};
  const double flops = bench::flops(c);
  std::vector<StepRow> rows;
  for (cuda::HopperStep step : cuda::hopper_steps(cuda_pass(o.pass), o.d, p)) {
    StepRow r{step, {}, {}, {}};
    try {
      const cuda::Timing t = cuda::hopper_time_step<float>(
          step, cuda_pass(o.pass), s, params, v, a.Q.data(), a.K.data(), a.V.data(),
          a.dO.empty() ? nullptr : a.dO.data(), int(o.warmup), int(o.reps));
      if (!t.ms.empty()) {
        r.ms = bench::summarize(t.ms).median_ms;
        r.tflops = flops / (*r.ms * 1e9);
      }
    } catch (const cuda::CudaError& e) {
      r.why = e.what();
    }
    rows.push_back(r);
  }
  return rows;
}

// rung_choice's time over the step's: above 1, the step is faster than the rung's choice.
std::optional<double> against_choice(const std::vector<StepRow>& rows, const StepRow& r) {
  if (rows.empty() || !rows.front().ms || !r.ms) return std::nullopt;
  return *rows.front().ms / *r.ms;
}

void print_steps(const LadderOptions& o, const std::vector<StepRow>& rows) {
  ui::result(Msg::ladder_steps_head, precision_name(dtype_precision(o.dtype)),
             ui::tr(o.pass == bench::Pass::bwd ? Msg::ladder_bwd : Msg::ladder_fwd), o.warmup,
             o.reps);
  ui::result(Msg::ladder_steps_columns, ui::tr(Msg::ladder_col_setting), "ms", "TFLOP/s",
             ui::tr(Msg::ladder_col_vs_choice));
  for (const StepRow& r : rows) {
    const std::string words = step_words(r.step, o.d, ui::lang());
    if (!r.ms) {
      ui::result(Msg::ladder_steps_not_run, words, r.why);
      continue;
    }
    const std::optional<double> ratio = against_choice(rows, r);
    ui::result(Msg::ladder_steps_columns, words, fmt::format("{:.3f}", *r.ms),
               fmt::format("{:.1f}", *r.tflops), ratio ? fmt::format("{:.2f}x", *ratio) : "");
  }
}

void emit_steps_json(const LadderOptions& o, const std::vector<StepRow>& rows) {
  for (const StepRow& r : rows) {
    nlohmann::json j = case_json(o, dtype_precision(o.dtype));
    j.update({{"event", "hopper_step"},
              {"impl", "hopper"},
              {"step", name_of(r.step).key},
              {"setting", step_words(r.step, o.d, ui::Lang::en)},
              {"measured", r.ms.has_value()},
              {"why", r.why}});
    j["median_ms"] = r.ms ? nlohmann::json(*r.ms) : nlohmann::json(nullptr);
    j["tflops"] = r.tflops ? nlohmann::json(*r.tflops) : nlohmann::json(nullptr);
    const std::optional<double> ratio = against_choice(rows, r);
    j["vs_rung_choice"] = ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr);
    ui::out() << j.dump() << "\n";
  }
}

// --steps after the table: only where hopper itself ran and passed on this case.
void run_steps(const LadderOptions& o, const std::vector<Row>& rows) {
  const Row& hopper = rows.back();  // the top rung
  if (hopper.rung != Impl::hopper || !hopper.m || !hopper.m->timed) {
    if (!ui::settings().json)
      ui::result(Msg::ladder_steps_skipped,
                 hopper.why.empty() ? ui::tr(Msg::ladder_steps_no_hopper) : hopper.why);
    return;
  }
  const std::vector<StepRow> steps = time_steps(o);
  if (ui::settings().json)
    emit_steps_json(o, steps);
  else
    print_steps(o, steps);
}

void run_ladder(const LadderOptions& o) {
  if (o.device != Device::cuda) throw Error(kUsage, ui::tr(Msg::ladder_err_cpu));
  // The inputs (Q, K, V, dO, 4 bytes each) and the outputs (O; the backward's dQ, dK, dV too).
  const index_t host_rows =
      o.pass == bench::Pass::bwd ? 4 * (o.n + o.keys()) : 3 * o.n + 2 * o.keys();
  ensure_fits(double(o.b * o.h) * double(host_rows) * double(o.d) * 4.0,
              ui::tr(Msg::bench_arrays_what));
  require_gpu();
  double ceiling = 0;
  std::string ceiling_why;
  try {
    ceiling = cuda::gemm_tflops_bf16(kCeilingSide, int(o.reps));
  } catch (const cuda::CudaError& e) {
    ceiling_why = e.what();
  }
  const std::vector<Row> rows = climb(o);
  if (ui::settings().json)
    emit_json(o, rows, ceiling, ceiling_why);
  else
    print_table(o, rows, ceiling, ceiling_why);
  if (o.steps) run_steps(o, rows);
  std::string unverified;
  for (const Row& r : rows)
    if (r.m && !r.m->timed)
      unverified += (unverified.empty() ? "" : ", ") + std::string(impl_name(r.rung));
  if (!unverified.empty()) throw Error(kCheckFailed, ui::tr(Msg::ladder_failed, unverified));
}

}  // namespace

void setup_ladder(CLI::App& app) {
  auto o = std::make_shared<LadderOptions>();
  CLI::App* sub = app.add_subcommand("ladder", ui::tr(Msg::ladder_help));
  add_choice<Device>(sub, "--device", o->device, {{"cpu", Device::cpu}, {"cuda", Device::cuda}},
                     ui::tr(Msg::ladder_opt_device))
      ->default_str("cuda");
  add_shape(sub, *o, kBatched);
  add_causal(sub, *o);
  add_choice<DType>(sub, "--dtype", o->dtype, {{"bf16", DType::bf16}, {"fp16", DType::fp16}},
                    ui::tr(Msg::ladder_opt_dtype))
      ->default_str("bf16");
  add_pass(sub, o->pass, ui::tr(Msg::ladder_opt_pass));
  add_count(sub, "--reps", o->reps, ui::tr(Msg::ladder_opt_reps), 100000);
  add_count(sub, "--warmup", o->warmup, ui::tr(Msg::ladder_opt_warmup), 1000);
  add_seed(sub, o->seed);
  sub->add_flag("--steps", o->steps, ui::tr(Msg::ladder_opt_steps));
  sub->footer(ui::tr(Msg::ladder_examples));
  sub->callback([o] { run_ladder(*o); });
}

}  // namespace fd::demos
