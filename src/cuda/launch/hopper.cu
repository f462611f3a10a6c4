// hopper.cu — launching the rung `hopper` (hopper.cuh): bf16 or fp16 in, TMA tensor maps of Q, K
// and V made once with the problem (boxes of 64 columns, 128-byte swizzled), 384 threads per block
// of 128 x 128 tiles, hopper_forward_kernel<E, d, ping_pong, overlap> for each d of HopperHeadDims
// (head_dims.hpp), with the overlap steps of HopperDefaults<d> unless told, and its tracing
// instance. Its backward (hopper_backward.cuh) for each d of HopperBackwardHeadDims:
//   (L2, D)  hopper_bwd_prep_kernel, d / 8 threads a row padded to whole query tiles; it zeroes
//            dQ for the reduces too (not for the deterministic backward, which writes dQ whole)
//   dK, dV   hopper_bwd_kernel per key tile (Tc, b h), dQ added by the bulk reduce (or atomics),
//   dQ       (deterministic) mma's dQ kernel per query tile of 64 (mma_backward.cuh)
// with maps of Q and dO in boxes of the backward's Br rows, and of dQ for the bulk reduce's boxes
// (DqStaging: 3d, or seen in four dimensions, dq_tensor_map). An sm_90 GPU only (sm_90a code).
#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/host/head_dims.hpp"
#include "cuda/launch/rung_problem.cuh"
#include "cuda/rungs/hopper.cuh"
#include "cuda/rungs/hopper_backward.cuh"
#include "cuda/rungs/mma_backward.cuh"

namespace fd::cuda {
namespace {

// cuTensorMapEncodeTiled, reached through the runtime (cudaGetDriverEntryPointByVersion): no
// -lcuda. A tensor of `rank` dimensions (innermost first, strides in bytes of the outer ones), its
// boxes read or written whole; elements past the tensor read as zeros (and left alone by a reduce).
CUtensorMap encode_tiled(CUtensorMapDataType type, cuuint32_t rank, const void* X,
                         const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                         CUtensorMapSwizzle swizzle) {
  using Encode =
      CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                           &found),
          "cudaGetDriverEntryPointByVersion");
    if (!fn || found != cudaDriverEntryPointSuccess)
      throw CudaError("the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 or later)");
    return reinterpret_cast<Encode>(fn);
  }();
  CUtensorMap map{};
  const cuuint32_t unit[5] = {1, 1, 1, 1, 1};
  const CUresult r = encode(&map, type, rank, const_cast<void*>(X), dims, strides, box, unit,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ")");
  return map;
}

// A tensor map of X (heads x rows x d elements of T, row-major) for TMA: boxes of `box_rows` rows
// x 128 bytes (64 bf16/fp16 or 32 fp32 columns) of one head, 128-byte swizzled.
template <class T>
CUtensorMap tensor_map(const T* X, index_t heads, index_t rows, index_t d, int box_rows) {
  // (a tensor with no rows still needs a dimension of 1: no block reads it, J = 0 there)
  const cuuint64_t extent = cuuint64_t(std::max<index_t>(rows, 1));
  const cuuint64_t dims[3] = {cuuint64_t(d), extent, cuuint64_t(heads)};
  const cuuint64_t strides[2] = {cuuint64_t(d) * sizeof(T), extent * cuuint64_t(d) * sizeof(T)};
  const cuuint32_t box[3] = {cuuint32_t(128 / sizeof(T)), cuuint32_t(box_rows), 1};
  const CUtensorMapDataType type = std::is_same_v<T, float>    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode_tiled(type, 3, X, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
}

// dQ (heads x rows x d fp32, row-major) seen as four dimensions, (8 columns, row, group of 8
// columns, head): a box of 16 rows x 64 columns then lies in shared memory as 8 groups of 16 rows
// of 32 bytes (hopper_backward.cuh, stage_dq_groups): a warp's fragment rows on distinct banks.
// The strides need not grow: the group's 32 bytes are smaller than the row's d x 4.
CUtensorMap dq_tensor_map(const float* dQ, index_t heads, index_t rows, index_t d) {
  const cuuint64_t extent = cuuint64_t(std::max<index_t>(rows, 1));
  const cuuint64_t dims[4] = {8, extent, cuuint64_t(d / 8), cuuint64_t(heads)};
  const cuuint64_t strides[3] = {cuuint64_t(d) * 4, 32, extent * cuuint64_t(d) * 4};
  const cuuint32_t box[4] = {8, cuuint32_t(kHopperBwdDqRows), 8, 1};
  return encode_tiled(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, dQ, dims, strides, box,
                      CU_TENSOR_MAP_SWIZZLE_NONE);
}

// The rung hopper runs on sm_90 only (its kernel is built for sm_90a).
void require_hopper() {
  int dev = 0, major = 0, minor = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev),
        "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev),
        "cudaDeviceGetAttribute");
  if (major != 9 || minor != 0)
    throw CudaError("--impl hopper needs a Hopper GPU (compute capability 9.0); this one is " +
                    std::to_string(major) + "." + std::to_string(minor));
}

