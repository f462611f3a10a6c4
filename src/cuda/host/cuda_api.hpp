// cuda_api.hpp — the GPU paths as the rest of flashdemo sees them: plain host pointers, no CUDA
// headers, so the tool builds the same with CUDA or without it (then every call says so).
//
// Layout of every array: (b, h, rows, d) row-major, one head after another; L and D: (b, h, n).
// The kernels compute exactly the tiled algorithms of flash_forward.hpp and flash_backward.hpp,
// with the same tile math (tile_math.hpp, online_softmax.hpp, mask.hpp), on the device.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/impl.hpp"
#include "flashdemo/params.hpp"
#include "flashdemo/teaching/trace.hpp"
#include "flashdemo/teaching/variant.hpp"

namespace fd::cuda {

// A GPU problem or run that cannot happen (no GPU, no CUDA in this build, a CUDA error).
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Why no GPU answered, for the caller to say in its own words (GpuInfo::why says it in English).
enum class NoGpu { none, not_built, no_driver, no_device, cuda_error };

struct GpuInfo {
  bool built = false;     // compiled with CUDA
  bool present = false;   // a device answered
  std::string name, why;  // why: the reason when absent, in English (cuda_error: CUDA's text)
  NoGpu absent = NoGpu::none;
  int sms = 0, cc_major = 0, cc_minor = 0;
  std::size_t smem_per_block = 0, global_bytes = 0;
  std::string runtime_version, driver_version;  // driver_version empty: no driver
};

GpuInfo gpu_info();

struct Shape {
  index_t b = 1, h = 1, n = 1, m = 1, d = 1;
  index_t heads() const { return b * h; }
};

// What the forward kernel recorded for head 0 when asked: per computed tile, per row, the
// state before and after (the same numbers a CPU TileEvent carries).
struct KernelTrace {
  Tiling tiling;
  std::vector<char> computed;                  // Tr x Tc
  std::vector<double> m_old, m_new, alpha, l;  // Tr x Tc x Br each
  std::vector<double> final_m, final_l;        // n
};

// Replays a KernelTrace into a sink in the CPU path's order: i outer, j inner, a TileEvent per
// computed tile, a TileSkippedEvent per skipped one, a RowsFinalEvent per query tile.
void replay(const KernelTrace& trace, const Mask& mask, const std::vector<double>& L,
            TraceSink& sink);

enum class Pass { fwd, bwd };

// The tiles a GPU rung computes: teaching takes any (default_tiles when not told); simt, tc, mma
// and hopper have theirs fixed at compile time (hopper's forward 192 x 128 at d = 64, three
// consumer warpgroups, 128 x 128 at d = 128 and 128 x 64 at d = 256; its backward 128 x 128 at d =
// 64 and 64 x 128 at d = 128; mma's forward 128 x 64, its backward and the others 64 x 64), then
// capped at n and m as the CPU's are. Each rung's header checks its kernel's tiles against this
// (static_assert). On a given problem: problem_tiles, below.
constexpr TileSizes kernel_tiles(Impl impl, index_t d, Pass pass = Pass::fwd) {
  if (impl == Impl::hopper && pass == Pass::bwd) return TileSizes{d == 64 ? 128 : 64, 128};
  if (impl == Impl::hopper) return TileSizes{d == 64 ? 192 : 128, d == 256 ? 64 : 128};
  return impl == Impl::mma && pass == Pass::fwd ? TileSizes{128, 64} : TileSizes{64, 64};
}

// Whether hopper's forward at d has shared memory for the persistent grid's second Q buffer and
// for O's staging (d <= 128; at d = 256 one Q tile takes 64 KiB): else the ordinary grid, O from
// registers. hopper.cuh checks it against its shared-memory layout.
constexpr bool hopper_forward_room(index_t d) {
  return d <= 128;
}

// How much faster three consumer warpgroups (hopper's forward, Br = 192) compute a 128 x 128 tile
// product than two (Br = 128) at d = 64, both on the grid the rung picks: measured on the H200
// (docs/gpu-ladder.md) 1.16x to 1.21x at n = 16384 and 1.24x at n = 1024; taken as 1.2.
inline constexpr double kHopperThreeConsumerGain = 1.2;

// The tiles rung `impl` computes on a problem of n queries and m keys under `mask`: its
// kernel_tiles, but for hopper's forward at d = 64, Br = 192 only where it pays. Its rows are
// padded to whole tiles of 192 and its causal rows cross the diagonal in steps of 192, so it may
// compute more tile products than Br = 128 (counted here: rows x key tiles computed, padding
// included): at n = m = 1024, 1.13x not causal and 1.33x causal. Br = 192 where that ratio is at
// most the three consumers' gain, else 128 (two consumer warpgroups). The count is the blocks'
// (each tile's rows whole), not their warpgroups': those skip their padded rows and the tiles past
// their own rows' diagonal (hopper.cuh, kIdlePadding), yet Br = 192 everywhere lost where this
// rule takes 128 (on an H100, causal d = 64: 0.99x at n = 1024, 0.97x at 512, 0.72x at 256): a
// warpgroup left alone in its block's tile runs little faster than beside the others.
inline TileSizes problem_tiles(Impl impl, index_t n, index_t m, index_t d, const Mask& mask,
                               Pass pass = Pass::fwd) {
  const TileSizes t = kernel_tiles(impl, d, pass);
  if (impl != Impl::hopper || pass != Pass::fwd || t.Br != 192) return t;
  auto work = [&](index_t Br) {  // query rows computed x their key tiles
    const Tiling tiling{n, m, Br, t.Bc};
    double rows = 0.0;
    for (index_t i = 0; i < tiling.Tr(); ++i)
      rows += double(Br) * double(computed_key_tiles(tiling, mask, i));
    return rows;
  };
  return work(192) <= kHopperThreeConsumerGain * work(128) ? t : TileSizes{128, t.Bc};
}

// What a rung accepts, or why not: the reason (for the caller to say in its own words) and the
// same in English; why = none when the rung runs the case.
struct Refusal {
  enum class Why { none, cpu_only, needs_fp32, needs_bf16_fp16, d_unsupported, no_backward };
  Why why = Why::none;
  std::string english;
  std::vector<int> head_dims;  // d_unsupported: the d the kernels are compiled for
  explicit operator bool() const { return why != Why::none; }
};
// The backward runs on teaching, mma and hopper; simt and tc compute the forward only.
Refusal refuses(Impl impl, index_t d, Precision p_in, Pass pass = Pass::fwd);

// Forward on the GPU, host arrays in and out. L: b*h*n; L_lo (L's rounding error, when not
// null) likewise; the simt, tc and mma rungs write L_lo = 0. trace (head 0) when not null.
// tc and mma take bf16 or fp16 (variant.p_in): the host arrays hold values of that format, in T.
template <class T>
void forward(const Shape& s, const AttnParams& params, TileSizes tiles, Variant variant, Impl impl,
             const T* Q, const T* K, const T* V, T* O, T* L, T* L_lo = nullptr,
             KernelTrace* trace = nullptr);

// Backward on the GPU (FlashAttention-2): D = rowsum(dO * O), dK and dV per key tile, dQ
// through fp32 atomics or, with deterministic, in a separate pass over query tiles, bit-
// reproducible (teaching, mma and hopper; mma and hopper take bf16/fp16 in variant.p_in, its tiles
// fixed). L_lo may be null.
template <class T>
void backward(const Shape& s, const AttnParams& params, TileSizes tiles, Variant variant, Impl impl,
              bool deterministic, const T* Q, const T* K, const T* V, const T* O, const T* L,
              const T* L_lo, const T* dO, T* dQ, T* dK, T* dV, T* D);

// Timing on device-resident data: median/min/max milliseconds of `reps` runs after warm-up,
// with CUDA events, as triton.testing.do_bench times a call (L2 flushed before each run, the runs
// queued: time_events in device_memory.cuh). The inputs are the host arrays given (copied once).
struct Timing {
  std::vector<double> ms;
};
// impl: the rung timed (the backward: teaching, mma, hopper); variant.p_in: bf16/fp16 for tc and
// mma.
template <class T>
Timing time_kernels(const Shape& s, const AttnParams& params, TileSizes tiles, Variant variant,
                    Impl impl, Pass pass, bool deterministic, const T* Q, const T* K, const T* V,
                    const T* dO, int warmup, int reps);

// The bf16 GEMM ceiling: TFLOP/s of cuBLAS's bf16 GEMM (fp32 accumulation), n x n x n, median of
// reps after warm-up. cuBLAS is loaded at run time (dlopen), so the tool does not depend on it;
// CudaError when it cannot be found.
double gemm_tflops_bf16(index_t n, int reps);

// The tile sizes the teaching kernels use unless told: as large as shared memory allows.
TileSizes default_tiles(index_t d, std::size_t element_bytes);

}  // namespace fd::cuda
