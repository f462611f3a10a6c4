// hopper_ptx.cuh — the sm_90a instructions of the rung `hopper` (hopper.cuh), one wrapper each:
//   mbarrier   a 64-bit barrier in shared memory that counts arrivals and transaction bytes:
//              TMA copies complete on it (complete_tx), consumers wait on its phase parity
//   TMA        cp.async.bulk.tensor.3d: one box of a tensor (described by a CUtensorMap made on
//              the host) into shared memory, 128-byte swizzled, rows past the tensor zero-filled
//   wgmma      warpgroup MMA, asynchronous: D (64 x N, fp32) += A B with A from shared memory
//              or registers and B from shared memory, each operand in shared memory named by a
//              64-bit descriptor (address, strides, swizzle); fence, commit and wait order them;
//              Operand: a tile's descriptor built once, moved along the tile by one add
//   setmaxnreg moves registers between warpgroups (the copy warpgroup needs few)
//   bar.sync / bar.arrive on named barriers: two consumer warpgroups take turns at the tensor
//              cores
// Shared-memory tiles are rows of 64 elements (128 bytes), 16-byte chunk c of row r stored at
// c ^ (r % 8) (TMA's 128-byte swizzle; wgmma's layout type 1 reads the same); 8 rows form a
// 1024-byte atom, and a tile of d = 128 is two such column halves, one after the other.
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: the driver is reached through the runtime)

#include <cstdint>
#include <type_traits>

#include "cuda/primitives/ptx.cuh"

namespace fd::cuda::hopper_ptx {

// The first 1024-byte aligned address at or after p: where 128-byte swizzled tiles may start (the
// swizzle is a function of the address bits), for the dynamic shared memory a kernel lays out.
// p plus a padding, not an integer made into a pointer: the compiler then still knows the result
// is shared memory and reads and writes it with LDS/STS, not generic LD/ST (slower, and accesses
// that compute-sanitizer's racecheck cannot pair with the barriers).
// The padding, (1024 - address % 1024) % 1024, is 0 .. 1008 bytes (the base is 16-byte aligned):
// the + 1024 of the kernels' shared-memory sizes.
__device__ inline unsigned char* aligned_1024(unsigned char* p) {
  return p + ((1024u - (ptx::smem_address(p) & 1023u)) & 1023u);
}

// The warpgroup (4 warps, 128 threads) this thread is in, as a value the compiler knows to be the
// same in every lane of a warp: lane 0's, by a shuffle. threadIdx.x / 128 is that value too, but
// the compiler cannot prove it, so code that branches on it counts as divergent: the branch's
// warp-wide instructions (wgmma, barriers) get WARPSYNCs, and values derived from it (the
// warpgroup's shared-memory offsets, its rows) live in per-thread registers, computed by IMAD (on
// the FMA pipe), IADD3 and LOP3 and copied to uniform registers (R2UR) before each wgmma
// descriptor uses them, where the uniform datapath computes them once a warp (ncu's counts and
// the forward's and backward's timings with each: docs/gpu-ladder.md). Call it where the whole
// warp runs (a full-mask shuffle).
__device__ inline int warpgroup_index() {
  return __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);
}

// count: the arrivals that complete a phase; a phase completes when they have all arrived and the
// transaction bytes announced by arrive.expect_tx have all landed. The barrier starts in phase 0.
__device__ inline void mbarrier_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(ptx::smem_address(bar)),
               "r"(count));
}

// The barrier initializations visible to the copy engine (the async proxy) and other threads.
__device__ inline void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also expects `bytes` of transactions (the copies about to be issued).
__device__ inline void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(ptx::smem_address(bar)),
      "r"(bytes)
      : "memory");
}

__device__ inline void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(ptx::smem_address(bar))
               : "memory");
}

