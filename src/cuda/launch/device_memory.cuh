// device_memory.cuh — what every launcher needs: CUDA errors turned into CudaError, device
// arrays that free themselves, and the questions asked of the GPU before a launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <memory>
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

// The major compute capability of device 0 (9 on Hopper: what sm_90's instructions need).
inline int compute_major() {
  int major = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0),
        "cudaDeviceGetAttribute");
  return major;
}

inline std::size_t smem_limit() {
  int optin = 0;
  check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "attribute");
  return std::size_t(optin);
}

// Raises a kernel's dynamic shared-memory limit to `bytes`, or throws "<who> need(s) N KB of shared
// memory, more than the GPU's M KB<advice>" where the GPU has less.
template <class Kernel>
void allow_dynamic_smem(Kernel kernel, std::size_t bytes, const std::string& who,
                        const std::string& advice = "") {
  if (bytes > smem_limit())
    throw CudaError(who + " " + std::to_string(bytes / 1024) +
                    " KB of shared memory, more than the GPU's " +
                    std::to_string(smem_limit() / 1024) + " KB" + advice);
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
        "cudaFuncSetAttribute");
}

// What a timed call finds in L2: nothing of its own. Before each timed call, time_events writes
// a buffer of the current GPU (256 MiB, five times the H200's 50 MiB L2; less where free memory
// is short), as triton.testing.do_bench writes its own before each call it times: the PyTorch
// figures that the comparison scripts set beside ours are timed that way.
inline DeviceArray<char>& l2_flush_buffer() {
  static std::map<int, std::unique_ptr<DeviceArray<char>>> buffers;  // one a device
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::unique_ptr<DeviceArray<char>>& buffer = buffers[device];
  if (!buffer) {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    buffer = std::make_unique<DeviceArray<char>>(
        std::min<std::size_t>(std::size_t(256) << 20, free / 8));
  }
  return *buffer;
}

// CUDA events that destroy themselves, however the timing ends.
struct Events {
  std::vector<cudaEvent_t> start, stop;
  explicit Events(std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) {
      start.push_back(make()), stop.push_back(make());
    }
  }
  ~Events() {
    for (cudaEvent_t e : start) cudaEventDestroy(e);
    for (cudaEvent_t e : stop) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  static cudaEvent_t make() {
    cudaEvent_t e = nullptr;
    check(cudaEventCreate(&e), "cudaEventCreate");
    return e;
  }
};

// CUDA-event milliseconds of `reps` calls of once() after `warmup` of them, timed as
// triton.testing.do_bench times a call: L2 flushed before each (outside its events), all the
// calls queued one after the other and one wait at the end, so that the host's time to issue a
// call (its launches, tensor maps, attributes) overlaps the GPU's work on the flush and the call
// before, and only the GPU's time between a call's two events is counted. (A once() that waited
// for the GPU inside would have the host's time after that wait counted; none does.)
template <class F>
Timing time_events(F&& once, int warmup, int reps) {
  for (int k = 0; k < warmup; ++k) once();
  check_launch("warm-up");
  DeviceArray<char>& flush = l2_flush_buffer();
  Events events(std::size_t(std::max(reps, 0)));
  for (std::size_t k = 0; k < events.start.size(); ++k) {
    check(cudaMemsetAsync(flush.ptr, int(k & 1), flush.count), "cudaMemsetAsync");
    check(cudaEventRecord(events.start[k]), "cudaEventRecord");
    once();
    check(cudaEventRecord(events.stop[k]), "cudaEventRecord");
  }
  check_launch("timing");
  Timing t;
  for (std::size_t k = 0; k < events.start.size(); ++k) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events.start[k], events.stop[k]), "cudaEventElapsedTime");
    t.ms.push_back(double(ms));
  }
  return t;
}

}  // namespace fd::cuda
