// bench.cpp — `flashdemo bench`: times one case and prints one object (the `bench` event of
// docs/trace-format.md, which lists every field; tests/json_schema_test.py holds it to that):
//   event, impl, device, dtype, pass, b, h, n, m, d, causal, median_ms, min_ms, max_ms, reps,
//   tflops, verified, verified_rows, max_error, error_bound; on the CPU also threads, peak_bytes
// The mechanics (FLOPs, inputs, verification before timing, the timing loop, peak memory, the CPU
// GEMM ceiling) are the library's (flashdemo/tools/benchmark.hpp, shared with `flashdemo ladder`);
// this file chooses what runs (the CPU paths, or a GPU rung through device.hpp) and prints.
#include "bench.hpp"

#include <fmt/core.h>

#include <unistd.h>
#include <algorithm>
#include <memory>

#include "attention_cli.hpp"
#include "cuda/host/cuda_api.hpp"
#include "device.hpp"
#include "flashdemo/tools/benchmark.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"
#include "ui/progress.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

// What bench times: an implementation of attention (fd::Impl) on the device it runs on, or on the
// CPU one of two yardsticks, standard attention (reference) and a square GEMM (gemm: the
// ceiling). --impl names a row of kTimed; `tiled` is bench's name for fd::Impl::teaching on the
// CPU (the JSON's "impl" field keeps it: docs/trace-format.md), `teaching` the same on CUDA.
enum class Yardstick { none, reference, gemm };

struct Timed {
  const char* name;  // the --impl value, and the JSON's "impl"
  Device device;
  Impl impl;
  Yardstick yardstick = Yardstick::none;
};

constexpr Timed kTimed[] = {
    {"reference", Device::cpu, Impl::teaching, Yardstick::reference},
    {"tiled", Device::cpu, Impl::teaching},
    {"fast", Device::cpu, Impl::fast},
    {"gemm", Device::cpu, Impl::teaching, Yardstick::gemm},
    {"teaching", Device::cuda, Impl::teaching},
    {"simt", Device::cuda, Impl::simt},
    {"tc", Device::cuda, Impl::tc},
    {"mma", Device::cuda, Impl::mma},
    {"hopper", Device::cuda, Impl::hopper},
};

// Without --impl: the teaching path of the device (tiled on the CPU, teaching on CUDA).
const Timed* default_timed(Device device) {
  for (const Timed& t : kTimed)
    if (t.device == device && t.impl == Impl::teaching && t.yardstick == Yardstick::none) return &t;
  return &kTimed[0];
}