// The SMs of the current GPU: the persistent grid's size.
int sm_count() {
  int dev = 0, sms = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
        "cudaDeviceGetAttribute");
  return sms;
}

// The persistent grid's schedule (block_schedule: each item to the least loaded of `blocks`
// blocks, item w costing tiles(w) + 1), on the host, then on the device: dealt on the problem's
// first persistent launch and kept (the shape, mask and SM count do not change under it).
template <class Tiles>
std::vector<int> host_schedule(int items, int blocks, Tiles tiles) {
  std::vector<int> cost(static_cast<std::size_t>(items));
  for (int w = 0; w < items; ++w) cost[std::size_t(w)] = int(tiles(w)) + 1;
  return block_schedule(cost, blocks);
}
template <class Tiles>
const int* device_schedule(std::unique_ptr<DeviceArray<int>>& held, int items, int blocks,
                           Tiles tiles) {
  if (!held || held->count != std::size_t(2 * blocks + items)) {
    const std::vector<int> schedule = host_schedule(items, blocks, tiles);
    held = std::make_unique<DeviceArray<int>>(schedule.data(), schedule.size());
  }
  return held->ptr;
}

// The forward's persistent schedule (as device_schedule's) and its entries decoded (listed_items:
// query tile i, head, J_i, F_i of each), dealt on the problem's first persistent launch and kept.
// Each item is decoded once, here; its J_i is also its cost.
template <class E>
void forward_schedule(const DeviceProblem<E>& p, int Tr, int heads, int blocks) {
  const int items = Tr * heads;
  const std::size_t entries = std::size_t(2 * blocks + items);
  if (p.schedule && p.listed && p.schedule->count == entries && p.listed->count == entries) return;
  std::vector<ListedItem> decoded(static_cast<std::size_t>(items));
  for (int w = 0; w < items; ++w) {
    const FwdItem it = forward_item(w, Tr, heads, blocks, p.mask.causal);
    decoded[std::size_t(w)] = {int(it.i), int(it.head),
                               int(computed_key_tiles(p.tiling, p.mask, it.i)),
                               int(full_key_tiles(p.tiling, p.mask, it.i))};
  }
  const std::vector<int> schedule =
      host_schedule(items, blocks, [&](int w) { return decoded[std::size_t(w)].J; });
  const std::vector<ListedItem> listed =
      listed_items(schedule, blocks, [&](int w) { return decoded[std::size_t(w)]; });
  auto on_device = std::make_unique<DeviceArray<int>>(schedule.data(), schedule.size());
  auto listed_on_device = std::make_unique<DeviceArray<ListedItem>>(listed.data(), listed.size());
  p.schedule = std::move(on_device), p.listed = std::move(listed_on_device);  // both, or neither
}

