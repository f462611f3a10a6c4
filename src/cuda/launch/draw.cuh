// draw.cuh — normal draws made on the device, for inputs and benchmarks that need no host copy:
//   z_i      = splitmix64(key + i phi)       phi = 2^64 / golden ratio, key from (seed, array)
//   u1, u2   = (the top 24 bits of z_i, plus one) and its low 24 bits, times 2^-24
//              (u1 in (0, 1], u2 in [0, 1))
//   x_i      = round_E(sqrt(-2 ln u1) cos(2 pi u2))       Box-Muller: x_i ~ N(0, 1)
// Not torch.randn's values (that is the host's business); the same on every run and GPU.
#pragma once

#include <cstdint>

#include "cuda/launch/device_memory.cuh"
#include "cuda/primitives/element.cuh"

namespace fd::cuda {

// splitmix64's finalizer: a 64-bit hash whose outputs pass as independent uniform draws.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class E>
__global__ void draw_normal_kernel(E* x, index_t count, std::uint64_t key) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < count;
       i += index_t(gridDim.x) * blockDim.x) {
    const std::uint64_t z = mix64(key + std::uint64_t(i) * 0x9e3779b97f4a7c15ull);
    const float u1 = float((z >> 40) + 1) * 0x1p-24f, u2 = float(z & 0xffffffu) * 0x1p-24f;
    x[i] = to_element<E>(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

// x drawn N(0, 1): array tells apart the arrays drawn with one seed.
template <class E>
void draw_normal(DeviceArray<E>& x, std::uint32_t seed, int array) {
  if (!x.count) return;
  const std::uint64_t key = mix64((std::uint64_t(seed) << 2) + std::uint64_t(array) + 1);
  draw_normal_kernel<E><<<1024, 256>>>(x.ptr, index_t(x.count), key);
  check_launch("drawing the inputs");
}

}  // namespace fd::cuda