// Waits until the barrier's phase with this parity has completed. Phases count 0, 1, 2, .. from
// init, parity = phase & 1. try_wait.parity answers only for the current phase (false: not yet
// complete) and the one just before it (true) (PTX ISA, mbarrier.test_wait / mbarrier.try_wait),
// so a waiter must never fall two phases behind: hopper.cuh's full/empty pairs see to that, and
// derive the parity there ((u / kStages) & 1).
__device__ inline void mbarrier_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(ptx::smem_address(bar)),
      "r"(parity)
      : "memory");
}

// Box (x, y, z) of the tensor map into shared memory at dst, completing on bar.
__device__ inline void tma_load_3d(void* dst, const CUtensorMap* map, int x, int y, int z,
                                   std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(ptx::smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(ptx::smem_address(bar))
      : "memory");
}

// bytes (a multiple of 16, both addresses 16-byte aligned) from global memory into shared
// memory at dst, completing on bar: a one-dimensional bulk copy, no tensor map.
__device__ inline void bulk_load(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(ptx::smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(src)), "r"(bytes), "r"(ptx::smem_address(bar))
      : "memory");
}

// Makes this thread's ordinary writes to shared memory visible to the async proxy (wgmma and
// TMA read through it): after the writes, before the barrier that lets them be read.
__device__ inline void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Adds the box at (x, y, z) of the tensor map (at (x, y, z, w): the 4d form), read from shared
// memory at src, into global memory (fp32 add, done by the copy engine; elements past the tensor
// are left alone), as one bulk group: commit, then wait before src is written again.
__device__ inline void tma_reduce_add_3d(const CUtensorMap* map, int x, int y, int z,
                                         const void* src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group"
      " [%0, {%1, %2, %3}], [%4];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
      "r"(x), "r"(y), "r"(z), "r"(ptx::smem_address(src))
      : "memory");
}
// Writes the box at (x, y, z) of the tensor map from shared memory at src to global memory
// (elements past the tensor are not written), as one bulk group: commit, then wait for its read
// before src is written again, and for its end before the block exits.
__device__ inline void tma_store_3d(const CUtensorMap* map, int x, int y, int z, const void* src) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group"
      " [%0, {%1, %2, %3}], [%4];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
      "r"(x), "r"(y), "r"(z), "r"(ptx::smem_address(src))
      : "memory");
}
__device__ inline void tma_reduce_add_4d(const CUtensorMap* map, int x, int y, int z, int w,
                                         const void* src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group"
      " [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
      "r"(x), "r"(y), "r"(z), "r"(w), "r"(ptx::smem_address(src))
      : "memory");
}
__device__ inline void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until at most N bulk groups of this thread are still reading their shared memory.
template <int N>
__device__ inline void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until at most N bulk groups of this thread are still incomplete.
template <int N>
__device__ inline void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// The box of map at (x, y, z) into L2 only (no shared memory, no barrier): a hint that the
// next copy of that box will find it there (boxes past the tensor are clipped, as a load's).
__device__ inline void tma_prefetch_l2_3d(const CUtensorMap* map, int x, int y, int z) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(x), "r"(y), "r"(z)
               : "memory");
}

