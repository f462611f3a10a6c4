// bench.cpp — `flashdemo bench`: times one case and prints one object (the `bench` event of
// docs/trace-format.md, which lists every field; tests/json_schema_test.py holds it to that):
//   event, impl, device, dtype, pass, b, h, n, m, d, causal, median_ms, min_ms, max_ms, reps,
//   tflops, verified, verified_rows, max_error, error_bound; on the CPU also threads, peak_bytes
// FLOPs as FlashAttention's benchmarks count them: forward 4 b h n m d, halved when causal with
// n == m; backward 2.5x forward. Every case is verified before it is timed: in full against the
// fp64 reference when small, on sampled rows of the first and last head otherwise (verify.hpp).
#include "bench.hpp"

#include <fmt/core.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>

#include "attention_cli.hpp"
#include "cuda/cuda_api.hpp"
#include "device.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/random.hpp"
#include "flashdemo/reference.hpp"
#include "flashdemo/verify.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

enum class Impl { reference, tiled, fast, gemm, teaching };

struct BenchOptions {
  Device device = Device::cpu;
  Impl impl = Impl::tiled;
  DType dtype = DType::fp32;
  index_t b = 1, h = 1, n = 1024, m = 0, d = 64;
  bool causal = false, deterministic = false;
  cuda::Pass pass = cuda::Pass::fwd;
  index_t threads = 1, reps = 0, warmup = 3;  // reps 0: 20 on the GPU, 5 on the CPU
  index_t keys() const { return m ? m : n; }
  cuda::Shape shape() const { return {b, h, n, keys(), d}; }
  AttnParams params() const { return AttnParams{causal, CausalAlign::top_left, {}}; }
};

const char* impl_name(Impl i) {
  const char* names[] = {"reference", "tiled", "fast", "gemm", "teaching"};
  return names[int(i)];
}

double flops(const BenchOptions& o) {
  double f = 4.0 * double(o.b * o.h) * double(o.n) * double(o.keys()) * double(o.d);
  if (o.causal && o.n == o.keys()) f /= 2;
  return o.pass == cuda::Pass::bwd ? 2.5 * f : f;
}

template <class T>
struct Arrays {
  std::vector<T> Q, K, V, dO;
};

template <class T>
Arrays<T> random_arrays(const BenchOptions& o) {
  const std::size_t nq = std::size_t(o.b * o.h * o.n * o.d),
                    nk = std::size_t(o.b * o.h * o.keys() * o.d);
  TorchGenerator gen(0);
  auto draw = [&](std::size_t count) {
    const std::vector<double> x = gen.randn(index_t(count));
    return std::vector<T>(x.begin(), x.end());
  };
  Arrays<T> a;
  a.Q = draw(nq), a.K = draw(nk), a.V = draw(nk), a.dO = draw(nq);
  return a;
}

// Outputs of one run of every head, host-side, for verification.
template <class T>
struct Outputs {
  std::vector<T> O, L, L_lo, dQ, dK, dV, D;  // L_lo: L's rounding error (online_softmax.hpp)
};

template <class T>
Verdict verify_heads(const BenchOptions& o, const Arrays<T>& a, const Outputs<T>& out) {
  Verdict worst;
  for (index_t head : {index_t(0), o.b * o.h - 1}) {
    const std::size_t q0 = std::size_t(head * o.n * o.d), k0 = std::size_t(head * o.keys() * o.d);
    HeadArrays<T> h{o.n,
                    o.keys(),
                    o.d,
                    a.Q.data() + q0,
                    a.K.data() + k0,
                    a.V.data() + k0,
                    out.O.data() + q0,
                    out.L.data() + std::size_t(head * o.n),
                    out.L_lo.data() + std::size_t(head * o.n)};
    if (o.pass == cuda::Pass::bwd)
      h.dO = a.dO.data() + q0, h.dQ = out.dQ.data() + q0, h.dK = out.dK.data() + k0,
      h.dV = out.dV.data() + k0;
    const Verdict v = verify_sampled(h, o.params());
    if (!v.pass || (worst.pass && v.err > worst.err)) worst = v;
  }
  return worst;
}

