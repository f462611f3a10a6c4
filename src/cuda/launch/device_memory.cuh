// device_memory.cuh — what every launcher needs: CUDA errors turned into CudaError, device
// arrays that free themselves, and the questions asked of the GPU before a launch.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cuda/host/cuda_api.hpp"

namespace fd::cuda {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw CudaError(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

inline void check_launch(const char* what) {
  check(cudaGetLastError(), what);
  check(cudaDeviceSynchronize(), what);
}

// A device array that frees itself.
template <class T>
struct DeviceArray {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit DeviceArray(std::size_t n) : count(n) {
    if (n) check(cudaMalloc(&ptr, n * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(const T* host, std::size_t n) : DeviceArray(n) { upload(host); }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const T* host) {
    if (count) check(cudaMemcpy(ptr, host, count * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  void download(T* host) const {
    if (count) check(cudaMemcpy(host, ptr, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
  }
  std::vector<double> to_doubles() const {
    std::vector<T> h(count);
    download(h.data());
    return std::vector<double>(h.begin(), h.end());
  }
};

inline void require_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw CudaError("no CUDA GPU is present on this machine (flashdemo info says more)");
}

inline std::size_t smem_limit() {
  int optin = 0;
  check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "attribute");
  return std::size_t(optin);
}

// CUDA-event milliseconds of `reps` calls of once() after `warmup` of them, each timed alone.
template <class F>
Timing time_events(F&& once, int warmup, int reps) {
  for (int k = 0; k < warmup; ++k) once();
  check_launch("warm-up");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  Timing t;
  for (int k = 0; k < reps; ++k) {
    check(cudaEventRecord(start), "cudaEventRecord");
    once();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    t.ms.push_back(double(ms));
  }
  check_launch("timing");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

}  // namespace fd::cuda
