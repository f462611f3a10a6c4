// rung_problem.cuh — what the launches of the rungs above the teaching kernel share (ladder.cu and
// a launch file per rung: simt.cu, tc.cu, mma.cu, hopper.cu): one rung's problem on the device
// (Q, K, V uploaded once in the rung's element type E, O and L, head 0's trace buffers, hopper's
// tensor maps), the shared-memory opt-in, and each rung's launcher, whose kernel is chosen by d
// from the rung's list (head_dims.hpp).
//   element type E:  simt float;  tc, mma and hopper __nv_bfloat16 or __half (variant.p_in)
//   grid:            (Tr, b h), causal query tiles longest first;  L_lo = 0 (L is fp32)
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/host/rungs_api.hpp"
#include "cuda/launch/device_memory.cuh"
#include "cuda/primitives/element.cuh"
#include "flashdemo/host_device/work_items.hpp"

namespace fd::cuda {

inline constexpr float kLog2e = 1.4426950408889634f;

// The trace buffers of head 0 (allocated only when traced).
struct TraceBuffers {
  std::size_t tiles, slots, rows;
  DeviceArray<char> computed;
  DeviceArray<float> m_old, m_new, alpha, l, final_m, final_l;
  TraceBuffers(const Tiling& t, bool on)
      : tiles(on ? std::size_t(t.Tr() * t.Tc()) : 0),
        slots(tiles * std::size_t(t.Br)),
        rows(on ? std::size_t(t.n) : 0),
        computed(tiles),
        m_old(slots),
        m_new(slots),
        alpha(slots),
        l(slots),
        final_m(rows),
        final_l(rows) {
    if (tiles) check(cudaMemset(computed.ptr, 0, tiles), "cudaMemset");
  }
  RungTrace view() const {
    if (!tiles) return {};
    return {computed.ptr, m_old.ptr, m_new.ptr, alpha.ptr, l.ptr, final_m.ptr, final_l.ptr};
  }
  void download(const Tiling& t, KernelTrace* out) const {
    out->tiling = t;
    out->computed.assign(tiles, 0);
    computed.download(out->computed.data());
    out->m_old = m_old.to_doubles(), out->m_new = m_new.to_doubles();
    out->alpha = alpha.to_doubles(), out->l = l.to_doubles();
    out->final_m = final_m.to_doubles(), out->final_l = final_l.to_doubles();
  }
};

// hopper's tensor maps, made once with the problem: Q, K and V read, O written (none for the
// other rungs; hopper.cu).
struct HopperMaps {
  CUtensorMap Q{}, K{}, V{}, O{};
};
template <class E>
HopperMaps hopper_maps(Impl rung, const Shape& s, const E* Q, const E* K, const E* V, const E* O,
                       index_t Br);

// One rung's problem on the device: Q, K, V uploaded once in E, O and L allocated (and for
// hopper, its tensor maps of Q, K, V), on the rung's tiles (problem_tiles). Br, when given:
// another query tile (hopper's forward with two or three consumer warpgroups, timed as a step).
template <class E>
struct DeviceProblem {
  Shape s;
  Impl impl;
  Tiling tiling;
  Mask mask;
  float scale, scale2;  // scale, and scale * log2(e)
  DeviceArray<E> Q, K, V, O;
  DeviceArray<float> L;
  TraceBuffers trace;
  HopperMaps maps;
  mutable std::unique_ptr<DeviceArray<int>> schedule;       // hopper's persistent grid's, once
  mutable std::unique_ptr<DeviceArray<ListedItem>> listed;  // and its entries decoded (forward)

  template <class T>
  DeviceProblem(const Shape& shape, const AttnParams& params, Impl rung, const T* q, const T* k,
                const T* v, bool traced, index_t Br = 0)
      : s(shape),
        impl(rung),
        tiling(tiling_of(params, Br)),
        mask(params.mask_for(s.n, s.m)),
        scale(float(params.scale_for(s.d))),
        scale2(scale * kLog2e),
        Q(converted(q, s.heads() * s.n * s.d).data(), std::size_t(s.heads() * s.n * s.d)),
        K(converted(k, s.heads() * s.m * s.d).data(), std::size_t(s.heads() * s.m * s.d)),
        V(converted(v, s.heads() * s.m * s.d).data(), std::size_t(s.heads() * s.m * s.d)),
        O(std::size_t(s.heads() * s.n * s.d)),
        L(std::size_t(s.heads() * s.n)),
        trace(tiling, traced),
        maps(hopper_maps(rung, s, Q.ptr, K.ptr, V.ptr, O.ptr, tiling.Br)) {}

  // The rung's tiling of this problem (problem_tiles: hopper's Br at d = 64 by the shape), or
  // another query tile Br when given.
  Tiling tiling_of(const AttnParams& params, index_t Br) const {
    const TileSizes t = problem_tiles(impl, s.n, s.m, s.d, params.mask_for(s.n, s.m));
    return Tiling{s.n, s.m, Br > 0 ? Br : t.Br, t.Bc};
  }