__device__ inline void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// A wgmma operand in shared memory as its 64-bit matrix descriptor (PTX ISA, "Matrix Descriptor
// Format" of wgmma), each byte value x stored as (x & 0x3FFFF) >> 4 (16-byte units):
//   bits  0-13  start address >> 4 (shared addresses are below 256 KiB: 18 bits)
//   bits 16-29  leading byte offset (LBO) >> 4
//   bits 32-45  stride byte offset (SBO) >> 4
//   bits 49-51  base offset, 0: the swizzle pattern of every tile starts at a 1024-byte boundary
//               (aligned_1024), and the start addresses inside one (k steps of 32 bytes, or the
//               64 bytes to a column half of an MN-major operand, wgmma_ss_tt_n32) stay in its
//               first 128-byte row, so (address >> 7) & 7 is 0 as well
//   bits 62-63  layout type, 1 = 128-byte swizzle (0 none, 2 64-byte, 3 32-byte)
// LBO and SBO mean different things by the operand's major-ness (PTX ISA, "Leading Dimension Byte
// Offset", "Stride Dimension Byte Offset"); for these tiles of 128-byte rows (64 elements):
//   K-major (imm-trans 0: Q and K of S = Q K^T)  SBO = from one 8-row group to the next, 8 x 128
//     = 1024. LBO is not used with a swizzle ("assumed to be 1"): a k16 step reads 32 bytes of
//     each row, inside one 64-column block; callers pass 16, which encodes as that 1
//   MN-major (imm-trans 1: V of O += P V)  SBO = from one group of 8 k rows to the next, again
//     1024; LBO = from one 64-element column block (along N, or M) to the next: a tile's two
//     halves, rows x 128 bytes apart, read only when the operand spans more than 64 columns
__device__ inline std::uint64_t smem_descriptor(const void* p, unsigned leading_bytes,
                                                unsigned stride_bytes) {
  return std::uint64_t((ptx::smem_address(p) & 0x3FFFF) >> 4) |
         std::uint64_t((leading_bytes >> 4) & 0x3FFF) << 16 |
         std::uint64_t((stride_bytes >> 4) & 0x3FFF) << 32 | std::uint64_t(1) << 62;
}

// An operand tile's descriptor built once, then moved along the tile: adding bytes / 16 to the
// start-address field (bits 0-13) gives the descriptor of the address `bytes` further on, as long
// as it stays below 256 KiB (no carry leaves the field). Built outside the loops, each wgmma's
// descriptor then costs one add instead of smem_descriptor's masks and shifts (in the backward,
// about 12 instructions a wgmma, 20 wgmma a step at d = 64).
template <class E>
struct Operand {
  std::uint64_t desc;
  // The descriptor `elements` further on (a multiple of 8: whole 16-byte units).
  __device__ std::uint64_t at(int elements) const {
    return desc + std::uint64_t(unsigned(elements) * unsigned(sizeof(E)) / 16u);
  }
  __device__ Operand plus(int elements) const { return Operand{at(elements)}; }
};
// The two kinds of operand tile the kernels read (smem_descriptor's comment): K-major (the
// leading offset unused: 16, which encodes as 1) and MN-major, read transposed (the leading
// offset from one 64-column half to the next: rows x 128 bytes); 8-row atoms 1024 bytes apart.
template <class E>
__device__ inline Operand<E> k_major(const E* p) {
  return Operand<E>{smem_descriptor(p, 16, 1024)};
}
template <class E>
__device__ inline Operand<E> mn_major(const E* p, int rows) {
  return Operand<E>{smem_descriptor(p, unsigned(rows) * 128u, 1024)};
}

__device__ inline void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ inline void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of x across an asynchronous wgmma's issue or
// wait (it cannot see that the tensor cores own the register meanwhile).
template <int N>
__device__ inline void fence_operands(float (&x)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(x[i][e])::"memory");
}
template <int N>
__device__ inline void fence_operands(std::uint32_t (&x)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(x[i][e])::"memory");
}

// setmaxnreg: the warpgroup's registers per thread become kRegisters, a multiple of 8 in 24 .. 256
// (PTX ISA, setmaxnreg; a warp's registers come 8 per thread at a time, the same step that rounds
// a kernel's count). .dec gives registers back to the block's pool, .inc waits until the pool has
// enough. All 4 warps of a warpgroup execute it, from the count the kernel was compiled with.
template <int kRegisters>
__device__ inline void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ inline void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// Barrier id (0 is __syncthreads') completes when `threads` (a multiple of 32) have arrived or
// synced on it; bar.arrive does not wait.
__device__ inline void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The wgmma wrappers: one asm statement per shape, its element type spliced into the string
// (T: "bf16" or "f16"). The accumulator d (N / 8 fragments of 4) is the asm's first N / 2
// operands, read and written ("+f"), named %0 .. %(N / 2 - 1) in the instruction.
#define FD_ACC4(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define FD_ACC16 FD_ACC4(0), FD_ACC4(1), FD_ACC4(2), FD_ACC4(3)
#define FD_ACC32 \
  FD_ACC4(0), FD_ACC4(1), FD_ACC4(2), FD_ACC4(3), FD_ACC4(4), FD_ACC4(5), FD_ACC4(6), FD_ACC4(7)