// The --impl names of a device, as the error lists them: "teaching, simt, tc, mma, hopper".
std::string names_on(Device device) {
  std::string names;
  for (const Timed& t : kTimed)
    if (t.device == device) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

struct BenchOptions : ProblemShape {  // b, h, n, m (0: n), d, causal
  Device device = Device::cpu;
  const Timed* timed = nullptr;  // --impl; nullptr: default_timed(device)
  DType dtype = DType::fp32;
  bool deterministic = false;
  bench::Pass pass = bench::Pass::fwd;
  index_t threads = 1, reps = 0, warmup = 3;  // reps 0: 20 on the GPU, 5 on the CPU
  const Timed& what() const { return timed ? *timed : *default_timed(device); }
  Impl impl() const { return what().impl; }
  Yardstick yardstick() const { return what().yardstick; }
  const char* impl_name() const { return what().name; }
  bench::Case bench_case() const {
    bench::Case c;
    c.b = b, c.h = h, c.n = n, c.m = keys(), c.d = d, c.causal = causal, c.pass = pass;
    c.precision = dtype_precision(dtype);
    return c;
  }
};

// On a terminal, a progress bar on stderr once the runs have taken more than a second; the line
// is cleared after the last run.
bench::Progress progress_bar() {
  if (isatty(STDERR_FILENO) != 1) return {};
  auto shown = std::make_shared<bool>(false);
  return [shown](index_t done, index_t total, double seconds) {
    if (seconds > 1.0) {
      const std::size_t width = 30, filled = width * std::size_t(done) / std::size_t(total);
      ui::progress_line(fmt::format("\r  [{:<30}] {}/{}", std::string(filled, '#'), done, total));
      *shown = true;
    }
    if (done == total && *shown) ui::progress_line(fmt::format("\r{:<50}\r", "")), *shown = false;
  };
}

template <class T>
bench::Ceiling gemm_ceiling(const BenchOptions& o, const bench::Arrays<T>& a,
                            index_t runs = bench::kCeilingRuns) {
  try {
    return bench::gemm_ceiling(o.bench_case(), a, o.threads, runs, progress_bar());
  } catch (const bench::GemmUnverified& e) {
    throw Error(kCheckFailed, ui::tr(Msg::bench_unverified, ui::sci(e.err), "C", ui::sci(e.bound)));
  }
}

template <class T>
void print_table(const BenchOptions& o, const nlohmann::json& j) {
  // The case, then its times: two short tables that fit a projected terminal.
  ui::result_raw(fmt::format(fmt::runtime(ui::text(Msg::bench_header)), "impl", "device", "dtype",
                             "pass", "b", "h", "n", "m", "d", "causal"));
  ui::result_raw(fmt::format(fmt::runtime(ui::text(Msg::bench_header)), o.impl_name(),
                             j["device"].get<std::string>(), dtype_name(o.dtype),
                             j["pass"].get<std::string>(), o.b, o.h, o.n, o.keys(), o.d,
                             o.causal ? "yes" : "no"));
  ui::result_raw(fmt::format(fmt::runtime(ui::text(Msg::bench_times)), "median ms", "min ms",
                             "max ms", "GFLOP/s", "max error"));
  ui::result_raw(fmt::format(fmt::runtime(ui::text(Msg::bench_times)),
                             fmt::format("{:.3f}", j["median_ms"].get<double>()),
                             fmt::format("{:.3f}", j["min_ms"].get<double>()),
                             fmt::format("{:.3f}", j["max_ms"].get<double>()),
                             fmt::format("{:.1f}", j["tflops"].get<double>() * 1e3),
                             ui::sci(j["max_error"].get<double>())));
  if (!j.contains("gemm_gflops")) return;
  const double of_gemm = j["of_gemm"].get<double>();  // above 1: the GEMM was no ceiling
  ui::result(of_gemm <= 1 ? Msg::bench_cpu_summary : Msg::bench_cpu_above_gemm,
             format_bytes(j["peak_bytes"].get<double>()), j["gemm_gflops"].get<double>(),
             100.0 * of_gemm, o.threads);
}

template <class T>
void run_bench_as(const BenchOptions& o) {
  const bench::Case c = o.bench_case();
  const bench::Arrays<T> a = bench::random_arrays<T>(c);
  nlohmann::json j = {{"event", "bench"},
                      {"impl", o.impl_name()},
                      {"device", device_name(o.device)},
                      {"dtype", dtype_name(o.dtype)},
                      {"pass", bench::pass_name(o.pass)},
                      {"b", o.b},
                      {"h", o.h},
                      {"n", o.n},
                      {"m", o.keys()},
                      {"d", o.d},
                      {"causal", o.causal}};
  if (o.yardstick() == Yardstick::gemm) {
    const index_t runs = std::max(o.reps, bench::kCeilingRuns);
    const bench::Ceiling ceiling = gemm_ceiling(o, a, runs);
    const double ms = 2.0 * double(o.b * o.h * o.n * o.keys() * o.d) / (ceiling.gflops * 1e6);
    j.update({{"median_ms", ms},
              {"min_ms", ms},
              {"max_ms", ms},
              {"reps", runs},
              {"tflops", ceiling.gflops / 1e3},
              {"verified", true},  // two rows of C, against a double product
              {"verified_rows", 2},
              {"max_error", ceiling.max_error},
              {"error_bound", ceiling.bound},
              {"threads", o.threads},
              {"peak_bytes", 0.0},
              {"gemm_side", ceiling.side}});
    if (ui::settings().json) return void(ui::out() << j.dump() << "\n");
    print_table<T>(o, j);
    return ui::result(Msg::bench_gemm_side, bench::gemm_side(c), bench::kBigSide, runs,
                      ceiling.side);
  }
  const bench::CpuImpl cpu = o.yardstick() == Yardstick::reference ? bench::CpuImpl::reference
                             : o.impl() == Impl::fast              ? bench::CpuImpl::fast
                                                                   : bench::CpuImpl::tiled;
  const bench::Runner<T> runner = o.device == Device::cuda
                                      ? gpu_runner<T>(c, o.impl(), o.deterministic, a)
                                      : bench::cpu_runner<T>(c, cpu, o.threads, a);
  const bench::Measurement m = bench::measure(c, a, runner, o.warmup, o.reps, progress_bar());
  const Verdict& v = m.verdict;
  if (!m.timed)
    throw Error(kCheckFailed,
                ui::tr(Msg::bench_unverified, ui::sci(v.err), v.worst, ui::sci(v.bound)));
  j.update({{"median_ms", m.times.median_ms},
            {"min_ms", m.times.min_ms},
            {"max_ms", m.times.max_ms},
            {"reps", m.times.reps},
            {"times_ms", m.times.ms},
            {"tflops", m.tflops},
            {"verified", true},
            {"verified_rows", v.rows},
            {"max_error", v.err},
            {"error_bound", v.bound}});
  if (o.device == Device::cpu) {
    j["peak_bytes"] = m.peak_bytes;
    j["threads"] = o.threads;
    if (!ui::settings().json) {
      const double ceiling = gemm_ceiling(o, a).gflops;
      j["gemm_gflops"] = ceiling;
      j["of_gemm"] = j["tflops"].get<double>() * 1e3 / ceiling;
    }
  }
  if (ui::settings().json) return void(ui::out() << j.dump() << "\n");
  print_table<T>(o, j);
}

void check_impl(const BenchOptions& o) {
  if (o.yardstick() == Yardstick::reference) {  // standard attention: S and P, n x m each, per head
    const double need = 2.0 * double(o.n) * double(o.keys()) * (o.dtype == DType::fp64 ? 8 : 4);
    ensure_fits(need, ui::tr(Msg::bench_standard_what));
  }
  if (o.what().device != o.device)  // (never the default: it follows --device)
    throw Error(kUsage, ui::tr(Msg::bench_err_impl, o.impl_name(), device_name(o.device),
                               names_on(o.device)));
  // (the reference's bf16/fp16 backward forms D from its stored P and dP, which the sampled
  // verification cannot recompute: its forward only)
  if (low_precision(o.dtype) &&
      (o.impl() == Impl::fast || o.yardstick() == Yardstick::gemm ||
       (o.yardstick() == Yardstick::reference && o.pass == bench::Pass::bwd)))
    throw Error(kUsage, ui::tr(Msg::bench_err_dtype, o.impl_name(), "fp32 or fp64"));
  if (o.impl() == Impl::fast || o.yardstick() == Yardstick::gemm) require_fast_level();
  if (o.deterministic && o.device != Device::cuda)  // it would change nothing there
    throw Error(kUsage, ui::tr(Msg::err_deterministic_cpu));
  if (o.device != Device::cuda) return;
  // (simt and tc have no backward: refused for --pass bwd before their dtype or d)
  const std::string why = refusal(o.impl(), o.d, dtype_precision(o.dtype), cuda_pass(o.pass));
  if (!why.empty()) throw Error(kUsage, why);
  require_gpu();
}

}  // namespace

