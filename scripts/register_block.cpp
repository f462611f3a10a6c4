// register_block.cpp — the fast path's register block, R rows x NB vectors of C, timed on the
// attention's product shapes: fast::product_block<float, R, NB> (tile_product.hpp) over a
// rows x N x K product,
//   C = A B  (or C += A B),  A: rows x K (A = P^T read through its transposed strides for dV),
//   GFLOP/s = reps x 2 rows N K / seconds  (fastest of 7 rounds of 2000 products, one thread)
// for the block the build uses (6 x 4 on AVX-512) and the others of 24 or 28 accumulators whose
// width divides the tiles' N (64, 128, 256): 7 x 4, 12 x 2, 14 x 2. Rows are cut to a multiple of
// R. AVX-512 only (NB vectors of 16 floats).
// B row-major (ldb = N), or in panels of the block's width (the fast path's packs since session
// 25: K^T, and V, dO where d' is whole panels). Compare with one thread's FMA peak (fma_peak.cpp).
// docs/performance.md has a run.
// Build: g++ -O3 -march=x86-64-v4 -Isrc scripts/register_block.cpp -o register_block
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "flashdemo/fast/tile_product.hpp"

namespace {

using fd::index_t;
using fd::fast::Strides;

struct Shape {
  const char* name;
  index_t rows, N, K;
  bool transposed_A;    // A = P^T: a_row 1, a_inner rows
  bool panels = false;  // B in panels of the block's width (the K^T packs' layout), not row-major
};

template <int R, int NB>
void time_block(const Shape& s) {
  constexpr index_t cols = NB * fd::fast::Simd<float>::W;
  const index_t rows = s.rows / R * R;
  if (s.N % cols) return;
  std::vector<float> A(std::size_t(rows * s.K), 0.5f), B(std::size_t(s.K * s.N), 0.25f),
      C(std::size_t(rows * s.N));
  Strides st = s.transposed_A ? Strides{1, rows, s.N, s.N} : Strides{s.K, 1, s.N, s.N};
  if (s.panels) st.ldb = cols;  // column block c0 at B + c0 K (its K rows of `cols` entries)
  double best = 1e30;
  for (int round = 0; round < 7; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 2000; ++rep)
      for (index_t c0 = 0; c0 < s.N; c0 += cols)
        for (index_t r0 = 0; r0 < rows; r0 += R)
          fd::fast::product_block<float, R, NB>(s.K, A.data() + r0 * st.a_row,
                                                s.panels ? B.data() + c0 * s.K : B.data() + c0,
                                                C.data() + r0 * s.N + c0, st, rep & 1);
    const std::chrono::duration<double> t = std::chrono::steady_clock::now() - t0;
    best = std::min(best, t.count());
  }
  std::printf("| %d x %d | %s | %ld x %ld x %ld | %.1f |\n", R, NB, s.name, long(rows), long(s.N),
              long(s.K), 2000 * 2.0 * double(rows * s.N * s.K) / best / 1e9);
}

template <int R, int NB>
void time_all() {
  const Shape shapes[] = {{"S = Q K^T, d 64", 120, 256, 64, false},
                          {"S = Q K^T, d 64, K^T in panels", 120, 256, 64, false, true},
                          {"S = Q K^T, d 128", 120, 256, 128, false},
                          {"S = Q K^T, d 128, K^T in panels", 120, 256, 128, false, true},
                          {"O += P V, d 64", 120, 64, 256, false},
                          {"O += P V, d 128", 120, 128, 256, false},
                          {"O += P V, d 128, V in panels", 120, 128, 256, false, true},
                          {"dV += P^T dO, d 128", 120, 128, 128, true},
                          {"dV += P^T dO, d 128, dO in panels", 120, 128, 128, true, true}};
  for (const Shape& s : shapes) time_block<R, NB>(s);
}

}  // namespace

int main() {
  std::printf("| block (rows x vectors) | product | rows x N x K | GFLOP/s |\n|---|---|---|---|\n");
  time_all<6, 4>(), time_all<7, 4>(), time_all<12, 2>(), time_all<14, 2>();
}
