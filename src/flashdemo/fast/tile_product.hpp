// tile_product.hpp — the fast path's one matrix product, register-blocked:
//   C = A B   or   C += A B,   A: rows x K, B: K x N, C: rows x N
// A is read one scalar at a time through two strides, A(r, k) = A[r * a_row + k * a_inner], so
// the same kernel forms S = Q_i K_j^T (A = Q_i, B = K_j^T packed), O_i += P V_j (A = P) and
// dV_j += P^T dO_i (A = P^T: a_row = 1, a_inner = the row stride of P). C is row-major, B
// row-major or in panels (below), N a multiple of the vector width W (the caller pads B and C
// with zero columns).
//
// The micro-kernel keeps an R x (NB W) block of C in registers while k runs over K:
//   for k: b_c = B(k, c W .. c W + W)  (NB vector loads);  for r: C_rc += A(r, k) b_c  (fused)
// R x NB = 6 x 4 vectors on AVX-512 (24 of its 32 registers), 6 x 2 on AVX2 and SSE (12 of 16).
// B's rows are vector loads, A's entries broadcasts. C is written once per product. B is row-major
// (ldb apart), or in panels of the block's width (b_panel: the packs of K^T, V^T and, where d'
// is whole panels, of Q, K, V, dO's rows: fast_attention.cpp):
// column block c at B + (c / (NB W)) b_panel, its rows ldb = NB W apart, so that a block's K rows
// are one run of memory. A row-major B of 256 columns puts those rows 1 KiB apart, on a quarter
// of a 48 KiB 12-way L1's sets, and the block's 16 KiB of B then misses L1 as it is reread.
#pragma once

#include <array>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "flashdemo/fast/level_namespace.hpp"
#include "flashdemo/params.hpp"

namespace fd::fast {
inline namespace FD_FAST_LEVEL {

#if defined(__AVX512F__)
constexpr int kSimdBytes = 64, kBlockRows = 6, kBlockVectors = 4;
#elif defined(__AVX__)
constexpr int kSimdBytes = 32, kBlockRows = 6, kBlockVectors = 2;
#else
constexpr int kSimdBytes = 16, kBlockRows = 6, kBlockVectors = 2;
#endif

template <class T>
struct Simd {
  static constexpr index_t W = kSimdBytes / index_t(sizeof(T));  // lanes per vector
  typedef T V __attribute__((vector_size(kSimdBytes)));
  static V load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, const V& v) { std::memcpy(p, &v, sizeof v); }
};

// n rounded up to a whole number of vectors.
template <class T>
constexpr index_t padded(index_t n) {
  return (n + Simd<T>::W - 1) / Simd<T>::W * Simd<T>::W;
}

struct Strides {
  index_t a_row, a_inner, ldb, ldc;
  index_t b_panel = 0;  // entries from one panel of B to the next; 0: B row-major
};

// acc + b a, each lane rounded once, as every path's products round (fmadd, host_device/base.hpp).
// Where the level has FMA instructions, one a vector (the compiler fuses the expression: the
// kernels compile with -ffp-contract=fast, and at -O2 or more, which CMakeLists.txt keeps in a
// Debug build: below it neither g++ 12 nor clang 14 fuses). Where it has none (x86-64 and
// x86-64-v2: CPUs without FMA or without the rest of v3): floats in double, where a float
// product is exact and the sum rounds once before the rounding to float (the fused result but
// where the first rounding lands on a tie of floats: at most about one sum in 2^30); doubles
// through fmadd lane by lane, the C library's fma (exact, slow). Rounded twice, the products cost
// the rule's margin at large scales: at scale 100 O came out at 2.7x the naive error.
template <class T, class V>
V multiply_add(V b, T a, V acc) {
#if defined(__FMA__) || defined(__FP_FAST_FMA) || defined(__aarch64__)
  return acc + b * a;
#else
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4 && sizeof(V) == 16) {  // 4 floats: two halves of 2 doubles
    const __m128 bf = (__m128)b, cf = (__m128)acc;
    const __m128d ad = _mm_set1_pd(double(a));
    const __m128d lo = _mm_add_pd(_mm_mul_pd(_mm_cvtps_pd(bf), ad), _mm_cvtps_pd(cf));
    const __m128d hi = _mm_add_pd(_mm_mul_pd(_mm_cvtps_pd(_mm_movehl_ps(bf, bf)), ad),
                                  _mm_cvtps_pd(_mm_movehl_ps(cf, cf)));
    return (V)_mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
  }
#endif
  for (index_t x = 0; x < Simd<T>::W; ++x) acc[x] = fmadd(b[x], a, acc[x]);
  return acc;
#endif
}

