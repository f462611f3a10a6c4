// fma_peak.cpp — the machine's fp32 FMA peak, per thread and for T threads at once:
//   per thread: A independent accumulators x_a = x_a * b + c (one vector FMA each) for N rounds,
//   GFLOP/s = T * N * A * W * 2 / seconds   (W = fp32 lanes per vector: 16 on AVX-512, 8 on AVX2)
// A accumulators cover the FMA latency (4 cycles) on two FMA ports (8 in flight): 16 on AVX-512,
// 12 on AVX2, whose 16 vector registers must also hold b and c (16 accumulators there spilled to
// the stack: one Zen 5 thread read 66 GFLOP/s with them, 106 with 12). This is the ceiling the
// fast path's forward is compared with (docs/performance.md); no memory is touched.
// Build: g++ -O2 -march=x86-64-v4 -fopenmp scripts/fma_peak.cpp -o fma_peak
// Run:   fma_peak THREADS [SECONDS]  ->  one JSON line
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#if defined(__AVX512F__)
using V = __m512;
constexpr int W = 16, A = 16;  // lanes, accumulators (32 registers)
inline V fma(V a, V b, V c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline V splat(float x) {
  return _mm512_set1_ps(x);
}
inline float first(V v) {
  return _mm512_cvtss_f32(v);
}
#else
using V = __m256;
constexpr int W = 8, A = 12;  // 12 accumulators, b and c in 16 registers
inline V fma(V a, V b, V c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline V splat(float x) {
  return _mm256_set1_ps(x);
}
inline float first(V v) {
  return _mm256_cvtss_f32(v);
}
#endif

// N rounds of A independent FMAs; returns a value that depends on all of them.
float rounds(long N) {
  V x[A];
  for (int a = 0; a < A; ++a) x[a] = splat(1.0f + 1e-7f * float(a));
  const V b = splat(0.999999f), c = splat(1e-7f);
  for (long k = 0; k < N; ++k)
#pragma GCC unroll 16
    for (int a = 0; a < A; ++a) x[a] = fma(x[a], b, c);  // x = x b + c
  float s = 0;
  for (int a = 0; a < A; ++a) s += first(x[a]);
  return s;
}

int main(int argc, char** argv) {
  const int T = argc > 1 ? std::atoi(argv[1]) : omp_get_max_threads();
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  rounds(1 << 20);  // warm up one core's clock
  long N = 1 << 22;
  double best = 0, sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(T) reduction(+ : sink)
    sink += rounds(N);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double gflops = double(T) * double(N) * A * W * 2 / s / 1e9;
    if (gflops > best) best = gflops;
    if (s < seconds / 5) N *= 2;  // long enough to time, not long enough to waste
  }
  std::printf(
      "{\"event\": \"fma_peak\", \"threads\": %d, \"lanes\": %d, \"gflops\": %.1f, "
      "\"per_thread_gflops\": %.1f, \"sink\": %g}\n",
      T, W, best, best / T, sink);
}