#define FD_ACC64                                                                        \
  FD_ACC32, FD_ACC4(8), FD_ACC4(9), FD_ACC4(10), FD_ACC4(11), FD_ACC4(12), FD_ACC4(13), \
      FD_ACC4(14), FD_ACC4(15)
#define FD_ACC128                                                                                \
  FD_ACC64, FD_ACC4(16), FD_ACC4(17), FD_ACC4(18), FD_ACC4(19), FD_ACC4(20), FD_ACC4(21),        \
      FD_ACC4(22), FD_ACC4(23), FD_ACC4(24), FD_ACC4(25), FD_ACC4(26), FD_ACC4(27), FD_ACC4(28), \
      FD_ACC4(29), FD_ACC4(30), FD_ACC4(31)
#define FD_ACC88 \
  FD_ACC64, FD_ACC4(16), FD_ACC4(17), FD_ACC4(18), FD_ACC4(19), FD_ACC4(20), FD_ACC4(21)
#define FD_REGS88                                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
  "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "  \
  "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}"
#define FD_REGS16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define FD_REGS32                                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FD_REGS64                                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, "                                                                                       \
  "%39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, "  \
  "%57, "                                                                                       \
  "%58, %59, %60, %61, %62, %63}"
#define FD_REGS128                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "  \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "  \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "  \
  "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "  \
  "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "    \
  "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, "   \
  "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// A and B from shared memory (descriptors %A, %B), accumulate = scale-d (%ONE), each operand
// K-major (TA, TB = "0") or transposed, MN-major ("1"). After d, a-desc and b-desc the instruction
// takes (PTX ISA, wgmma.mma_async):
//   scale-d      predicate p = (accumulate != 0): true D = A B + D, false D = A B
//   imm-scale-a  1 (-1 would negate A)
//   imm-scale-b  1 (-1 would negate B)
//   imm-trans-a  TA: 0 A K-major, 1 A M-major (the transpose: .f16/.bf16, shared memory only)
//   imm-trans-b  TB: 0 B K-major, 1 B N-major
// Operand numbers: the N / 2 accumulators %0 .. %(N / 2 - 1), then a, b, accumulate: "64", "65",
// "66" at n128, "32", "33", "34" at n64, "16", "17", "18" at n32.
#define FD_WGMMA_SS(N, REGS, ACC, A, B, ONE, T, TA, TB)                                          \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" ONE                                          \
               ", 0;\n"                                                                          \
               "wgmma.mma_async.sync.aligned.m64n" N "k16.f32." T "." T " " REGS ", %" A ", %" B \
               ", p, 1, 1, " TA ", " TB ";\n}\n"                                                 \
               : ACC                                                                             \
               : "l"(a), "l"(b), "r"(accumulate))
// P V: A from four registers, B from shared memory (transposed: N-major), always accumulating.
// ", p, 1, 1, 1": scale-d p (set from "r"(1): D = A B + D), imm-scale-a 1, imm-scale-b 1,
// imm-trans-b 1 (B N-major); no imm-trans-a, A being in registers. Operands after the N / 2
// accumulators: a[0..3] (%32-%35 at n64, %64-%67 at n128), b (%36, %68), the 1 (%37, %69).
#define FD_WGMMA_RS(N, REGS, ACC, A0, B, ONE, T)                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" ONE                                    \
               ", 0;\n"                                                                    \
               "wgmma.mma_async.sync.aligned.m64n" N "k16.f32." T "." T " " REGS ", {%" A0 \
               "}, %" B ", p, 1, 1, 1;\n}\n"                                               \
               : ACC                                                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))

