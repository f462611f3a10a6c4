// decode.cu — launching the split-KV decode kernel (decode.cuh): the inputs in the element type on
// the device (uploaded, or drawn there), the kernel chosen by (element type, d, rows per group),
// its occupancy for the plan, its timing, and the device-to-device copy it is measured against.
//   element type E:  float, __nv_bfloat16 or __half (fp32, bf16, fp16)
//   kernel:          decode_kernel<E, d, R, feed>, d of DecodeHeadDims, R = 1 (n = 1) or 4 query
//                    rows, K and V fed by the lanes' loads (plain, or a step ahead) or by bulk
//                    copies into shared memory (its dynamic shared memory: DecodeBulk::kBytes)
//   grid:            units x S blocks of 128 threads, the S splits of a unit side by side
//   device draw:     x_i = sqrt(-2 ln u1) cos(2 pi u2), (u1, u2) from splitmix64 of (seed, array,
//                    i), rounded to E: normal values, not torch.randn's (that is the host's)
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "cuda/at_scale/decode.cuh"
#include "cuda/host/decode_api.hpp"
#include "cuda/host/head_dims.hpp"
#include "cuda/launch/device_memory.cuh"
#include "cuda/launch/draw.cuh"

namespace fd::cuda {
namespace {

template <class E>
std::vector<E> converted(const float* x, std::size_t count) {
  std::vector<E> out(count);
  for (std::size_t k = 0; k < count; ++k) out[k] = to_element<E>(x[k]);
  return out;
}

template <class E>
std::vector<float> floats(const DeviceArray<E>& x, std::size_t offset, std::size_t count) {
  std::vector<E> h(count);
  if (count)
    check(cudaMemcpy(h.data(), x.ptr + offset, count * sizeof(E), cudaMemcpyDeviceToHost),
          "download");
  return std::vector<float>(h.begin(), h.end());
}

// The problem on the device: Q, K, V in E, the outputs, the partials, the units' counters.
template <class E>
struct DecodeDevice {
  DecodeShape s;
  Tiling tiling;
  index_t splits;
  DeviceArray<E> Q, K, V, O;
  DeviceArray<float> L, O_part, L_part;
  DeviceArray<unsigned> done;
  DecodeDevice(const DecodeShape& shape, index_t num_splits)
      : s(shape),
        tiling(decode_tiling(s, decode_tiles(s.n))),
        splits(num_splits),
        Q(std::size_t(s.heads * s.n * s.d)),
        K(std::size_t(s.heads * s.m * s.d)),
        V(std::size_t(s.heads * s.m * s.d)),
        O(Q.count),
        L(std::size_t(s.heads * s.n)),
        O_part(std::size_t(s.heads * num_splits * s.n * s.d)),
        L_part(std::size_t(s.heads * num_splits * s.n)),
        done(std::size_t(s.heads * tiling.Tr())) {
    if (done.count) check(cudaMemset(done.ptr, 0, done.count * sizeof(unsigned)), "cudaMemset");
  }
  index_t units() const { return s.heads * tiling.Tr(); }
};

template <class E>
struct Element {
  using type = E;
};

// The kernel of a feed with the dynamic shared memory it is launched with (allowed past 48 KiB).
template <class E>
struct FedKernel {
  void (*fn)(const DecodeArgs<E>);
  int smem_bytes;
};

template <class E, int kD, int R>
FedKernel<E> kernel_for(KvFeed feed) {
  FedKernel<E> k{decode_kernel<E, kD, R, KvFeed::plain>, 0};
  if (feed == KvFeed::ahead) k.fn = decode_kernel<E, kD, R, KvFeed::ahead>;
  if (feed == KvFeed::bulk) {
    if (compute_major() < 9)
      throw CudaError("the decode's bulk feed (cp.async.bulk) needs an sm_90 GPU");
    k = {decode_kernel<E, kD, R, KvFeed::bulk>, DecodeBulk<E, kD>::kBytes};
  }
  allow_dynamic_smem(k.fn, std::size_t(k.smem_bytes), "the decode kernel needs");
  return k;
}

// Calls f(FedKernel<E>) with the compile-time choices of this case (after the refusal): E by
// the precision, d of DecodeHeadDims (head_dims.hpp), R rows per group, and the feed.
template <class F>
void with_kernel(Precision p, index_t d, index_t n, KvFeed feed, F&& f) {
  const Refusal no = decode_refuses(d, p);
  if (no) throw CudaError(no.english);
  auto by_d = [&](auto element) {
    using E = typename decltype(element)::type;
    with_head_dim(DecodeHeadDims{}, d, [&](auto dim) {
      constexpr int kD = decltype(dim)::value;
      f(n == 1 ? kernel_for<E, kD, 1>(feed) : kernel_for<E, kD, 4>(feed));
    });
  };
  if (p == Precision::bf16) return by_d(Element<__nv_bfloat16>{});
  if (p == Precision::fp16) return by_d(Element<__half>{});
  return by_d(Element<float>{});
}

template <class E>
void launch(const DecodeDevice<E>& p, const AttnParams& params, FedKernel<E> kernel) {
  if (p.units() == 0) return;
  if (p.units() * p.splits > index_t(0x7fffffff))
    throw CudaError("more than 2^31 - 1 blocks (heads x row groups x splits)");
  const float scale = float(params.scale_for(p.s.d));
  const DecodeArgs<E> a{p.Q.ptr,
                        p.K.ptr,
                        p.V.ptr,
                        p.O.ptr,
                        p.L.ptr,
                        p.O_part.ptr,
                        p.L_part.ptr,
                        p.done.ptr,
                        p.s.n,
                        p.s.m,
                        p.splits,
                        p.tiling,
                        params.mask_for(p.s.n, p.s.m),
                        scale * 1.4426950408889634f};
  kernel.fn<<<unsigned(p.units() * p.splits), DecodeLayout<E, 64>::kThreads, kernel.smem_bytes>>>(
      a);
}

template <class E>
DecodeRun run_with(const DecodeShape& s, const AttnParams& params, index_t num_splits,
                   const DecodeInputs& in, const std::vector<index_t>& heads, int warmup, int reps,
                   FedKernel<E> kernel) {
  DecodeDevice<E> p(s, num_splits);
  if (in.Q) {
    p.Q.upload(converted<E>(in.Q, p.Q.count).data());
    p.K.upload(converted<E>(in.K, p.K.count).data());
    p.V.upload(converted<E>(in.V, p.V.count).data());
  } else {
    draw_normal(p.Q, in.seed, 0), draw_normal(p.K, in.seed, 1), draw_normal(p.V, in.seed, 2);
  }
  launch(p, params, kernel);
  check_launch("the decode kernel");
  DecodeRun r;
  r.O = floats(p.O, 0, p.O.count);
  r.L.resize(p.L.count), r.O_part.resize(p.O_part.count), r.L_part.resize(p.L_part.count);
  p.L.download(r.L.data());
  p.O_part.download(r.O_part.data());
  p.L_part.download(r.L_part.data());
  const std::size_t nq = std::size_t(s.n * s.d), nk = std::size_t(s.m * s.d);
  for (index_t h : heads) {
    const std::vector<float> q = floats(p.Q, std::size_t(h) * nq, nq),
                             k = floats(p.K, std::size_t(h) * nk, nk),
                             v = floats(p.V, std::size_t(h) * nk, nk);
    r.Q.insert(r.Q.end(), q.begin(), q.end());
    r.K.insert(r.K.end(), k.begin(), k.end());
    r.V.insert(r.V.end(), v.begin(), v.end());
  }
  if (reps > 0) r.ms = time_events([&] { launch(p, params, kernel); }, warmup, reps).ms;
  return r;
}

}  // namespace

DecodeWorkers decode_workers(Precision p, index_t d, index_t n, KvFeed feed) {
  require_gpu();
  DecodeWorkers w;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  w.gpu = prop.name;
  w.sms = prop.multiProcessorCount;
  with_kernel(p, d, n, feed, [&](auto kernel) {
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&w.resident_per_sm, kernel.fn, 128,
                                                        std::size_t(kernel.smem_bytes)),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  });
  w.blocks_per_sm = std::min(w.resident_per_sm, kDecodePlanBlocksPerSm);
  return w;
}