// One head through the CPU teaching path or the reference, for `tiled` and `reference`.
template <class T>
struct Head {
  std::size_t q0, k0;  // offsets of this head's rows of Q and K
  Mat<T> Q, K, V;
  Head(const BenchOptions& o, const Arrays<T>& a, index_t head)
      : q0(std::size_t(head * o.n * o.d)),
        k0(std::size_t(head * o.keys() * o.d)),
        Q(Eigen::Map<const Mat<T>>(a.Q.data() + q0, o.n, o.d)),
        K(Eigen::Map<const Mat<T>>(a.K.data() + k0, o.keys(), o.d)),
        V(Eigen::Map<const Mat<T>>(a.V.data() + k0, o.keys(), o.d)) {}
};

constexpr TileSizes kTeachingTiles{64, 64};

template <class T>
void cpu_head_forward(const BenchOptions& o, const Arrays<T>& a, Outputs<T>& out, index_t head) {
  const Head<T> h(o, a, head);
  const ForwardResult<T> f = o.impl == Impl::reference
                                 ? ForwardResult<T>(reference_forward(h.Q, h.K, h.V, o.params()))
                                 : flash_forward(h.Q, h.K, h.V, o.params(), kTeachingTiles);
  std::copy(f.O.data(), f.O.data() + f.O.size(), out.O.begin() + std::ptrdiff_t(h.q0));
  std::copy(f.L.data(), f.L.data() + f.L.size(), out.L.begin() + std::ptrdiff_t(head * o.n));
  if (f.L_lo.size())
    std::copy(f.L_lo.data(), f.L_lo.data() + f.L_lo.size(),
              out.L_lo.begin() + std::ptrdiff_t(head * o.n));
}

// The backward from the saved O and L (the reference recomputes its S and P: it saved nothing).
template <class T>
void cpu_head_backward(const BenchOptions& o, const Arrays<T>& a, Outputs<T>& out, index_t head) {
  const Head<T> h(o, a, head);
  const Mat<T> dO = Eigen::Map<const Mat<T>>(a.dO.data() + h.q0, o.n, o.d);
  BackwardResult<T> g;
  if (o.impl == Impl::reference) {
    const auto r = reference_backward(h.Q, h.K, h.V, dO, o.params());
    g = {r.dQ, r.dK, r.dV, r.D};
  } else {
    const ForwardResult<T> f{Eigen::Map<const Mat<T>>(out.O.data() + h.q0, o.n, o.d),
                             Eigen::Map<const Vec<T>>(out.L.data() + head * o.n, o.n),
                             Eigen::Map<const Vec<T>>(out.L_lo.data() + head * o.n, o.n)};
    g = flash_backward(h.Q, h.K, h.V, f, dO, o.params(), kTeachingTiles);
  }
  std::copy(g.dQ.data(), g.dQ.data() + g.dQ.size(), out.dQ.begin() + std::ptrdiff_t(h.q0));
  std::copy(g.dK.data(), g.dK.data() + g.dK.size(), out.dK.begin() + std::ptrdiff_t(h.k0));
  std::copy(g.dV.data(), g.dV.data() + g.dV.size(), out.dV.begin() + std::ptrdiff_t(h.k0));
}

std::vector<double> time_cpu(const std::function<void()>& once, index_t warmup, index_t reps);

constexpr TileSizes kFastTiles{256, 256};

// The forward into `out` (O, L), on the CPU or the GPU.
template <class T>
void run_forward(const BenchOptions& o, const Arrays<T>& a, Outputs<T>& out) {
  if (o.device == Device::cuda)
    return cuda::forward<T>(o.shape(), o.params(), cuda::default_tiles(o.d, sizeof(T)), Variant{},
                            fd::Impl::teaching, a.Q.data(), a.K.data(), a.V.data(), out.O.data(),
                            out.L.data(), out.L_lo.data());
  if (o.impl == Impl::fast)
    return fast::forward(fast::Shape{o.b, o.h, o.n, o.keys(), o.d}, o.params(),
                         fast::Options{o.threads, kFastTiles}, a.Q.data(), a.K.data(), a.V.data(),
                         out.O.data(), out.L.data(), out.L_lo.data());
  for (index_t head = 0; head < o.b * o.h; ++head) cpu_head_forward(o, a, out, head);
}

