// impl.hpp — the implementations of attention flashdemo holds, one enum across devices, chosen
// at one switch (demos/device.cpp):
//   CPU   teaching  the tiled algorithm as written (flash_forward, flash_backward), traced
//         fast      the same tiles and numerics with register-blocked products and threads
//   CUDA  teaching  the teaching kernels (src/cuda/kernels.cuh): one thread per row
// Every one is graded against the same reference by the same rule (compare.hpp).
#pragma once

#include <cstring>

namespace fd {

enum class Device { cpu, cuda };
enum class Impl { teaching, fast };

inline const char* impl_name(Impl i) {
  return i == Impl::fast ? "fast" : "teaching";
}

inline const char* device_name(Device d) {
  return d == Device::cuda ? "cuda" : "cpu";
}

// Whether an implementation exists on a device.
inline bool runs_on(Impl i, Device d) {
  return i == Impl::teaching || d == Device::cpu;
}

}  // namespace fd