// A from four registers, B K-major in shared memory (imm-trans-b 0), accumulate = scale-d as in
// FD_WGMMA_SS: operands after the N / 2 accumulators a[0..3], b, accumulate.
#define FD_WGMMA_RS_K(N, REGS, ACC, A0, B, ONE, T)                                         \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" ONE                                    \
               ", 0;\n"                                                                    \
               "wgmma.mma_async.sync.aligned.m64n" N "k16.f32." T "." T " " REGS ", {%" A0 \
               "}, %" B ", p, 1, 1, 0;\n}\n"                                               \
               : ACC                                                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate))

// D (64 x 128, fp32) = A B^T, + D when accumulate: A (64 x 16) and B (N x 16) K-major in
// shared memory, each named by its descriptor.
template <class E>
__device__ inline void wgmma_ss_n128(float (&d)[128 / 8][4], std::uint64_t a, std::uint64_t b,
                                     int accumulate) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_SS("128", FD_REGS64, FD_ACC64, "64", "65", "66", "f16", "0", "0");
  else
    FD_WGMMA_SS("128", FD_REGS64, FD_ACC64, "64", "65", "66", "bf16", "0", "0");
}
// n176: Bc = 176 at d = 128 (the step fwd_bc176, FlashAttention-3's key tile there): the 88
// accumulators %0 .. %87, then a, b, accumulate %88, %89, %90.
template <class E>
__device__ inline void wgmma_ss_n176(float (&d)[176 / 8][4], std::uint64_t a, std::uint64_t b,
                                     int accumulate) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_SS("176", FD_REGS88, FD_ACC88, "88", "89", "90", "f16", "0", "0");
  else
    FD_WGMMA_SS("176", FD_REGS88, FD_ACC88, "88", "89", "90", "bf16", "0", "0");
}
template <class E>
__device__ inline void wgmma_ss_n64(float (&d)[64 / 8][4], std::uint64_t a, std::uint64_t b,
                                    int accumulate) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_SS("64", FD_REGS32, FD_ACC32, "32", "33", "34", "f16", "0", "0");
  else
    FD_WGMMA_SS("64", FD_REGS32, FD_ACC32, "32", "33", "34", "bf16", "0", "0");
}
// D (64 x N, fp32) = A B (+ D when accumulate) with both operands MN-major in shared memory
// (read transposed): A's rows are its k index (64 m contiguous), B's rows too (N contiguous).
template <class E>
__device__ inline void wgmma_ss_tt_n64(float (&d)[64 / 8][4], std::uint64_t a, std::uint64_t b,
                                       int accumulate) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_SS("64", FD_REGS32, FD_ACC32, "32", "33", "34", "f16", "1", "1");
  else
    FD_WGMMA_SS("64", FD_REGS32, FD_ACC32, "32", "33", "34", "bf16", "1", "1");
}
// The same at n32 (dQ's column halves at d = 64): B's 32 columns may start half-way into a
// 128-byte swizzled row (its descriptor 64 bytes on), as a K-major operand's k steps do.
template <class E>
__device__ inline void wgmma_ss_tt_n32(float (&d)[32 / 8][4], std::uint64_t a, std::uint64_t b,
                                       int accumulate) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_SS("32", FD_REGS16, FD_ACC16, "16", "17", "18", "f16", "1", "1");
  else
    FD_WGMMA_SS("32", FD_REGS16, FD_ACC16, "16", "17", "18", "bf16", "1", "1");
}
// D (64 x N, fp32) += A B: A (64 x 16) in registers (mma.sync's A fragments, warp by warp),
// B (16 x N) N-major in shared memory (read transposed), named by its descriptor.
template <class E>
__device__ inline void wgmma_rs_n64(float (&d)[64 / 8][4], const std::uint32_t (&a)[4],
                                    std::uint64_t b) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_RS("64", FD_REGS32, FD_ACC32, "32, %33, %34, %35", "36", "37", "f16");
  else
    FD_WGMMA_RS("64", FD_REGS32, FD_ACC32, "32, %33, %34, %35", "36", "37", "bf16");
}
template <class E>
__device__ inline void wgmma_rs_n128(float (&d)[128 / 8][4], const std::uint32_t (&a)[4],
                                     std::uint64_t b) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_RS("128", FD_REGS64, FD_ACC64, "64, %65, %66, %67", "68", "69", "f16");
  else
    FD_WGMMA_RS("128", FD_REGS64, FD_ACC64, "64, %65, %66, %67", "68", "69", "bf16");
}
// n256 (O += P V at d = 256): the 128 accumulators %0 .. %127, a[0..3] %128 .. %131, b %132, the 1
// %133. V's four 64-column chunks are the descriptor's leading offset apart.
template <class E>
__device__ inline void wgmma_rs_n256(float (&d)[256 / 8][4], const std::uint32_t (&a)[4],
                                     std::uint64_t b) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_RS("256", FD_REGS128, FD_ACC128, "128, %129, %130, %131", "132", "133", "f16");
  else
    FD_WGMMA_RS("256", FD_REGS128, FD_ACC128, "128, %129, %130, %131", "132", "133", "bf16");
}