// The forward's kernel of `consumers` consumer warpgroups (2; or 3 at d = 64, Br = 192) with its
// shared memory, on the ordinary grid (Tr, heads) or the persistent one (blocks).
// O leaves from registers, or by TMA from its staging (kStageO: the rung's on d = 128's persistent
// grid, in both types; elsewhere a step, bf16 only).
template <class E, int kD, int kConsumers>
struct ForwardLaunch {
  const DeviceProblem<E>& p;
  template <bool kPingPong, bool kOverlap, bool kTrace, bool kPersistent, bool kStageO = false,
            int kExpFma = 0, int kStages = kHopperStages, bool kIdlePadding = false>
  void go(const HopperArgs<E>& a, dim3 grid) const {
    const auto kernel =
        hopper_forward_kernel<E, kD, kPingPong, kOverlap, kTrace, kPersistent, kConsumers, kStageO,
                              kExpFma, kStages, hopper_bc(kD), kIdlePadding>;
    using Smem = HopperSmem<kD, (kPersistent ? 2 : 1), 64 * kConsumers, kStageO, kStages>;
    constexpr std::size_t bytes = Smem::kBytes;
    allow_smem(kernel, bytes);
    kernel<<<grid, hopper_threads(kConsumers), bytes>>>(p.maps.Q, p.maps.K, p.maps.V, p.maps.O, a);
  }
  // The tracing kernel: the rung's own steps.
  void traced(const HopperArgs<E>& a, dim3 grid) const {
    using Defaults = HopperDefaults<kD>;
    go<Defaults::ping_pong, Defaults::overlap(kConsumers, false), true, false>(a, grid);
  }
  // Either grid, with or without the overlap, O stored as kStageO says.
  template <bool kStageO>
  void on_grid(const HopperArgs<E>& a, dim3 grid, bool overlap, bool persistent) const {
    if (persistent)
      return overlap ? go<false, true, false, true, kStageO>(a, grid)
                     : go<false, false, false, true, kStageO>(a, grid);
    return overlap ? go<false, true, false, false, kStageO>(a, grid)
                   : go<false, false, false, false, kStageO>(a, grid);
  }
  // Either grid without the overlap, 1 in kExpFma of the softmax's exps by exp2_fma.
  template <int kExpFma>
  void on_grid_exp_fma(const HopperArgs<E>& a, dim3 grid, bool persistent) const {
    if (persistent) return go<false, false, false, true, false, kExpFma>(a, grid);
    go<false, false, false, false, false, kExpFma>(a, grid);
  }
  // Every setting but ping-pong (two consumer warpgroups only) and the trace.
  void plain(const HopperArgs<E>& a, dim3 grid, bool overlap, bool persistent, bool stage_o,
             int exp_fma = 0, int stages = kHopperStages, bool idle_padding = false) const {
    // each warpgroup computes only its own rows' key tiles: d = 64, three consumers, no overlap,
    // either grid (the rung's there; fwd_padding_computed turns it off)
    if constexpr (kD == 64 && kConsumers == 3)
      if (idle_padding)
        return persistent ? go<false, false, false, true, false, 0, kHopperStages, true>(a, grid)
                          : go<false, false, false, false, false, 0, kHopperStages, true>(a, grid);
    // four K, V stages: d = 64's loop (no overlap) on the persistent grid, bf16 (a step)
    if constexpr (kD == 64 && std::is_same_v<E, __nv_bfloat16>)
      if (stages == 4) return go<false, false, false, true, false, 0, 4>(a, grid);
    // 1 in 8 or 1 in 4 exps on the FMA pipe (launch_hopper_d refuses it beside other settings)
    if constexpr (kD == 64 && std::is_same_v<E, __nv_bfloat16>) {
      if (exp_fma == 8) return on_grid_exp_fma<8>(a, grid, persistent);
      if (exp_fma == 4) return on_grid_exp_fma<4>(a, grid, persistent);
    }
    if (exp_fma != 0)
      throw CudaError("hopper's forward has no kernel for exp_fma " + std::to_string(exp_fma) +
                      " here (a timed step)");
    if constexpr (!kHopperPersistentFits<kD>)  // (d = 256; launch_hopper_d refuses the rest)
      return overlap ? go<false, true, false, false>(a, grid)
                     : go<false, false, false, false>(a, grid);
    else if (!stage_o)
      return on_grid<false>(a, grid, overlap, persistent);
    else if constexpr (std::is_same_v<E, __nv_bfloat16>)
      return on_grid<true>(a, grid, overlap, persistent);
    else {
      if constexpr (kD == 128)  // fp16: the choice's own (HopperDefaults)
        if (persistent && overlap) return go<false, true, false, true, true>(a, grid);
      throw CudaError(
          "hopper's forward sends O by TMA in fp16 only as its choice does (the persistent grid "
          "with the overlap at d = 128); other settings in bf16 (timed steps)");
    }
  }
};

// The step fwd_bc176: key tiles of Bc = 176 at d = 128 (kHopperWideBc) on the ordinary grid, bf16,
// with the overlap (without it, ptxas spills 12 bytes: not built). Its own tiling of the problem
// (Br as the rung's, Bc = 176) and its own maps of K and V (boxes of 176 rows); Q and O as the
// problem's.
template <class E, int kD>
void launch_wide_key_tiles(const DeviceProblem<E>& p, HopperArgs<E> a) {
  if constexpr (kD == 128 && std::is_same_v<E, __nv_bfloat16>) {
    constexpr int Bc = kHopperWideBc;
    a.tiling = Tiling{p.s.n, p.s.m, p.tiling.Br, Bc};
    const CUtensorMap tmK = tensor_map(p.K.ptr, p.s.heads(), p.s.m, kD, Bc);
    const CUtensorMap tmV = tensor_map(p.V.ptr, p.s.heads(), p.s.m, kD, Bc);
    const dim3 grid(unsigned(a.tiling.Tr()), unsigned(p.s.heads()));
    constexpr std::size_t bytes = HopperSmem<kD, 1, kHopperBr, false, kHopperStages, Bc>::kBytes;
    const auto kernel =
        hopper_forward_kernel<E, kD, false, true, false, false, 2, false, 0, kHopperStages, Bc>;
    allow_smem(kernel, bytes);
    kernel<<<grid, hopper_threads(2), bytes>>>(p.maps.Q, tmK, tmV, p.maps.O, a);
  } else {
    (void)p, (void)a;
    throw CudaError("hopper's forward takes key tiles of 176 at d = 128 in bf16 only");
  }
}

