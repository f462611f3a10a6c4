// benchmark.cpp — timing one case: inputs, the CPU paths, verification, the loop, the ceiling
// (see benchmark.hpp).
#include "flashdemo/tools/benchmark.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "flashdemo/teaching/flash_forward.hpp"

namespace fd::bench {
namespace {

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

// One head through the CPU teaching path or the reference.
template <class T>
struct Head {
  std::size_t q0, k0;  // offsets of this head's rows of Q and K
  Mat<T> Q, K, V;
  Head(const Case& c, const Arrays<T>& a, index_t head)
      : q0(std::size_t(head * c.n * c.d)),
        k0(std::size_t(head * c.m * c.d)),
        Q(Eigen::Map<const Mat<T>>(a.Q.data() + q0, c.n, c.d)),
        K(Eigen::Map<const Mat<T>>(a.K.data() + k0, c.m, c.d)),
        V(Eigen::Map<const Mat<T>>(a.V.data() + k0, c.m, c.d)) {}
};

template <class T>
void cpu_head_forward(const Case& c, CpuImpl impl, const Arrays<T>& a, Outputs<T>& out,
                      index_t head) {
  const Head<T> h(c, a, head);
  const ForwardResult<T> f =
      impl == CpuImpl::reference
          ? ForwardResult<T>(reference_forward(h.Q, h.K, h.V, c.params(), c.precision))
          : flash_forward(h.Q, h.K, h.V, c.params(), kTeachingTiles, nullptr, c.variant());
  std::copy(f.O.data(), f.O.data() + f.O.size(), out.O.begin() + std::ptrdiff_t(h.q0));
  std::copy(f.L.data(), f.L.data() + f.L.size(), out.L.begin() + std::ptrdiff_t(head * c.n));
  if (f.L_lo.size())
    std::copy(f.L_lo.data(), f.L_lo.data() + f.L_lo.size(),
              out.L_lo.begin() + std::ptrdiff_t(head * c.n));
}

// The backward from the saved O and L (the reference recomputes its S and P: it saved nothing).
template <class T>
void cpu_head_backward(const Case& c, CpuImpl impl, const Arrays<T>& a, Outputs<T>& out,
                       index_t head) {
  const Head<T> h(c, a, head);
  const Mat<T> dO = Eigen::Map<const Mat<T>>(a.dO.data() + h.q0, c.n, c.d);
  BackwardResult<T> g;
  if (impl == CpuImpl::reference) {
    const auto r = reference_backward(h.Q, h.K, h.V, dO, c.params(), c.precision);
    g = {r.dQ, r.dK, r.dV, r.D};
  } else {
    const ForwardResult<T> f{Eigen::Map<const Mat<T>>(out.O.data() + h.q0, c.n, c.d),
                             Eigen::Map<const Vec<T>>(out.L.data() + head * c.n, c.n),
                             Eigen::Map<const Vec<T>>(out.L_lo.data() + head * c.n, c.n)};
    g = flash_backward(h.Q, h.K, h.V, f, dO, c.params(), kTeachingTiles, nullptr, c.variant());
  }
  std::copy(g.dQ.data(), g.dQ.data() + g.dQ.size(), out.dQ.begin() + std::ptrdiff_t(h.q0));
  std::copy(g.dK.data(), g.dK.data() + g.dK.size(), out.dK.begin() + std::ptrdiff_t(h.k0));
  std::copy(g.dV.data(), g.dV.data() + g.dV.size(), out.dV.begin() + std::ptrdiff_t(h.k0));
}

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
      if (err > 1e-5 * mag + 1e-6) throw GemmUnverified(err, 1e-5 * mag + 1e-6);
      c.max_error = std::max(c.max_error, err), c.bound = std::max(c.bound, 1e-5 * mag + 1e-6);
    }
  }
}

// One side's GEMM, checked, then timed: its best GFLOP/s.
template <class T>
double gemm_gflops(const Arrays<T>& a, index_t k, index_t threads, index_t runs, Ceiling& c,
                   const Progress& progress) {
  std::vector<T> A(std::size_t(k * k)), B(A.size()), C(A.size());
  for (std::size_t x = 0; x < A.size(); ++x)
    A[x] = a.Q[x % a.Q.size()], B[x] = a.V[(x * 7) % a.V.size()];
  fast::gemm(k, k, k, A.data(), B.data(), C.data(), threads);
  check_gemm(k, A, B, C, c);
  const std::vector<double> ms = time_loop(
      [&] { fast::gemm(k, k, k, A.data(), B.data(), C.data(), threads); }, 1, runs, progress);
  return 2.0 * double(k) * double(k) * double(k) / (*std::min_element(ms.begin(), ms.end()) * 1e6);
}

}  // namespace

double flops(const Case& c) {
  double f = 4.0 * double(c.b * c.h) * double(c.n) * double(c.m) * double(c.d);
  if (c.causal && c.n == c.m) f /= 2;
  return c.pass == Pass::bwd ? 2.5 * f : f;
}