// D (64 x 64) = A B^T, + D when accumulate: A (64 x 16) in registers (mma.sync's A fragments,
// warp by warp), B (64 x 16) K-major in shared memory.
template <class E>
__device__ inline void wgmma_rs_k_n64(float (&d)[64 / 8][4], const std::uint32_t (&a)[4],
                                      std::uint64_t b, int accumulate) {
  if constexpr (std::is_same_v<E, __half>)
    FD_WGMMA_RS_K("64", FD_REGS32, FD_ACC32, "32, %33, %34, %35", "36", "37", "f16");
  else
    FD_WGMMA_RS_K("64", FD_REGS32, FD_ACC32, "32, %33, %34, %35", "36", "37", "bf16");
}

// D (64 x N) = A B^T for N = 64, 128 or 176, both K-major in shared memory; or, kTransposed, D = A
// B for N = 32 or 64, both MN-major (read transposed).
template <class E, int N, bool kTransposed = false>
__device__ inline void wgmma_ss(float (&d)[N / 8][4], std::uint64_t a, std::uint64_t b,
                                int accumulate) {
  if constexpr (kTransposed) {
    static_assert(N == 32 || N == 64, "wgmma_ss transposed: n32 or n64");
    if constexpr (N == 64)
      wgmma_ss_tt_n64<E>(d, a, b, accumulate);
    else
      wgmma_ss_tt_n32<E>(d, a, b, accumulate);
  } else {
    static_assert(N == 64 || N == 128 || N == 176, "wgmma_ss: n64, n128 or n176");
    if constexpr (N == 176)
      wgmma_ss_n176<E>(d, a, b, accumulate);
    else if constexpr (N == 128)
      wgmma_ss_n128<E>(d, a, b, accumulate);
    else
      wgmma_ss_n64<E>(d, a, b, accumulate);
  }
}
// D (64 x N) += A B for N = 64, 128 or 256, A from registers, B MN-major in shared memory.
template <class E, int N>
__device__ inline void wgmma_rs(float (&d)[N / 8][4], const std::uint32_t (&a)[4],
                                std::uint64_t b) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_rs: n64, n128 or n256");
  if constexpr (N == 256)
    wgmma_rs_n256<E>(d, a, b);
  else if constexpr (N == 128)
    wgmma_rs_n128<E>(d, a, b);
  else
    wgmma_rs_n64<E>(d, a, b);
}

#undef FD_WGMMA_RS_K
#undef FD_WGMMA_RS
#undef FD_WGMMA_SS
#undef FD_REGS128
#undef FD_REGS88
#undef FD_REGS64
#undef FD_REGS32
#undef FD_REGS16
#undef FD_ACC128
#undef FD_ACC88
#undef FD_ACC64
#undef FD_ACC32
#undef FD_ACC16
#undef FD_ACC4

}  // namespace fd::cuda::hopper_ptx
