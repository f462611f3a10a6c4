// impl.hpp — the implementations of attention flashdemo holds, one enum across devices, chosen
// at one switch (demos/device.cpp):
//   CPU   teaching  the tiled algorithm as written (flash_forward, flash_backward), traced
//         fast      the same tiles and numerics with register-blocked products and threads
//   CUDA  teaching  the teaching kernels (src/cuda/rungs/teaching.cuh): one thread per row
//         simt      fp32 on CUDA cores, register-tiled: each thread owns 4 x 4 of S and of O
//         tc        bf16/fp16 on tensor cores: mma.sync.m16n8k16 fed by ldmatrix, P kept in
//                   registers as the A operand of P V; K and V loaded, then computed on
//         mma       tc with the copy under the compute (cp.async double-buffered K and V tiles)
//                   and two 16-row fragments per warp, so each K and V fragment feeds two mma
//         hopper    Hopper's own instructions (sm_90a): TMA copies by a producer warpgroup,
//                   wgmma by two consumer warpgroups that take turns, softmax under the GEMMs
// The GPU rungs form the ladder (flashdemo ladder): each adds one idea to the rung below.
// Every one is graded against the same reference by the same rule (compare.hpp).
#pragma once

#include <cstring>

namespace fd {

enum class Device { cpu, cuda };
enum class Impl { teaching, fast, simt, tc, mma, hopper };

inline const char* impl_name(Impl i) {
  const char* names[] = {"teaching", "fast", "simt", "tc", "mma", "hopper"};
  return names[int(i)];
}

inline const char* device_name(Device d) {
  return d == Device::cuda ? "cuda" : "cpu";
}

// Whether an implementation exists on a device.
inline bool runs_on(Impl i, Device d) {
  return i == Impl::teaching || (i == Impl::fast) == (d == Device::cpu);
}

// The GPU kernels that run on tensor cores: bf16 and fp16 inputs only, fp32 accumulation.
inline bool tensor_cores(Impl i) {
  return i == Impl::tc || i == Impl::mma || i == Impl::hopper;
}

// The GPU rungs, bottom to top (flashdemo ladder runs them in this order).
inline constexpr Impl kGpuRungs[] = {Impl::teaching, Impl::simt, Impl::tc, Impl::mma, Impl::hopper};

}  // namespace fd