  template <class T>
  static std::vector<E> converted(const T* x, index_t count) {
    std::vector<E> out(static_cast<std::size_t>(count));
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = to_element<E>(float(x[k]));
    return out;
  }
};

// The backward's arrays on the device, beside a forward's problem (Q, K, V already there): dO
// in E, D and the gradients in fp32, and the rung's backward tiling (kernel_tiles; Br, when
// given, another query tile that hopper's backward is timed with). hopper's also keeps (L2, D)
// per row padded to whole query tiles (LD: two floats a row).
template <class E>
struct BackwardArrays {
  Tiling tiling;
  DeviceArray<E> dO;
  DeviceArray<float> D, dQ, dK, dV, LD;
  std::unique_ptr<DeviceArray<int>> schedule;  // hopper's persistent grid's, once
  BackwardArrays(const DeviceProblem<E>& p, const std::vector<E>& dO_host, index_t Br = 0)
      : tiling{p.s.n, p.s.m, Br > 0 ? Br : kernel_tiles(p.impl, p.s.d, Pass::bwd).Br,
               kernel_tiles(p.impl, p.s.d, Pass::bwd).Bc},
        dO(dO_host.data(), dO_host.size()),
        D(std::size_t(p.s.heads() * p.s.n)),
        dQ(p.Q.count),
        dK(p.K.count),
        dV(p.K.count),
        LD(p.impl == Impl::hopper ? std::size_t(2 * p.s.heads() * tiling.Tr() * tiling.Br) : 0) {}
};

// Raises a kernel's dynamic shared-memory limit to what it needs, or says why it cannot run.
template <class Kernel>
void allow_smem(Kernel kernel, std::size_t bytes) {
  allow_dynamic_smem(kernel, bytes, "the rung needs");
}

// A d the rung has no kernel for (refuses() says so before any launch: not reached).
[[noreturn]] inline void no_kernel(Impl rung, index_t d) {
  throw CudaError(std::string("--impl ") + impl_name(rung) +
                  " has no kernel for d = " + std::to_string(d));
}

// Which of hopper's overlap steps are on; unset, the rung's own choice at that d. Its backward:
// dQ added by the copy engine's bulk reduce (bulk_dq 1, the default) or by atomics (0); cut
// between the warpgroups by columns (dq_by_columns 1, d = 128) or by keys (0; -1: the default,
// hopper_bwd_cut); with bulk_dq, its warpgroups' overlaps (bwd_overlap, kBwdOverlap* bits, bf16
// only; -1: the rung's choice, hopper_bwd_overlap), and the rows of K_j (bwd_held 1) or of K_j
// and V_j (2) held in registers beside those overlaps (kBwdKRegisters, kBwdVRegisters; Br = 64);
// dQ's staging for the bulk reduce (dq_staging: int(DqStaging); -1: hopper_bwd_dq_staging).
// The forward's grid: a block per (query tile, head) (0), or persistent (1: a block an SM looping
// over them, hopper_forward_kernel's kPersistent; -1: HopperDefaults<d>::persistent).
struct HopperSteps {
  int ping_pong = -1, overlap = -1, persistent = -1;  // -1: HopperDefaults<d>
  int consumers = -1;  // consumer warpgroups: 3 (d = 64, Br = 192) or 2 (Br = 128), as the
                       // problem's tiling; -1: HopperDefaults<d>
  int stage_o = -1;    // O from registers (0) or through shared memory and TMA (1; fp16 only as
                       // the choice's, d = 128's persistent grid with the overlap)
  int exp_fma = 0;     // 1 in exp_fma of the softmax's exps by exp2_fma (0: none; 8 or 4: d = 64)
  int prefetch = -1;   // the persistent grid's L2 prefetch: the next item's first key tiles
  int stages = -1;     // K, V stages: kHopperStages, or 4 (d = 64, persistent, bf16: a step)
  int bc = -1;         // the key tile: hopper_bc(d), or 176 (d = 128, bf16, ordinary grid: a step)
  int idle_padding = -1;  // 1: a consumer warpgroup idles on tiles its rows do not see (padding,
                          // past its diagonal; d = 64, three, no overlap); 0: it computes them;
                          // -1: HopperDefaults<d>
  int bulk_dq = 1, dq_by_columns = -1, bwd_overlap = -1, bwd_held = 0, dq_staging = -1;
  int bwd_persistent = 0;  // the backward's persistent grid (a block an SM over (j, head))
  int bwd_rotate = 0;      // the rung's backward, each key tile's walk rotated (kBwdRotate)
};

// One forward of the problem on each rung (p.tiling.Tr() > 0, p.s.heads() > 0), the kernel
// chosen by p.s.d from the rung's list, the tracing kernel when p.trace is on.
void launch_simt(const DeviceProblem<float>& p);  // simt.cu
template <class E>
void launch_tc(const DeviceProblem<E>& p);  // tc.cu
template <class E>
void launch_mma(const DeviceProblem<E>& p);  // mma.cu
template <class E>
void launch_hopper(const DeviceProblem<E>& p, HopperSteps steps);  // hopper.cu
// mma's backward (O and L already in p; m > 0): D, then dK and dV with dQ by atomics or, when
// deterministic, in its own pass (mma.cu).
template <class E>
void launch_mma_backward(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic);
// hopper's backward (hopper.cu): (L2, D), then dK and dV with dQ by atomics or, when
// deterministic, by mma's dQ kernel.
template <class E>
void launch_hopper_backward(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic,
                            HopperSteps steps);

}  // namespace fd::cuda
