// stub.cpp — the GPU entry points in a build without CUDA: each says so, clearly.
#include "cuda/host/cuda_api.hpp"
#include "cuda/host/decode_api.hpp"
#include "cuda/host/ring_api.hpp"
#include "cuda/host/rungs_api.hpp"

namespace fd::cuda {
namespace {
[[noreturn]] void no_cuda() {
  throw CudaError(
      "this flashdemo was built without CUDA (configure with -DFLASHDEMO_CUDA=ON "
      "on a machine with nvcc)");
}
}  // namespace

GpuInfo gpu_info() {
  GpuInfo g;
  g.why = "built without CUDA";
  g.absent = NoGpu::not_built;
  return g;
}

TileSizes default_tiles(index_t, std::size_t) {
  return {16, 16};
}

template <class T>
void forward(const Shape&, const AttnParams&, TileSizes, Variant, Impl, const T*, const T*,
             const T*, T*, T*, T*, KernelTrace*) {
  no_cuda();
}

template <class T>
void backward(const Shape&, const AttnParams&, TileSizes, Variant, Impl, bool, const T*, const T*,
              const T*, const T*, const T*, const T*, const T*, T*, T*, T*, T*) {
  no_cuda();
}

template <class T>
Timing time_kernels(const Shape&, const AttnParams&, TileSizes, Variant, Impl, Pass, bool, const T*,
                    const T*, const T*, const T*, int, int) {
  no_cuda();
}

template <class T>
Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const T*, const T*, const T*, int,
                 int) {
  no_cuda();
}
template Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const float*,
                          const float*, const float*, int, int);

template <class T>
Timing hopper_time_steps(const Shape&, const AttnParams&, Variant, HopperFwdSteps, const T*,
                         const T*, const T*, int, int) {
  no_cuda();
}
template Timing hopper_time_steps(const Shape&, const AttnParams&, Variant, HopperFwdSteps,
                                  const float*, const float*, const float*, int, int);

template <class T>
void hopper_forward_steps(const Shape&, const AttnParams&, Variant, HopperFwdSteps, const T*,
                          const T*, const T*, T*, T*) {
  no_cuda();
}
template void hopper_forward_steps(const Shape&, const AttnParams&, Variant, HopperFwdSteps,
                                   const float*, const float*, const float*, float*, float*);

template <class T>
void hopper_backward_steps(const Shape&, const AttnParams&, Variant, HopperBwdSteps, const T*,
                           const T*, const T*, const T*, const T*, const T*, T*, T*, T*) {
  no_cuda();
}
template void hopper_backward_steps(const Shape&, const AttnParams&, Variant, HopperBwdSteps,
                                    const float*, const float*, const float*, const float*,
                                    const float*, const float*, float*, float*, float*);

template <class T>
Timing hopper_time_backward_steps(const Shape&, const AttnParams&, Variant, HopperBwdSteps,
                                  const T*, const T*, const T*, const T*, int, int) {
  no_cuda();
}
template Timing hopper_time_backward_steps(const Shape&, const AttnParams&, Variant, HopperBwdSteps,
                                           const float*, const float*, const float*, const float*,
                                           int, int);

double gemm_tflops_bf16(index_t, int) {
  no_cuda();
}

DecodeWorkers decode_workers(Precision, index_t, index_t, KvFeed) {
  no_cuda();
}

KvFeed decode_feed(index_t, index_t) {
  no_cuda();
}

DecodeRun decode(const DecodeShape&, const AttnParams&, Precision, index_t, const DecodeInputs&,
                 const std::vector<index_t>&, int, int, KvFeed) {
  no_cuda();
}

CopyBandwidth copy_bandwidth(double, int) {
  no_cuda();
}

bool nccl_built() {
  return false;
}

int device_count() {
  return 0;
}

std::size_t ring_element_bytes(Precision prec) {
  return prec == Precision::fp32 ? 4 : prec == Precision::fp64 ? 8 : 2;
}

RingResult<float> ring_rank(RingTransport&, const RingSchedule&, const AttnParams&, RingPass,
                            Precision, const RingInputs<float>&, RingLink, int) {
  no_cuda();
}

RingResult<float> ring_in_process(const RingSchedule&, const AttnParams&, RingPass, Precision,
                                  const RingInputs<float>&) {
  no_cuda();
}

#define FD_INSTANTIATE(T)                                                                          \
  template void forward(const Shape&, const AttnParams&, TileSizes, Variant, Impl, const T*,       \
                        const T*, const T*, T*, T*, T*, KernelTrace*);                             \
  template void backward(const Shape&, const AttnParams&, TileSizes, Variant, Impl, bool,          \
                         const T*, const T*, const T*, const T*, const T*, const T*, const T*, T*, \
                         T*, T*, T*);                                                              \
  template Timing time_kernels(const Shape&, const AttnParams&, TileSizes, Variant, Impl, Pass,    \
                               bool, const T*, const T*, const T*, const T*, int, int);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::cuda