// The backward into `out` (dQ, dK, dV, D) from the O and L already in it.
template <class T>
void run_backward(const BenchOptions& o, const Arrays<T>& a, Outputs<T>& out) {
  if (o.device == Device::cuda)
    return cuda::backward<T>(o.shape(), o.params(), cuda::default_tiles(o.d, sizeof(T)), Variant{},
                             o.deterministic, a.Q.data(), a.K.data(), a.V.data(), out.O.data(),
                             out.L.data(), out.L_lo.data(), a.dO.data(), out.dQ.data(),
                             out.dK.data(), out.dV.data(), out.D.data());
  if (o.impl == Impl::fast)
    return fast::backward(fast::Shape{o.b, o.h, o.n, o.keys(), o.d}, o.params(),
                          fast::Options{o.threads, kFastTiles}, a.Q.data(), a.K.data(), a.V.data(),
                          out.O.data(), out.L.data(), out.L_lo.data(), a.dO.data(), out.dQ.data(),
                          out.dK.data(), out.dV.data(), out.D.data());
  for (index_t head = 0; head < o.b * o.h; ++head) cpu_head_backward(o, a, out, head);
}

// Fresh outputs, the forward, and (pass bwd) the backward.
template <class T>
Outputs<T> run_once(const BenchOptions& o, const Arrays<T>& a) {
  const std::size_t nq = a.Q.size(), nk = a.K.size(), rows = std::size_t(o.b * o.h * o.n);
  const bool bwd = o.pass == cuda::Pass::bwd;  // gradients only when they are computed
  Outputs<T> out{std::vector<T>(nq),
                 std::vector<T>(rows),
                 std::vector<T>(rows),
                 std::vector<T>(bwd ? nq : 0),
                 std::vector<T>(bwd ? nk : 0),
                 std::vector<T>(bwd ? nk : 0),
                 std::vector<T>(bwd ? rows : 0)};
  run_forward(o, a, out);
  if (bwd) run_backward(o, a, out);
  return out;
}

// A field of /proc/self/status in bytes: VmHWM (peak resident memory) or VmRSS (now).
double status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  double kb = 0;
  while (status >> key) {
    if (key == field) {
      status >> kb;
      return kb * 1024;
    }
    status.ignore(256, '\n');
  }
  return 0;
}

// Starts a fresh peak-memory measurement (Linux: writing 5 to clear_refs resets VmHWM) and
// returns the resident memory now, which the peak is counted from.
double reset_peak() {
  std::ofstream("/proc/self/clear_refs") << "5";
  return status_bytes("VmRSS:");
}

// Times of `reps` runs after `warmup`; on a terminal, a progress bar on stderr once the runs
// have taken more than a second.
std::vector<double> time_cpu(const std::function<void()>& once, index_t warmup, index_t reps) {
  for (index_t k = 0; k < warmup; ++k) once();
  std::vector<double> ms;
  const auto start = std::chrono::steady_clock::now();
  const bool tty = isatty(STDERR_FILENO) == 1;
  bool shown = false;
  for (index_t k = 0; k < reps; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (tty && std::chrono::duration<double>(t1 - start).count() > 1.0) {
      const std::size_t width = 30, done = width * std::size_t(k + 1) / std::size_t(reps);
      fmt::print(stderr, "\r  [{:<30}] {}/{}", std::string(done, '#'), k + 1, reps);
      shown = true;
    }
  }
  if (shown) fmt::print(stderr, "\r{:<50}\r", "");
  return ms;
}

// The machine's ceiling in the same run: the best speed of a square GEMM C = A B (k x k each, 2 k^3
// FLOPs) on the same threads, checked on two rows against a double product. Square, because a
// GEMM's best speed is reached on square shapes: a skinny n x m x d product is slower than the
// fused attention kernel itself and would be no ceiling. Two sides: the case's, 2 k^3 ~ 2 n m d
// (k a multiple of 16, 16..2048), and kBigSide, since a small case's GEMM runs far below the
// machine's speed (16 x 16 x 16 is mostly overhead) and the fused kernel would pass it. Each is
// timed `runs` times (5 at least) after a warm-up and its fastest run counts: noise only slows.
index_t gemm_side(const BenchOptions& o) {
  const double side = std::cbrt(double(o.n) * double(o.keys()) * double(o.d));
  return std::clamp<index_t>(index_t(std::lround(side / 16)) * 16, 16, 2048);
}

