// rungs.cu — launching the rungs above the teaching kernel (simt.cuh, mma.cuh).
#include "cuda/rungs.cuh"

namespace fd::cuda {

template <class T>
void rung_forward(const Shape&, const AttnParams&, Variant, Impl impl, const T*, const T*, const T*,
                  T*, T*, T*, KernelTrace*) {
  throw CudaError(std::string("--impl ") + impl_name(impl) + " is not built yet");
}

template <class T>
Timing rung_time(const Shape&, const AttnParams&, Variant, Impl impl, const T*, const T*, const T*,
                 int, int) {
  throw CudaError(std::string("--impl ") + impl_name(impl) + " is not built yet");
}

double gemm_tflops_bf16(index_t, int) {
  throw CudaError("not built yet");
}

template void rung_forward(const Shape&, const AttnParams&, Variant, Impl, const float*,
                           const float*, const float*, float*, float*, float*, KernelTrace*);
template void rung_forward(const Shape&, const AttnParams&, Variant, Impl, const double*,
                           const double*, const double*, double*, double*, double*, KernelTrace*);
template Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const float*,
                          const float*, const float*, int, int);
template Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const double*,
                          const double*, const double*, int, int);

}  // namespace fd::cuda