template <class E, int kD>
void launch_hopper_d(const DeviceProblem<E>& p, HopperSteps steps) {
  const index_t heads = p.s.heads();
  HopperArgs<E> a{p.O.ptr, p.L.ptr,  p.s.n,          p.s.m,   heads,  p.tiling,
                  p.mask,  p.scale2, p.trace.view(), nullptr, nullptr};
  dim3 grid(unsigned(p.tiling.Tr()), unsigned(heads));
  using Defaults = HopperDefaults<kD>;
  if (steps.ping_pong < 0) steps.ping_pong = Defaults::ping_pong;
  if (steps.consumers < 0) steps.consumers = int(p.tiling.Br / 64);  // (problem_tiles' Br)
  if (steps.prefetch < 0) steps.prefetch = Defaults::prefetch;
  if (steps.stages < 0) steps.stages = kHopperStages;
  if (steps.persistent < 0)  // (the traced kernel and ping-pong's turns: the ordinary grid)
    steps.persistent =
        !steps.ping_pong && !a.trace.computed && Defaults::persistent(p.tiling.Tc(), p.mask.causal);
  if (steps.overlap < 0)  // (the exps on the FMA pipe, a step, are built without it)
    steps.overlap = Defaults::overlap(steps.consumers, steps.persistent == 1) && steps.exp_fma == 0;
  if (steps.stage_o < 0)  // (the L2 prefetch, a step, is built with O from registers only)
    steps.stage_o = Defaults::stage_o(steps.persistent == 1, steps.overlap) && steps.prefetch == 0;
  // A warpgroup idles on the tiles its rows do not see (padded rows, past its diagonal) only where
  // that kernel was built and graded: d = 64, three consumers, the plain loop (no overlap, O
  // staged, FMA exps, four stages, prefetch, wide key tiles or trace). The rung takes it wherever
  // it fits; asked for elsewhere, it is refused.
  const bool idle_fits = kD == 64 && steps.consumers == 3 && !steps.ping_pong && !steps.overlap &&
                         steps.stage_o != 1 && steps.exp_fma == 0 && steps.prefetch <= 0 &&
                         steps.stages == kHopperStages &&
                         (steps.bc <= 0 || steps.bc == hopper_bc(kD)) && !a.trace.computed;
  if (steps.idle_padding < 0) steps.idle_padding = Defaults::idle_padding && idle_fits;
  if (steps.persistent == 1 && (steps.ping_pong || a.trace.computed))
    throw CudaError("hopper's persistent grid runs without ping-pong and without the trace");
  if (steps.stages != kHopperStages &&
      (steps.stages != 4 || kD != 64 || steps.overlap || steps.persistent != 1 || steps.ping_pong ||
       steps.stage_o == 1 || steps.exp_fma != 0 || a.trace.computed ||
       !std::is_same_v<E, __nv_bfloat16>))
    throw CudaError(
        "hopper's forward runs 4 K, V stages at d = 64 in bf16 only, on the persistent grid, "
        "without the overlap, ping-pong, O staged, exps on the FMA pipe or the trace (a timed "
        "step)");
  if (steps.prefetch > 0 &&
      (steps.persistent != 1 || steps.stage_o == 1 || (steps.consumers == 3 && steps.overlap)))
    throw CudaError(
        "hopper's forward prefetches the next item on the persistent grid only, O from "
        "registers, and with three consumer warpgroups only without the overlap (a timed step)");
  if (steps.stage_o == 1 && (steps.ping_pong || a.trace.computed))
    throw CudaError("hopper's forward sends O by TMA only without ping-pong and the trace");
  if (steps.exp_fma != 0 && (kD != 64 || steps.ping_pong || steps.overlap || steps.stage_o == 1 ||
                             a.trace.computed || !std::is_same_v<E, __nv_bfloat16>))
    throw CudaError(
        "hopper's forward takes exps on the FMA pipe at d = 64 in bf16 only, "
        "without the overlap, ping-pong, O staged or the trace (a timed step)");
  if (!kHopperPersistentFits<kD> && (steps.persistent == 1 || steps.stage_o == 1))
    throw CudaError("hopper's forward at d = " + std::to_string(kD) +
                    " runs on the ordinary grid, O from registers (shared memory)");
  if (p.tiling.Bc != hopper_bc(kD))
    throw CudaError("hopper's forward at d = " + std::to_string(kD) + " takes key tiles of " +
                    std::to_string(hopper_bc(kD)) + ", not " + std::to_string(p.tiling.Bc));
  const bool three = steps.consumers == 3;
  if (p.tiling.Br != 64 * steps.consumers || (three && (kD != 64 || steps.ping_pong)) ||
      (steps.consumers != 2 && !three))
    throw CudaError(
        "hopper's forward runs 2 consumer warpgroups at Br = 128, or 3 at d = 64, "
        "Br = 192, without ping-pong; not " +
        std::to_string(steps.consumers) + " at d = " + std::to_string(kD) +
        ", Br = " + std::to_string(p.tiling.Br));
  if (steps.idle_padding == 1 && !idle_fits)
    throw CudaError(
        "hopper's forward idles a warpgroup on the tiles its rows do not see at d = 64 only, "
        "with three consumer warpgroups and the rung's key tiles, without the overlap, O staged, "
        "exps on the FMA pipe, four stages, the L2 prefetch or the trace");
  if (steps.bc > 0 && steps.bc != hopper_bc(kD)) {  // key tiles of 176 (a step)
    if (kD != 128 || steps.bc != kHopperWideBc || !std::is_same_v<E, __nv_bfloat16> ||
        steps.ping_pong || !steps.overlap || steps.persistent == 1 || steps.stage_o == 1 ||
        steps.consumers != 2 || steps.exp_fma != 0 || steps.prefetch > 0 ||
        steps.stages != kHopperStages || a.trace.computed)
      throw CudaError(
          "hopper's forward takes key tiles of 176 at d = 128 only, in bf16, on the ordinary grid "
          "with the overlap, two consumer warpgroups and O from registers, without ping-pong or "
          "the trace (a timed step)");
    return launch_wide_key_tiles<E, kD>(p, a);
  }
  if (steps.persistent == 1) {  // one block an SM over the (i, head) items
    const int Tr = int(p.tiling.Tr()), items = Tr * int(heads);
    const int blocks = std::min(items, sm_count());
    forward_schedule(p, Tr, int(heads), blocks);
    a.schedule = p.schedule->ptr, a.listed = p.listed->ptr;
    grid = dim3(unsigned(blocks));
    a.prefetch = steps.prefetch;  // (the ordinary grid's block does not know its successor)
  }
  if constexpr (kD == 64)
    if (three) {
      const ForwardLaunch<E, kD, 3> three_wg{p};
      if (a.trace.computed) return three_wg.traced(a, grid);
      return three_wg.plain(a, grid, steps.overlap, steps.persistent == 1, steps.stage_o,
                            steps.exp_fma, steps.stages, steps.idle_padding == 1);
    }
  const ForwardLaunch<E, kD, 2> two{p};
  if (a.trace.computed)
    two.traced(a, grid);
  else if (steps.ping_pong && steps.overlap)
    two.template go<true, true, false, false>(a, grid);
  else if (steps.ping_pong)
    two.template go<true, false, false, false>(a, grid);
  else
    two.plain(a, grid, steps.overlap, steps.persistent == 1, steps.stage_o, steps.exp_fma,
              steps.stages);
}

