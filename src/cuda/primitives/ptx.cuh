// ptx.cuh — the few PTX instructions the tensor-core rungs are built from, one wrapper each.
//
//   mma.sync.m16n8k16   C(16x8, fp32) += A(16x16, bf16|fp16, row) B(16x8, col), one warp.
//     lane = 4 g + t (g = lane / 4, t = lane % 4) holds
//       A: a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
//       B: b0 = B[2t..2t+1][g],  b1 = B[2t+8..2t+9][g]      (pairs along k, one register each)
//       C: c0, c1 = C[g][2t..2t+1],  c2, c3 = C[g+8][2t..2t+1]
//   ldmatrix.x4         four 8x8 b16 matrices from shared memory; lanes 8q .. 8q+7 give the row
//                       addresses of matrix q, and each lane receives row g, columns 2t, 2t+1 of
//                       every matrix (.trans: column g, rows 2t, 2t+1 — the transpose).
//   ex2.approx.ftz     2^x in one MUFU instruction (relative error below 2^-22; subnormal results
//                       flushed to 0): ample where P is rounded to bf16 or fp16 next.
//   cp.async.cg 16 B    global -> shared without passing through registers, completing in
//                       commit groups; src_size 0 fills the 16 bytes with zeros (ragged tiles).
//   ld.global.nc.L1::no_allocate.v4   16 bytes of data read once (the decode's K and V): through
//                       the read-only path, without taking a line of L1 that nothing will reuse.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace fd::cuda::ptx {

__device__ inline std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// C += A B for one m16n8k16 tile, in the element type E (__nv_bfloat16 or __half).
template <class E>
__device__ inline void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                 std::uint32_t b1) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to nearest (even) into one register of E: lo in the low half.
template <class E>
__device__ inline std::uint32_t pack2(float lo, float hi) {
  std::uint32_t r;
  if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&r, &v, 4);
  }
  return r;
}

__device__ inline float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ inline void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}

__device__ inline void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ inline uint4 load_stream_16(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

}  // namespace fd::cuda::ptx