void setup_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", ui::tr(Msg::bench_help));
  add_choice<Device>(sub, "--device", o->device, {{"cpu", Device::cpu}, {"cuda", Device::cuda}},
                     ui::tr(Msg::opt_device))
      ->default_str("cpu");
  std::vector<std::pair<std::string, const Timed*>> names;
  for (const Timed& t : kTimed) names.push_back({t.name, &t});
  add_choice<const Timed*>(sub, "--impl", o->timed, names, ui::tr(Msg::bench_opt_impl))
      ->default_str("tiled cpu, teaching cuda");
  add_dtype(sub, o->dtype, true)->default_str("fp32");
  add_shape(sub, *o, kBatched);
  add_causal(sub, *o);
  add_pass(sub, o->pass, ui::tr(Msg::bench_opt_pass));
  add_count(sub, "--threads", o->threads, ui::tr(Msg::bench_opt_threads), 1024);
  add_count(sub, "--reps", o->reps, ui::tr(Msg::bench_opt_reps), 100000)
      ->default_str("20 cuda, 5 cpu");
  sub->add_flag("--deterministic", o->deterministic, ui::tr(Msg::opt_deterministic));
  sub->footer(ui::tr(Msg::bench_examples));
  sub->callback([o] {
    if (o->reps == 0) o->reps = o->device == Device::cuda ? 20 : 5;
    check_impl(*o);
    if (o->device == Device::cpu) ensure_threads(o->threads);
    ensure_fits(double(o->b * o->h) * double(o->n + 2 * o->keys()) * double(o->d) * 8.0 * 4,
                ui::tr(Msg::bench_arrays_what));
    try {
      o->dtype == DType::fp64 ? run_bench_as<double>(*o) : run_bench_as<float>(*o);
    } catch (const cuda::CudaError& e) {
      throw Error(kNoDevice, e.what());
    }
  });
}

}  // namespace fd::demos