// The bulk-reduce backward of cut C and overlaps O with dQ staged in the swizzled boxes, with or
// without their bank conflicts (DqStaging::swizzled, spread): the settings that stage otherwise.
template <class E, int kD, int kBr, DqCut C, int O>
auto swizzled_kernel(DqStaging staging) {
  using W = DqWay;
  return staging == DqStaging::spread
             ? hopper_bwd_kernel<E, kD, W::bulk_add, kBr, C, O, DqStaging::spread>
             : hopper_bwd_kernel<E, kD, W::bulk_add, kBr, C, O, DqStaging::swizzled>;
}

// hopper's backward at Br = kBr query rows a step (g.tiling.Br: the rung's HopperBwdTiles, or
// another Br that fits, timed by hopper_time_backward_steps).
template <class E, int kD, int kBr>
void launch_hopper_backward_tiles(const DeviceProblem<E>& p, BackwardArrays<E>& g,
                                  bool deterministic, HopperSteps steps) {
  const index_t heads = p.s.heads(), Tr = g.tiling.Tr(), padded = Tr * kBr;
  // dQ zeroed there for the reduces (the deterministic backward writes it whole instead)
  hopper_bwd_prep_kernel<E, kD><<<hopper_bwd_prep_blocks<kD>(heads * padded), kPrepThreads>>>(
      p.O.ptr, g.dO.ptr, p.L.ptr, g.D.ptr, reinterpret_cast<float2*>(g.LD.ptr),
      deterministic ? nullptr : g.dQ.ptr, heads, p.s.n, padded);
  const CUtensorMap tmQ = tensor_map(p.Q.ptr, heads, p.s.n, kD, kBr);
  const CUtensorMap tmdO = tensor_map(g.dO.ptr, heads, p.s.n, kD, kBr);
  const DqStaging staging =
      steps.dq_staging < 0 ? hopper_bwd_dq_staging(kD) : DqStaging(steps.dq_staging);
  const CUtensorMap tmdQ = hopper_bwd_dq_map_rank(staging) == 4
                               ? dq_tensor_map(g.dQ.ptr, heads, p.s.n, kD)
                               : tensor_map(g.dQ.ptr, heads, p.s.n, kD, 64);
  const HopperBwdArgs<E> a{reinterpret_cast<const float2*>(g.LD.ptr),
                           g.dQ.ptr,
                           g.dK.ptr,
                           g.dV.ptr,
                           p.s.n,
                           p.s.m,
                           heads,
                           g.tiling,
                           p.mask,
                           p.scale,
                           p.scale2,
                           nullptr};
  const dim3 grid(unsigned(g.tiling.Tc()), unsigned(heads));
  auto run = [&](auto kernel, std::size_t bytes) {
    allow_smem(kernel, bytes);
    kernel<<<grid, kHopperThreads, bytes>>>(tmQ, p.maps.K, p.maps.V, tmdO, tmdQ, a);
  };
  constexpr DqCut kCut = hopper_bwd_cut(kD, kBr);
  constexpr std::size_t bytes = HopperBwdSmem<kD, kBr>::kBytes;  // (one stage pair, one dQ set)
  constexpr int kChoice = hopper_bwd_choice(kD, kBr);
  constexpr std::size_t choice_bytes = HopperBwdSmemFor<kD, kBr, kCut, kChoice>::kBytes;
  using W = DqWay;
  if ((steps.bwd_persistent || steps.bwd_rotate) && (deterministic || !steps.bulk_dq))
    throw CudaError(  // (not the ordinary grid, or the walk in order, instead)
        "hopper's persistent backward and its rotated walk add dQ by the bulk reduce only: not "
        "deterministic, not by atomics");
  if (deterministic) {
    run(hopper_bwd_kernel<E, kD, W::separate, kBr>, bytes);
  } else {
    if (!steps.bulk_dq) return run(hopper_bwd_kernel<E, kD, W::atomics, kBr>, bytes);
    if constexpr (std::is_same_v<E, __nv_bfloat16>) {  // the overlaps each way, timed in bf16
      constexpr int P = kBwdOverlapP, Dq = kBwdOverlapDq;
      // Every switch but the grid and the walk at the rung's own: what those two run beside.
      const bool other_staging = staging != hopper_bwd_dq_staging(kD);
      const bool own_settings =
          steps.bwd_overlap < 0 && steps.dq_by_columns < 0 && steps.bwd_held == 0 && !other_staging;
      // The query tiles walked from a place of the key tile's own, beside the rung's settings only
      // (first: no other branch below runs it, so none may take it in order instead).
      if (steps.bwd_rotate == 1) {
        if constexpr (kBr == HopperBwdTiles<kD>::Br)
          if (own_settings && !steps.bwd_persistent) {
            constexpr int O = kChoice | kBwdRotate;
            return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O>, choice_bytes);
          }
        throw CudaError(
            "hopper's backward walks the query tiles rotated with its own settings only");
      }
      // The persistent grid: one block an SM over the (key tile, head) items, the rung's settings.
      if (steps.bwd_persistent == 1 && own_settings) {
        constexpr int O = hopper_bwd_overlap(kD, kBr);
        const auto kernel =
            hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O, hopper_bwd_dq_staging(kD), true>;
        allow_smem(kernel, bytes);
        const int Tc = int(g.tiling.Tc()), items = Tc * int(heads);
        const int blocks = std::min(items, sm_count());
        HopperBwdArgs<E> pa = a;  // item w: key tile j = rank of its head, seen by Tr - i0 tiles
        pa.schedule = device_schedule(g.schedule, items, blocks, [&](int w) {
          const int j = persistent_item(w, Tc, int(heads), blocks, p.mask.causal).rank;
          return Tr - first_query_tile(g.tiling, p.mask, j);
        });
        kernel<<<unsigned(blocks), kHopperThreads, bytes>>>(tmQ, p.maps.K, p.maps.V, tmdO, tmdQ,
                                                            pa);
        return;
      }
      // At d = 64, dQ cut by column halves (wgmma n32, both warpgroups' dS^T first): staged
      // either way with the P overlap (the rung's at d = 64), or spread with P and Dq (d = 128's).
      const bool swizzled_box = staging != DqStaging::groups;
      if constexpr (kD == 64 && kBr == 64)
        if (steps.dq_by_columns == 1 && steps.bwd_held == 0 && swizzled_box) {
          constexpr DqCut C = DqCut::columns;
          constexpr std::size_t b = HopperBwdSmem<kD, kBr, C>::kBytes;
          if (steps.bwd_overlap == (P | Dq) && staging == DqStaging::spread)
            return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, C, P | Dq, DqStaging::spread>, b);
          if (steps.bwd_overlap < 0 || steps.bwd_overlap == P)
            return run(swizzled_kernel<E, kD, kBr, C, P>(staging), b);
        }
      // dQ staged the other way (spread; or, at d = 128, swizzled), the rest as the rung's
      if (other_staging && swizzled_box && steps.bwd_overlap < 0 && steps.bwd_held == 0 &&
          steps.dq_by_columns < 0)
        return run(swizzled_kernel<E, kD, kBr, kCut, hopper_bwd_overlap(kD, kBr)>(staging), bytes);
      // K_j, or K_j and V_j, held in registers beside the overlaps: at d = 64 only (at d = 128
      // K_j alone, 224 of the 240 registers by count, spilled 76 bytes and serialized its wgmma)
      if constexpr (kD == 64 && kBr == 64) {
        constexpr int K = kBwdKRegisters, V = kBwdVRegisters, O = hopper_bwd_overlap(kD, kBr);
        if (steps.bwd_held == 1 && steps.bwd_overlap < 0)
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O | K>, bytes);
        if (steps.bwd_held == 2 && steps.bwd_overlap < 0)
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O | K | V>, bytes);
      }
      switch (steps.bwd_overlap) {
        case 0:
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, 0>, bytes);
        case P:
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, P>, bytes);
        case Dq:
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, Dq>, bytes);
        case P | Dq:
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, P | Dq>, bytes);
        default:
          break;
      }
      if constexpr (hopper_bwd_pipelines(kD, kBr)) {  // the pipeline across tiles
        constexpr int Next = kBwdOverlapNext;
        if (steps.bwd_overlap == Next)
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, Next>, bytes);
        if (steps.bwd_overlap == (P | Next))
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, P | Next>, bytes);
      }
      // at d = 128, Q_i, dO_i in three stages (the rung's overlaps beside)
      if constexpr (kD == 128 && kBr == 64)
        if (steps.bwd_overlap == (hopper_bwd_overlap(kD, kBr) | kBwdStages3) &&
            steps.dq_by_columns < 0 && steps.bwd_held == 0 && !other_staging) {
          constexpr int O = hopper_bwd_overlap(kD, kBr) | kBwdStages3;
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O>,
                     HopperBwdSmemFor<kD, kBr, kCut, O>::kBytes);
        }
      // dQ's reduces issued by a writer warp (the rung's cut, staging and overlaps beside)
      if constexpr (kBr == HopperBwdTiles<kD>::Br && HopperBwdSmem<kD, kBr, kCut>::kDqBlocks == 1)
        if (steps.bwd_overlap == (hopper_bwd_overlap(kD, kBr) | kBwdDqWriter) &&
            steps.dq_by_columns < 0 && steps.bwd_held == 0 && !other_staging &&
            !steps.bwd_persistent) {
          constexpr int O = hopper_bwd_overlap(kD, kBr) | kBwdDqWriter;
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O>, bytes);
        }
      // at d = 128, the rung's choice with dQ's staging twice (at d = 64, Br = 128, it does not
      // fit)
      if constexpr (kD == 128 && kBr == 64)
        if (steps.bwd_overlap == (kChoice | kBwdDqSets2) && steps.dq_by_columns < 0 &&
            steps.bwd_held == 0 && !other_staging && !steps.bwd_persistent) {
          constexpr int O = kChoice | kBwdDqSets2;
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, O>,
                     HopperBwdSmemFor<kD, kBr, kCut, O>::kBytes);
        }
      // the other cut at Br = 64, d = 128: by keys (twice the reduce traffic, no meeting)
      if constexpr (kD == 128 && kBr == 64)
        if (steps.dq_by_columns == 0)
          return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, DqCut::keys>,
                     HopperBwdSmem<kD, kBr, DqCut::keys>::kBytes);
    }
    // A setting asked for that no kernel above was built with (an overlap or cut at another d or
    // Br, or in fp16: there only the choice's own bits, writer warp included) is refused, not run
    // as the default under its name.
    const bool other_cut =
        steps.dq_by_columns >= 0 && (steps.dq_by_columns == 1) != (kCut == DqCut::columns);
    if ((steps.bwd_overlap >= 0 && steps.bwd_overlap != kChoice) || other_cut ||
        steps.bwd_held != 0 || staging != hopper_bwd_dq_staging(kD) || steps.bwd_persistent ||
        steps.bwd_rotate)
      throw CudaError("hopper's backward has no kernel for overlap " +
                      std::to_string(steps.bwd_overlap) + ", dq_by_columns " +
                      std::to_string(steps.dq_by_columns) + ", held " +
                      std::to_string(steps.bwd_held) + ", staging " + std::to_string(int(staging)) +
                      " at d = " + std::to_string(kD) + ", Br = " + std::to_string(kBr) +
                      " in this element type");
    return run(hopper_bwd_kernel<E, kD, W::bulk_add, kBr, kCut, kChoice>, choice_bytes);
  }
  // dQ per query tile of 64 rows, as mma's deterministic backward computes it
  const Tiling mma_tiling{p.s.n, p.s.m, kBwdTile, kBwdTile};
  const BwdArgs<E> m{p.Q.ptr,  p.K.ptr, p.V.ptr, g.dO.ptr,   p.L.ptr, g.D.ptr, g.dQ.ptr, g.dK.ptr,
                     g.dV.ptr, p.s.n,   p.s.m,   mma_tiling, p.mask,  p.scale, p.scale2};
  allow_smem(mma_dq_kernel<E, kD>, mma_dq_smem_bytes<kD>());
  mma_dq_kernel<E, kD>
      <<<dim3(unsigned(mma_tiling.Tr()), unsigned(heads)), kTcThreads, mma_dq_smem_bytes<kD>()>>>(
          m);
}