template <class T>
Arrays<T> random_arrays(const Case& c) {
  const std::size_t nq = std::size_t(c.heads() * c.n * c.d),
                    nk = std::size_t(c.heads() * c.m * c.d);
  TorchGenerator gen(c.seed);
  auto draw = [&](std::size_t count) {
    const std::vector<double> x = gen.randn(index_t(count));
    std::vector<T> v(x.begin(), x.end());
    if (c.emulated())
      for (T& e : v) e = round_to(c.precision, e);
    return v;
  };
  Arrays<T> a;
  a.Q = draw(nq), a.K = draw(nk), a.V = draw(nk), a.dO = draw(nq);
  return a;
}

template <class T>
Outputs<T> make_outputs(const Case& c) {
  const std::size_t nq = std::size_t(c.heads() * c.n * c.d),
                    nk = std::size_t(c.heads() * c.m * c.d), rows = std::size_t(c.heads() * c.n);
  const bool bwd = c.pass == Pass::bwd;  // gradients only when they are computed
  return Outputs<T>{std::vector<T>(nq),
                    std::vector<T>(rows),
                    std::vector<T>(rows),
                    std::vector<T>(bwd ? nq : 0),
                    std::vector<T>(bwd ? nk : 0),
                    std::vector<T>(bwd ? nk : 0),
                    std::vector<T>(bwd ? rows : 0)};
}

template <class T>
Verdict verify(const Case& c, const Arrays<T>& a, const Outputs<T>& out) {
  Verdict worst;
  for (index_t head : {index_t(0), c.heads() - 1}) {
    const std::size_t q0 = std::size_t(head * c.n * c.d), k0 = std::size_t(head * c.m * c.d);
    HeadArrays<T> h{c.n,
                    c.m,
                    c.d,
                    a.Q.data() + q0,
                    a.K.data() + k0,
                    a.V.data() + k0,
                    out.O.data() + q0,
                    out.L.data() + std::size_t(head * c.n),
                    out.L_lo.data() + std::size_t(head * c.n)};
    if (c.pass == Pass::bwd)
      h.dO = a.dO.data() + q0, h.dQ = out.dQ.data() + q0, h.dK = out.dK.data() + k0,
      h.dV = out.dV.data() + k0;
    const Verdict v = verify_sampled(h, c.params(), 16, c.precision);
    if (!v.pass || (worst.pass && v.err > worst.err)) worst = v;
  }
  return worst;
}

template <class T>
Runner<T> cpu_runner(const Case& c, CpuImpl impl, index_t threads, const Arrays<T>& a) {
  Runner<T> r;
  const fast::Shape shape{c.b, c.h, c.n, c.m, c.d};
  if (impl == CpuImpl::fast) {
    const fast::Options fwd{threads, fast::tiles_for(shape, fast::Pass::fwd, threads, sizeof(T))},
        bwd{threads, fast::tiles_for(shape, fast::Pass::bwd, threads, sizeof(T))};
    r.forward = [c, shape, fwd, &a](Outputs<T>& out) {
      fast::forward(shape, c.params(), fwd, a.Q.data(), a.K.data(), a.V.data(), out.O.data(),
                    out.L.data(), out.L_lo.data());
    };
    r.backward = [c, shape, bwd, &a](Outputs<T>& out) {
      fast::backward(shape, c.params(), bwd, a.Q.data(), a.K.data(), a.V.data(), out.O.data(),
                     out.L.data(), out.L_lo.data(), a.dO.data(), out.dQ.data(), out.dK.data(),
                     out.dV.data(), out.D.data());
    };
    return r;
  }
  r.forward = [c, impl, &a](Outputs<T>& out) {
    for (index_t head = 0; head < c.heads(); ++head) cpu_head_forward(c, impl, a, out, head);
  };
  r.backward = [c, impl, &a](Outputs<T>& out) {
    for (index_t head = 0; head < c.heads(); ++head) cpu_head_backward(c, impl, a, out, head);
  };
  return r;
}

std::vector<double> time_loop(const std::function<void()>& once, index_t warmup, index_t reps,
                              const Progress& progress) {
  for (index_t k = 0; k < warmup; ++k) once();
  std::vector<double> ms;
  const auto start = std::chrono::steady_clock::now();
  for (index_t k = 0; k < reps; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (progress) progress(k + 1, reps, std::chrono::duration<double>(t1 - start).count());
  }
  return ms;
}

Times summarize(std::vector<double> ms) {
  Times t;
  if (ms.empty()) return t;
  t.ms = ms;
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2], t.min_ms = ms.front(), t.max_ms = ms.back();
  t.reps = ms.size();
  return t;
}

// Linux: writing 5 to clear_refs resets VmHWM, so the peak is counted from now.
PeakMemory::PeakMemory() {
  std::ofstream("/proc/self/clear_refs") << "5";
  rss_before_ = status_bytes("VmRSS:");
}