constexpr index_t kBigSide = 512, kCeilingRuns = 5;

// The ceiling's GFLOP/s and the side that reached it, and its check: rows 0 and k - 1 of C
// against a double product, each entry within 1e-5 of the sum of |terms| (plus 1e-6): the largest
// error it measured and that bound.
struct Ceiling {
  double gflops = 0, max_error = 0, bound = 0;
  index_t side = 0;
};

// Rows 0 and k - 1 of C = A B (k x k) against a double product; throws past the bound.
template <class T>
void check_gemm(index_t k, const std::vector<T>& A, const std::vector<T>& B,
                const std::vector<T>& C, Ceiling& c) {
  for (index_t r : {index_t(0), k - 1}) {
    for (index_t x = 0; x < k; ++x) {
      double ref = 0, mag = 0;
      for (index_t y = 0; y < k; ++y) {
        const double term = double(A[std::size_t(r * k + y)]) * double(B[std::size_t(y * k + x)]);
        ref += term, mag += std::abs(term);
      }
      const double err = std::abs(double(C[std::size_t(r * k + x)]) - ref);
      if (err > 1e-5 * mag + 1e-6)
        throw Error(kCheckFailed,
                    ui::tr(Msg::bench_unverified, ui::sci(err), "C", ui::sci(1e-5 * mag + 1e-6)));
      c.max_error = std::max(c.max_error, err), c.bound = std::max(c.bound, 1e-5 * mag + 1e-6);
    }
  }
}

// One side's GEMM, checked, then timed: its best GFLOP/s.
template <class T>
double gemm_gflops(const BenchOptions& o, const Arrays<T>& a, index_t k, index_t runs, Ceiling& c) {
  std::vector<T> A(std::size_t(k * k)), B(A.size()), C(A.size());
  for (std::size_t x = 0; x < A.size(); ++x)
    A[x] = a.Q[x % a.Q.size()], B[x] = a.V[(x * 7) % a.V.size()];
  fast::gemm(k, k, k, A.data(), B.data(), C.data(), o.threads);
  check_gemm(k, A, B, C, c);
  const std::vector<double> ms =
      time_cpu([&] { fast::gemm(k, k, k, A.data(), B.data(), C.data(), o.threads); }, 1, runs);
  return 2.0 * double(k) * double(k) * double(k) / (*std::min_element(ms.begin(), ms.end()) * 1e6);
}