// The Br of the arrays' tiling: the rung's (kernel_tiles), or, timed in bf16, another that fits.
template <class E, int kD>
void launch_hopper_backward_d(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic,
                              HopperSteps steps) {
  constexpr int kBr = HopperBwdTiles<kD>::Br, kOther = kBr == 64 ? 128 : 64;
  if constexpr (std::is_same_v<E, __nv_bfloat16> && HopperBwdFits::at<kD, kOther>())
    if (g.tiling.Br == kOther)
      return launch_hopper_backward_tiles<E, kD, kOther>(p, g, deterministic, steps);
  if (g.tiling.Br != kBr)
    throw CudaError("hopper's backward has no kernel for Br = " + std::to_string(g.tiling.Br) +
                    " at d = " + std::to_string(kD));
  launch_hopper_backward_tiles<E, kD, kBr>(p, g, deterministic, steps);
}

}  // namespace

// hopper's tensor maps, made once with the problem (none for the other rungs): K and V in boxes
// of the key tile (hopper_bc: 64 rows at d = 256, else 128; the backward's too), O in boxes of a
// consumer warpgroup's 64 rows.
template <class E>
HopperMaps hopper_maps(Impl rung, const Shape& s, const E* Q, const E* K, const E* V, const E* O,
                       index_t Br) {
  if constexpr (std::is_same_v<E, float>) {
    return {};
  } else {
    if (rung != Impl::hopper || s.heads() == 0 || s.n == 0) return {};  // (nothing launched)
    require_hopper();
    return {tensor_map(Q, s.heads(), s.n, s.d, int(Br)),
            tensor_map(K, s.heads(), s.m, s.d, hopper_bc(int(s.d))),
            tensor_map(V, s.heads(), s.m, s.d, hopper_bc(int(s.d))),
            tensor_map(O, s.heads(), s.n, s.d, 64)};
  }
}

