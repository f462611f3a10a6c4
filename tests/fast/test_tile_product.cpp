// test_tile_product.cpp — the register-blocked product against a double triple loop, in the
// build of every x86-64 level this CPU runs (through its kernels' table, kernels.hpp): every edge
// block (rows and vectors short of a full block), both strides of A (A and A^T), C = and +=; and B
// in panels of the block's width (the K^T packs' layout) giving the row-major B's bits.
// And every level rounds each term once: the bits of a scalar loop of fmadd.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "flashdemo/fast/levels.hpp"
#include "flashdemo/io/random.hpp"

using namespace fd;
namespace {

template <class T>
void check_products(const fast::Kernels& kernels) {
  const index_t W = kernels.simd_bytes / index_t(sizeof(T));
  TorchGenerator gen(9);
  // 1 to 6 rows: each block height alone; 7, 13, 31, 128: the rows split into blocks of heights
  // within one of each other (4 + 3; 5 + 4 + 4; 6 + 5 x 5; 18 x 6 + 4 x 5)
  for (index_t rows : {1, 2, 3, 4, 5, 6, 7, 13, 31, 128})
    for (index_t N : {W, 2 * W, 3 * W, 4 * W, 5 * W, 9 * W, 17 * W})
      for (index_t K : {1, 3, 64, 70})
        for (bool transposed : {false, true})
          for (bool accumulate : {false, true}) {
            INFO("rows=" << rows << " N=" << N << " K=" << K << " transposed=" << transposed
                         << " accumulate=" << accumulate);
            const auto a = gen.randn(rows * K), b = gen.randn(K * N), c = gen.randn(rows * N);
            const std::vector<T> A(a.begin(), a.end()), B(b.begin(), b.end());
            std::vector<T> C(c.begin(), c.end());
            // A stored as rows x K, or as K x rows (its transpose) read through the strides.
            std::vector<T> At(A.size());
            for (index_t r = 0; r < rows; ++r)
              for (index_t k = 0; k < K; ++k)
                At[std::size_t(k * rows + r)] = A[std::size_t(r * K + k)];
            std::vector<T> Cp = C;  // the same product from B in panels, below
            kernels.of<T>().product(rows, N, K, transposed ? At.data() : A.data(),
                                    transposed ? 1 : K, transposed ? rows : 1, B.data(), N, 0,
                                    C.data(), N, accumulate);
            // B in panels of P columns, K x P each (the last one part filled): column x, row k
            // at (x / P) K P + k P + x % P
            const index_t P = kernels.block_vectors * W;
            std::vector<T> Bp(std::size_t((N + P - 1) / P * K * P), T(0));
            for (index_t k = 0; k < K; ++k)
              for (index_t x = 0; x < N; ++x)
                Bp[std::size_t(x / P * K * P + k * P + x % P)] = B[std::size_t(k * N + x)];
            kernels.of<T>().product(rows, N, K, transposed ? At.data() : A.data(),
                                    transposed ? 1 : K, transposed ? rows : 1, Bp.data(), P, K * P,
                                    Cp.data(), N, accumulate);
            CHECK(std::memcmp(Cp.data(), C.data(), C.size() * sizeof(T)) == 0);
            double worst = 0;
            for (index_t r = 0; r < rows; ++r)
              for (index_t x = 0; x < N; ++x) {
                const double c0 = accumulate ? double(T(c[std::size_t(r * N + x)])) : 0.0;
                double want = c0, mag = std::abs(c0);  // every term of the sum counts
                for (index_t k = 0; k < K; ++k) {
                  const double term =
                      double(A[std::size_t(r * K + k)]) * double(B[std::size_t(k * N + x)]);
                  want += term, mag += std::abs(term);
                }
                // fp32 or fp64 sums of K terms: K unit roundoffs of the magnitude at most.
                const double eps = sizeof(T) == 4 ? 6e-8 : 1.2e-16;
                worst = std::max(worst, std::abs(double(C[std::size_t(r * N + x)]) - want) /
                                            ((double(K) + 2) * eps * (mag + 1)));
              }
            CHECK(worst <= 1.0);
          }
}

// Each entry as a scalar loop of fmadd (one rounding a term, k ascending) computes it: the products
// of every level round as every other path's do, with FMA instructions or without (x86-64 and
// x86-64-v2: floats in double, doubles through the C library's fma).
template <class T>
void check_fused(const fast::Kernels& kernels) {
  const index_t W = kernels.simd_bytes / index_t(sizeof(T));
  TorchGenerator gen(10);
  for (index_t rows : {1, 6, 13})
    for (index_t K : {1, 64, 129}) {
      const index_t N = 3 * W;
      INFO("rows=" << rows << " K=" << K);
      const auto a = gen.randn(rows * K), b = gen.randn(K * N), c = gen.randn(rows * N);
      const std::vector<T> A(a.begin(), a.end()), B(b.begin(), b.end());
      std::vector<T> C(c.begin(), c.end()), want = C;
      kernels.of<T>().product(rows, N, K, A.data(), K, 1, B.data(), N, 0, C.data(), N, true);
      for (index_t r = 0; r < rows; ++r)
        for (index_t x = 0; x < N; ++x) {
          T& w = want[std::size_t(r * N + x)];
          for (index_t k = 0; k < K; ++k)
            w = fmadd(A[std::size_t(r * K + k)], B[std::size_t(k * N + x)], w);
        }
      CHECK(std::memcmp(C.data(), want.data(), C.size() * sizeof(T)) == 0);
    }
}

}  // namespace

TEST_CASE_TEMPLATE("tile_product rounds once a term at every level (the bits of fmadd)", T, float,
                   double) {
  for (const fast::Level* l : fast::levels_here()) {
    INFO("kernels: " << std::string(l->name) << " (" << std::string(l->kernels->isa) << ")");
    check_fused<T>(*l->kernels);
  }
}

TEST_CASE_TEMPLATE("tile_product matches the definition", T, float, double) {
  for (const fast::Level* l : fast::levels_here()) {
    INFO("kernels: " << std::string(l->name) << " (" << std::string(l->kernels->isa) << ")");
    check_products<T>(*l->kernels);
  }
}
