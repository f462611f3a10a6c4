// bench.cpp — `flashdemo bench`: times one case and prints one object (the `bench` event of
// docs/trace-format.md, which lists every field; tests/json_schema_test.py holds it to that):
//   event, impl, device, dtype, pass, b, h, n, m, d, causal, median_ms, min_ms, max_ms, reps,
//   tflops, verified, verified_rows, max_error, error_bound; on the CPU also threads, peak_bytes
// The mechanics (FLOPs, inputs, verification before timing, the timing loop, peak memory, the CPU
// GEMM ceiling) are the library's (flashdemo/tools/benchmark.hpp, shared with `flashdemo ladder`); this
// file chooses what runs (the CPU paths, or a GPU rung through device.hpp) and prints.
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

// reference, tiled, fast, gemm on the CPU; the GPU rungs (fd::Impl) on CUDA.
enum class Impl { reference, tiled, fast, gemm, teaching, simt, tc, mma, hopper };

struct BenchOptions {
  Device device = Device::cpu;
  Impl impl = Impl::tiled;
  DType dtype = DType::fp32;
  index_t b = 1, h = 1, n = 1024, m = 0, d = 64;
  bool causal = false, deterministic = false;
  bench::Pass pass = bench::Pass::fwd;
  index_t threads = 1, reps = 0, warmup = 3;  // reps 0: 20 on the GPU, 5 on the CPU
  index_t keys() const { return m ? m : n; }
  bench::Case bench_case() const {
    bench::Case c;
    c.b = b, c.h = h, c.n = n, c.m = keys(), c.d = d, c.causal = causal, c.pass = pass;
    c.precision = dtype_precision(dtype);
    return c;
  }
};

const char* impl_name(Impl i) {
  const char* names[] = {"reference", "tiled", "fast", "gemm",  "teaching",
                         "simt",      "tc",    "mma",  "hopper"};
  return names[int(i)];
}

bool on_gpu(Impl i) {
  return i >= Impl::teaching;
}

// The GPU rung a bench --impl names.
fd::Impl rung(Impl i) {
  switch (i) {
    case Impl::simt:
      return fd::Impl::simt;
    case Impl::tc:
      return fd::Impl::tc;
    case Impl::mma:
      return fd::Impl::mma;
    case Impl::hopper:
      return fd::Impl::hopper;
    default:
      return fd::Impl::teaching;
  }
}

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
  ui::result_raw(fmt::format(fmt::runtime(ui::text(Msg::bench_header)), impl_name(o.impl),
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
                      {"impl", impl_name(o.impl)},
                      {"device", o.device == Device::cuda ? "cuda" : "cpu"},
                      {"dtype", dtype_name(o.dtype)},
                      {"pass", bench::pass_name(o.pass)},
                      {"b", o.b},
                      {"h", o.h},
                      {"n", o.n},
                      {"m", o.keys()},
                      {"d", o.d},
                      {"causal", o.causal}};
  if (o.impl == Impl::gemm) {
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
  const bench::CpuImpl cpu = o.impl == Impl::reference ? bench::CpuImpl::reference
                             : o.impl == Impl::fast    ? bench::CpuImpl::fast
                                                       : bench::CpuImpl::tiled;
  const bench::Runner<T> runner = o.device == Device::cuda
                                      ? gpu_runner<T>(c, rung(o.impl), o.deterministic, a)
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
  if (o.impl == Impl::reference) {  // standard attention: S and P, n x m each, per head
    const double need = 2.0 * double(o.n) * double(o.keys()) * (o.dtype == DType::fp64 ? 8 : 4);
    ensure_fits(need, ui::tr(Msg::bench_standard_what));
  }
  if (on_gpu(o.impl) != (o.device == Device::cuda))
    throw Error(kUsage, ui::tr(Msg::bench_err_impl, impl_name(o.impl),
                               o.device == Device::cuda ? "cuda" : "cpu",
                               o.device == Device::cuda ? "teaching, simt, tc, mma, hopper"
                                                        : "reference, tiled, fast, gemm"));
  // (the reference's bf16/fp16 backward forms D from its stored P and dP, which the sampled
  // verification cannot recompute: its forward only)
  if (low_precision(o.dtype) && (o.impl == Impl::fast || o.impl == Impl::gemm ||
                                 (o.impl == Impl::reference && o.pass == bench::Pass::bwd)))
    throw Error(kUsage, ui::tr(Msg::bench_err_dtype, impl_name(o.impl), "fp32 or fp64"));
  if (o.deterministic && o.device != Device::cuda)  // it would change nothing there
    throw Error(kUsage, ui::tr(Msg::err_deterministic_cpu));
  if (o.device != Device::cuda) return;
  // (simt and tc have no backward: refused for --pass bwd before their dtype or d)
  const std::string why = refusal(rung(o.impl), o.d, dtype_precision(o.dtype), cuda_pass(o.pass));
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
  add_choice<Impl>(sub, "--impl", o->impl,
                   {{"reference", Impl::reference},
                    {"tiled", Impl::tiled},
                    {"fast", Impl::fast},
                    {"gemm", Impl::gemm},
                    {"teaching", Impl::teaching},
                    {"simt", Impl::simt},
                    {"tc", Impl::tc},
                    {"mma", Impl::mma},
                    {"hopper", Impl::hopper}},
                   ui::tr(Msg::bench_opt_impl))
      ->default_str("tiled");
  add_dtype(sub, o->dtype, true)->default_str("fp32");
  const index_t big = index_t(1) << 24;
  add_count(sub, "--b", o->b, ui::tr(Msg::bench_opt_b), 4096);
  add_count(sub, "--h", o->h, ui::tr(Msg::bench_opt_h), 4096);
  add_count(sub, "--n", o->n, ui::tr(Msg::opt_n), big);
  add_count(sub, "--m", o->m, ui::tr(Msg::opt_m), big)->default_str("n");
  add_count(sub, "--d", o->d, ui::tr(Msg::opt_d), 256);
  sub->add_flag("--causal", o->causal, ui::tr(Msg::opt_causal));
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