template <class T>
Ceiling gemm_ceiling(const BenchOptions& o, const Arrays<T>& a, index_t runs = kCeilingRuns) {
  Ceiling c;
  for (index_t k : {gemm_side(o), kBigSide}) {
    if (k == c.side) continue;
    const double gflops = gemm_gflops(o, a, k, runs, c);
    if (gflops > c.gflops) c.gflops = gflops, c.side = k;
  }
  return c;
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
  const Arrays<T> a = random_arrays<T>(o);
  nlohmann::json j = {{"event", "bench"},
                      {"impl", impl_name(o.impl)},
                      {"device", o.device == Device::cuda ? "cuda" : "cpu"},
                      {"dtype", dtype_name(o.dtype)},
                      {"pass", o.pass == cuda::Pass::fwd ? "fwd" : "bwd"},
                      {"b", o.b},
                      {"h", o.h},
                      {"n", o.n},
                      {"m", o.keys()},
                      {"d", o.d},
                      {"causal", o.causal}};
  if (o.impl == Impl::gemm) {
    const index_t runs = std::max(o.reps, kCeilingRuns);
    const Ceiling c = gemm_ceiling(o, a, runs);
    const double ms = 2.0 * double(o.b * o.h * o.n * o.keys() * o.d) / (c.gflops * 1e6);
    j.update({{"median_ms", ms},
              {"min_ms", ms},
              {"max_ms", ms},
              {"reps", runs},
              {"tflops", c.gflops / 1e3},
              {"verified", true},  // two rows of C, against a double product
              {"verified_rows", 2},
              {"max_error", c.max_error},
              {"error_bound", c.bound},
              {"threads", o.threads},
              {"peak_bytes", 0.0},
              {"gemm_side", c.side}});
    if (ui::settings().json) return void(ui::out() << j.dump() << "\n");
    print_table<T>(o, j);
    return ui::result(Msg::bench_gemm_side, gemm_side(o), kBigSide, runs, c.side);
  }
  Outputs<T> saved = run_once(o, a);
  const Verdict v = verify_heads(o, a, saved);
  if (!v.pass)
    throw Error(kCheckFailed,
                ui::tr(Msg::bench_unverified, ui::sci(v.err), v.worst, ui::sci(v.bound)));
  const double rss_before = reset_peak();
  std::vector<double> ms;
  if (o.device == Device::cuda)
    ms = cuda::time_kernels<T>(o.shape(), o.params(), cuda::default_tiles(o.d, sizeof(T)),
                               Variant{}, fd::Impl::teaching, o.pass, o.deterministic, a.Q.data(),
                               a.K.data(), a.V.data(), a.dO.data(), int(o.warmup), int(o.reps))
             .ms;
  else
    ms = time_cpu(  // fwd: a whole forward with its outputs; bwd: the backward alone, as
                    // PyTorch's autograd backward is timed (the forward's O and L are inputs)
        o.pass == cuda::Pass::fwd ? std::function<void()>([&] { run_once(o, a); })
                                  : std::function<void()>([&] { run_backward(o, a, saved); }),
        std::min<index_t>(o.warmup, 1), o.reps);
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted[sorted.size() / 2];
  j.update({{"median_ms", med},
            {"min_ms", sorted.front()},
            {"max_ms", sorted.back()},
            {"reps", ms.size()},
            {"tflops", flops(o) / (med * 1e-3) / 1e12},
            {"verified", true},
            {"verified_rows", v.rows},
            {"max_error", v.err},
            {"error_bound", v.bound}});
  if (o.device == Device::cpu) {
    // Beyond inputs and outputs: a forward run allocates its O and L; the backward writes into
    // gradients allocated before the timing.
    const double outputs = o.pass == cuda::Pass::bwd
                               ? 0.0
                               : double(sizeof(T)) * double(o.b * o.h) * double(o.n * o.d + o.n);
    j["peak_bytes"] = std::max(0.0, status_bytes("VmHWM:") - rss_before - outputs);
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
  const bool gpu_impl = o.impl == Impl::teaching;
  if (gpu_impl != (o.device == Device::cuda))
    throw Error(
        kUsage,
        ui::tr(Msg::bench_err_impl, impl_name(o.impl), o.device == Device::cuda ? "cuda" : "cpu",
               o.device == Device::cuda ? "teaching" : "reference, tiled, fast, gemm"));
  if (o.device == Device::cuda) {
    const cuda::GpuInfo g = cuda::gpu_info();
    if (!g.built) throw Error(kNoDevice, ui::tr(Msg::err_no_cuda_build));
    if (!g.present) throw Error(kNoDevice, ui::tr(Msg::err_no_gpu, why_no_gpu(g)));
  }
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
                    {"teaching", Impl::teaching}},
                   ui::tr(Msg::bench_opt_impl))
      ->default_str("tiled");
  add_dtype(sub, o->dtype)->default_str("fp32");
  const index_t big = index_t(1) << 24;
  add_count(sub, "--b", o->b, ui::tr(Msg::bench_opt_b), 4096);
  add_count(sub, "--h", o->h, ui::tr(Msg::bench_opt_h), 4096);
  add_count(sub, "--n", o->n, ui::tr(Msg::opt_n), big);
  add_count(sub, "--m", o->m, ui::tr(Msg::opt_m), big)->default_str("n");
  add_count(sub, "--d", o->d, ui::tr(Msg::opt_d), 256);
  sub->add_flag("--causal", o->causal, ui::tr(Msg::opt_causal));
  add_choice<cuda::Pass>(sub, "--pass", o->pass,
                         {{"fwd", cuda::Pass::fwd}, {"bwd", cuda::Pass::bwd}},
                         ui::tr(Msg::bench_opt_pass))
      ->default_str("fwd");
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