// One R x (NB W) block of C over the whole K.
template <class T, int R, int NB>
void product_block(index_t K, const T* A, const T* B, T* C, Strides s, bool accumulate) {
  using S = Simd<T>;
  typename S::V acc[R][NB];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < NB; ++c)
      acc[r][c] = accumulate ? S::load(C + r * s.ldc + c * S::W) : typename S::V{};
  for (index_t k = 0; k < K; ++k) {
    typename S::V b[NB];
#pragma GCC unroll 16
    for (int c = 0; c < NB; ++c) b[c] = S::load(B + k * s.ldb + c * S::W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const T a = A[r * s.a_row + k * s.a_inner];
#pragma GCC unroll 16
      for (int c = 0; c < NB; ++c) acc[r][c] = multiply_add<T>(b[c], a, acc[r][c]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < NB; ++c) S::store(C + r * s.ldc + c * S::W, acc[r][c]);
}

namespace detail {
template <class T>
using BlockFn = void (*)(index_t, const T*, const T*, T*, Strides, bool);

// table[r - 1][c - 1] = product_block<T, r, c>: the full block and every edge block.
template <class T, std::size_t... RC>
constexpr auto block_table(std::index_sequence<RC...>) {
  return std::array<BlockFn<T>, sizeof...(RC)>{
      &product_block<T, int(RC / kBlockVectors) + 1, int(RC % kBlockVectors) + 1>...};
}
}  // namespace detail

// The columns of one panel of B: the register block's width.
template <class T>
constexpr index_t kPanelColumns = kBlockVectors* Simd<T>::W;

// C (rows x N) = A B, or += with `accumulate`; N a multiple of Simd<T>::W.
template <class T>
void tile_product(index_t rows, index_t N, index_t K, const T* A, const T* B, T* C, Strides s,
                  bool accumulate) {
  static constexpr auto table =
      detail::block_table<T>(std::make_index_sequence<kBlockRows * kBlockVectors>());
  constexpr index_t W = Simd<T>::W, cols = kBlockVectors * W;
  // The rows in as few blocks as kBlockRows allows, their heights within one of each other: 128
  // rows are 18 blocks of 6 and 4 of 5, not 21 of 6 and one of 2 (a block of few rows does few
  // FMAs per load: 8 for 6 loads at 2 x 4 vectors, 20 for 9 at 5 x 4, 24 for 10 at 6 x 4).
  const index_t blocks = (rows + kBlockRows - 1) / kBlockRows, base = blocks ? rows / blocks : 0,
                taller = blocks ? rows % blocks : 0;  // the first `taller` blocks: base + 1 rows
  // A column block of B is reused over the rows (from L1 where its K x cols fits).
  for (index_t c0 = 0; c0 < N; c0 += cols) {
    const index_t nb = (N - c0 < cols ? N - c0 : cols) / W;
    for (index_t b = 0, r0 = 0; b < blocks; ++b) {
      const index_t nr = base + (b < taller ? 1 : 0);
      table[std::size_t((nr - 1) * kBlockVectors + nb - 1)](
          K, A + r0 * s.a_row, s.b_panel ? B + c0 / cols * s.b_panel : B + c0, C + r0 * s.ldc + c0,
          s, accumulate);
      r0 += nr;
    }
  }
}

}  // namespace FD_FAST_LEVEL
}  // namespace fd::fast