double PeakMemory::growth() const {
  return status_bytes("VmHWM:") - rss_before_;
}

void fit_to_budget(double once, double budget_s, index_t& warmup, index_t& reps) {
  if (budget_s <= 0 || once <= 0 || double(warmup + reps) * once <= budget_s) return;
  warmup = 0;
  reps = std::min(reps, std::max(kMinBudgetReps, index_t(budget_s / once)));
}

template <class T>
Measurement measure(const Case& c, const Arrays<T>& a, const Runner<T>& run, index_t warmup,
                    index_t reps, const Progress& progress, double budget_s) {
  Measurement m;
  Outputs<T> saved = make_outputs<T>(c);
  // From the first run on: what the fast path keeps for its next call (its workspace) is
  // allocated there, and counts.
  const PeakMemory peak;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  run.forward(saved);
  const Clock::time_point t1 = Clock::now();
  if (c.pass == Pass::bwd) run.backward(saved);
  const Clock::time_point t2 = Clock::now();
  m.verdict = verify(c, a, saved);
  if (!m.verdict.pass) return m;
  const auto timed_pass = c.pass == Pass::bwd ? t2 - t1 : t1 - t0;  // (the pass the reps time)
  fit_to_budget(std::chrono::duration<double>(timed_pass).count(), budget_s, warmup, reps);
  std::vector<double> ms;
  if (run.device_times)
    ms = run.device_times(warmup, reps);
  else if (c.pass == Pass::fwd)
    ms = time_loop(
        [&] {
          Outputs<T> out = make_outputs<T>(c);
          run.forward(out);
        },
        std::min<index_t>(warmup, 1), reps, progress);
  else
    ms = time_loop([&] { run.backward(saved); }, std::min<index_t>(warmup, 1), reps, progress);
  // Beyond inputs and outputs: a forward run allocates its O and L; the backward writes into
  // gradients allocated before the timing.
  const double outputs =
      c.pass == Pass::bwd ? 0.0 : double(sizeof(T)) * double(c.heads()) * double(c.n * c.d + c.n);
  m.peak_bytes = std::max(0.0, peak.growth() - outputs);
  m.times = summarize(ms);
  m.tflops = flops(c) / (m.times.median_ms * 1e-3) / 1e12;
  m.timed = true;
  return m;
}

index_t gemm_side(const Case& c) {
  const double side = std::cbrt(double(c.n) * double(c.m) * double(c.d));
  return std::clamp<index_t>(index_t(std::lround(side / 16)) * 16, 16, 2048);
}

template <class T>
Ceiling gemm_ceiling(const Case& c, const Arrays<T>& a, index_t threads, index_t runs,
                     const Progress& progress) {
  Ceiling best;
  for (index_t k : {gemm_side(c), kBigSide}) {
    if (k == best.side) continue;
    const double gflops = gemm_gflops(a, k, threads, runs, best, progress);
    if (gflops > best.gflops) best.gflops = gflops, best.side = k;
  }
  return best;
}

ReadBandwidth read_bandwidth(double bytes, index_t threads, index_t reps) {
  const index_t words = std::max<index_t>(1, index_t(bytes / sizeof(std::uint64_t)));
  const std::unique_ptr<std::uint64_t[]> buf(new std::uint64_t[std::size_t(words)]);
  std::uint64_t* x = buf.get();
  const int team = int(std::max<index_t>(1, threads));
#pragma omp parallel for schedule(static) num_threads(team)
  for (index_t k = 0; k < words; ++k) x[k] = std::uint64_t(k);  // each page first touched here
  volatile std::uint64_t kept = 0;  // the sum is used: the loop cannot be left out
  const std::vector<double> ms = time_loop(
      [&] {
        std::uint64_t sum = 0;
#pragma omp parallel for schedule(static) num_threads(team) reduction(+ : sum)
        for (index_t k = 0; k < words; ++k) sum += x[k];
        kept = sum;
      },
      1, std::max<index_t>(1, reps));
  ReadBandwidth r;
  r.bytes = double(words) * double(sizeof(std::uint64_t));
  r.median_ms = summarize(ms).median_ms;
  r.gbps = r.bytes / (r.median_ms * 1e6);
  return r;
}

#define FD_INSTANTIATE(T)                                                                         \
  template Arrays<T> random_arrays(const Case&);                                                  \
  template Outputs<T> make_outputs(const Case&);                                                  \
  template Verdict verify(const Case&, const Arrays<T>&, const Outputs<T>&);                      \
  template Runner<T> cpu_runner(const Case&, CpuImpl, index_t, const Arrays<T>&);                 \
  template Measurement measure(const Case&, const Arrays<T>&, const Runner<T>&, index_t, index_t, \
                               const Progress&, double);                                          \
  template Ceiling gemm_ceiling(const Case&, const Arrays<T>&, index_t, index_t, const Progress&);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::bench