KvFeed decode_feed(index_t m, index_t splits) {
  require_gpu();
  const bool long_splits = splits >= 1 && m / splits >= kBulkMinSplitKeys;
  return long_splits && compute_major() >= 9 ? KvFeed::bulk : KvFeed::ahead;
}

DecodeRun decode(const DecodeShape& s, const AttnParams& p, Precision prec, index_t splits,
                 const DecodeInputs& in, const std::vector<index_t>& heads, int warmup, int reps,
                 KvFeed feed) {
  require_gpu();
  const Tiling t = decode_tiling(s, decode_tiles(s.n));
  if (splits < 1 || splits > std::max<index_t>(1, t.Tc()) || splits > kMaxSplits)
    throw CudaError("splits must lie in 1 .. min(the number of key tiles, 128)");
  DecodeRun run;
  with_kernel(prec, s.d, s.n, feed,
              [&](auto kernel) { run = run_with(s, p, splits, in, heads, warmup, reps, kernel); });
  return run;
}

CopyBandwidth copy_bandwidth(double bytes, int reps) {
  require_gpu();
  CopyBandwidth c;
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  const std::size_t count = std::min(std::size_t(bytes), free / 3) / 16 * 16;  // two buffers
  c.bytes = double(count);
  DeviceArray<char> from(count), to(count);
  check(cudaMemset(from.ptr, 1, count), "cudaMemset");
  std::vector<double> ms =
      time_events(
          [&] {
            check(cudaMemcpyAsync(to.ptr, from.ptr, count, cudaMemcpyDeviceToDevice),
                  "cudaMemcpyAsync");
          },
          1, std::max(1, reps))
          .ms;
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  c.median_ms = ms[ms.size() / 2];
  c.tbps = 2.0 * c.bytes / (c.median_ms * 1e-3) / 1e12;  // read + written
  return c;
}

}  // namespace fd::cuda