template <class E>
void launch_hopper(const DeviceProblem<E>& p, HopperSteps steps) {
  if (!with_head_dim(HopperHeadDims{}, p.s.d,
                     [&](auto dim) { launch_hopper_d<E, decltype(dim)::value>(p, steps); }))
    no_kernel(Impl::hopper, p.s.d);
}

template <class E>
void launch_hopper_backward(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic,
                            HopperSteps steps) {
  if (!with_head_dim(HopperBackwardHeadDims{}, p.s.d, [&](auto dim) {
        launch_hopper_backward_d<E, decltype(dim)::value>(p, g, deterministic, steps);
      }))
    no_kernel(Impl::hopper, p.s.d);
}

template HopperMaps hopper_maps(Impl, const Shape&, const float*, const float*, const float*,
                                const float*, index_t);
template HopperMaps hopper_maps(Impl, const Shape&, const __nv_bfloat16*, const __nv_bfloat16*,
                                const __nv_bfloat16*, const __nv_bfloat16*, index_t);
template HopperMaps hopper_maps(Impl, const Shape&, const __half*, const __half*, const __half*,
                                const __half*, index_t);
template void launch_hopper(const DeviceProblem<__nv_bfloat16>&, HopperSteps);
template void launch_hopper(const DeviceProblem<__half>&, HopperSteps);
template void launch_hopper_backward(const DeviceProblem<__nv_bfloat16>&,
                                     BackwardArrays<__nv_bfloat16>&, bool, HopperSteps);
template void launch_hopper_backward(const DeviceProblem<__half>&, BackwardArrays<__half>&, bool,
                                     HopperSteps);

}  // namespace fd::cuda
