// kernels.hpp — one build of the fast path's kernels for one x86-64 level, as a table:
//   forward, backward and gemm (fast_attention.hpp's equations) for float and double, and the
//   vector unit they were compiled for (W = simd_bytes / sizeof(T) lanes, an R x NB block).
//
// fast_attention.cpp is compiled once per level (CMake's FLASHDEMO_FAST_LEVELS: -march=x86-64,
// x86-64-v2, x86-64-v3 with AVX2 and FMA, x86-64-v4 with AVX-512), each time in an inline
// namespace of its own (FD_FAST_LEVEL, level_namespace.hpp) that holds its table `kernels`;
// levels.cpp picks the table the CPU can run (levels.hpp). The rest of the binary keeps the
// build's -march.
#pragma once

#include "flashdemo/fast/fast_attention.hpp"

namespace fd::fast {

template <class T>
struct KernelsOf {
  void (*forward)(const Shape&, const AttnParams&, const Options&, const T* Q, const T* K,
                  const T* V, T* O, T* L, T* L_lo);
  void (*backward)(const Shape&, const AttnParams&, const Options&, const T* Q, const T* K,
                   const T* V, const T* O, const T* L, const T* L_lo, const T* dO, T* dQ, T* dK,
                   T* dV, T* D);
  void (*gemm)(index_t rows, index_t inner, index_t cols, const T* A, const T* B, T* C,
               index_t threads);
  // tile_product.hpp's C = A B (or +=), A(r, k) = A[r a_row + k a_inner], B row-major (b_panel
  // 0) or in panels of block_vectors vectors b_panel entries apart, for its tests
  void (*product)(index_t rows, index_t N, index_t K, const T* A, index_t a_row, index_t a_inner,
                  const T* B, index_t ldb, index_t b_panel, T* C, index_t ldc, bool accumulate);
};

struct Kernels {
  const char* isa;    // the vector instructions it uses: "AVX-512", "AVX2, FMA", "SSE2", ...
  int simd_bytes;     // one vector register
  int block_rows;     // R of the register block (tile_product.hpp)
  int block_vectors;  // NB of the register block
  KernelsOf<float> f32;
  KernelsOf<double> f64;
  // vector_exp.hpp's exp on count floats (a whole number of vectors), for its tests
  void (*exp_floats)(const float* x, float* out, index_t count);

  template <class T>
  const KernelsOf<T>& of() const {
    if constexpr (sizeof(T) == sizeof(float))
      return f32;
    else
      return f64;
  }
};

}  // namespace fd::fast
