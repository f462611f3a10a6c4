// ring.cu — ring attention on GPUs (ring_api.hpp has the contract, ring.cuh the kernels): one
// rank's buffers on its GPU, its two streams and their events, the forward and backward rings, the
// same transfers alone, the links the blocks move by, and NCCL, opened at run time.
//   buffers   Q, dO (E: the rank's rows), KV[2] (E: K then V of the block held, and of the next),
//             O, L, L_lo, D, dQ (fp32), G[2] (fp32: dK then dV of the travelling block, and the
//             next), O_out, dQ_out, dK_out, dV_out (E: the outputs)
//   step t    compute stream C:  c_begin  kernels on KV[t]  c_end  [wait m_end]  mark(t + 1)
//             comm stream M:     [wait c_end(t - 1): KV[t + 1] is free]  shift K, V
//                                (backward: [wait a_end(t): dK, dV done]  shift dK, dV)  m_end
//             so the next block arrives during the step's compute, and the backward's dK, dV
//             travel while its dQ kernel runs
//   times     compute = c_begin .. c_end,  step = mark(t) .. mark(t + 1),  wait = step - compute,
//             comm = the same shifts again on M alone, without compute, step by step
// A shift is send to (r + 1) mod P, receive from (r - 1) mod P: by NCCL, ncclSend and ncclRecv in
// one group on M (GPU to GPU); or, for the one-GPU harness, through the host RingTransport.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if FLASHDEMO_HAS_NCCL
#include <nccl.h>
#endif

#include "cuda/at_scale/ring.cuh"
#include "cuda/host/ring_api.hpp"
#include "cuda/launch/device_memory.cuh"
#include "cuda/primitives/element.cuh"

namespace fd::cuda {
namespace {

constexpr int kChannelKV = 0, kChannelGrad = 1;  // the host link's channels (ring_transport.hpp)

// A non-blocking stream (it never waits for the legacy default stream: every copy below names its
// stream and synchronizes it).
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// `count` timing events.
struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(index_t count) : e(std::size_t(count), nullptr) {
    for (cudaEvent_t& x : e) check(cudaEventCreate(&x), "cudaEventCreate");
  }
  ~Events() {
    for (cudaEvent_t x : e) cudaEventDestroy(x);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](index_t k) const { return e[std::size_t(k)]; }
};

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return double(ms);
}

void record(cudaEvent_t e, cudaStream_t s) {
  check(cudaEventRecord(e, s), "cudaEventRecord");
}

void wait_for(cudaStream_t s, cudaEvent_t e) {
  check(cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent");
}

void sync(cudaStream_t s) {
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

// Host floats (values of E's precision) into E on the device, on stream s, finished on return.
template <class E>
void to_device(E* dst, const std::vector<float>& host, cudaStream_t s) {
  if (host.empty()) return;
  std::vector<E> e(host.size());
  for (std::size_t k = 0; k < host.size(); ++k) e[k] = to_element<E>(host[k]);
  check(cudaMemcpyAsync(dst, e.data(), e.size() * sizeof(E), cudaMemcpyHostToDevice, s), "upload");
  sync(s);
}

// count values of E on the device, as host floats.
template <class E>
std::vector<float> to_host(const E* src, index_t count, cudaStream_t s) {
  std::vector<E> e(static_cast<std::size_t>(count));
  if (count)
    check(cudaMemcpyAsync(e.data(), src, e.size() * sizeof(E), cudaMemcpyDeviceToHost, s),
          "download");
  sync(s);
  return std::vector<float>(e.begin(), e.end());
}

// ---- How the blocks move -------------------------------------------------------------------

class Link {
 public:
  virtual ~Link() = default;
  // Enqueues on `s`: send[0..send_bytes) to rank r + 1, recv[0..recv_bytes) from rank r - 1.
  virtual void shift(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                     cudaStream_t s, int channel) = 0;
  virtual bool timed() const = 0;  // false: a harness whose times mean nothing
};

// Through the host: device -> host, the transport's shift, host -> device; blocking.
class HostLink : public Link {
 public:
  explicit HostLink(RingTransport& net) : net_(net) {}
  void shift(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
             cudaStream_t s, int channel) override {
    out_.resize(send_bytes), in_.resize(recv_bytes);
    if (send_bytes)
      check(cudaMemcpyAsync(out_.data(), send, send_bytes, cudaMemcpyDeviceToHost, s), "shift");
    sync(s);
    net_.wait(net_.start_shift(out_.data(), send_bytes, in_.data(), recv_bytes, channel));
    if (recv_bytes)
      check(cudaMemcpyAsync(recv, in_.data(), recv_bytes, cudaMemcpyHostToDevice, s), "shift");
    sync(s);
  }
  bool timed() const override { return false; }

 private:
  RingTransport& net_;
  std::vector<unsigned char> out_, in_;
};

#if FLASHDEMO_HAS_NCCL
// NCCL's entry points, from libnccl.so.2 opened at run time (dlopen): the tool starts, and the
// package installs, without NCCL; only a ring over several GPUs needs it.
struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetErrorString) error_string;
};

const NcclApi& nccl() {
  static const NcclApi api = [] {  // a failed load throws, and the next call tries again
    void* lib = nullptr;
    for (const char* name : {"libnccl.so.2", "libnccl.so", FLASHDEMO_NCCL_LIBRARY})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib)
      throw CudaError(std::string("NCCL (libnccl.so.2) was not found on the library path: ") +
                      dlerror());
    auto find = [lib](const char* name) {
      void* f = dlsym(lib, name);
      if (!f) throw CudaError(std::string("NCCL was found but has no ") + name);
      return f;
    };
    NcclApi a{};
    a.get_unique_id = reinterpret_cast<decltype(a.get_unique_id)>(find("ncclGetUniqueId"));
    a.comm_init_rank = reinterpret_cast<decltype(a.comm_init_rank)>(find("ncclCommInitRank"));
    a.comm_destroy = reinterpret_cast<decltype(a.comm_destroy)>(find("ncclCommDestroy"));
    a.send = reinterpret_cast<decltype(a.send)>(find("ncclSend"));
    a.recv = reinterpret_cast<decltype(a.recv)>(find("ncclRecv"));
    a.group_start = reinterpret_cast<decltype(a.group_start)>(find("ncclGroupStart"));
    a.group_end = reinterpret_cast<decltype(a.group_end)>(find("ncclGroupEnd"));
    a.error_string = reinterpret_cast<decltype(a.error_string)>(find("ncclGetErrorString"));
    return a;
  }();
  return api;
}

void nccl_check(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess)
    throw CudaError(std::string("NCCL error in ") + what + ": " + nccl().error_string(rc));
}

// GPU to GPU: one NCCL communicator over the ranks, rank 0's unique id broadcast over the host
// transport (MPI); a shift is ncclSend and ncclRecv in one group, so neither waits for the other.
class NcclLink : public Link {
 public:
  explicit NcclLink(RingTransport& net) : rank_(int(net.rank())), ranks_(int(net.ranks())) {
    ncclUniqueId id{};
    if (rank_ == 0) nccl_check(nccl().get_unique_id(&id), "ncclGetUniqueId");
    net.broadcast(&id, sizeof id);
    nccl_check(nccl().comm_init_rank(&comm_, ranks_, id, rank_), "ncclCommInitRank");
  }
  ~NcclLink() override {
    if (comm_) nccl().comm_destroy(comm_);
  }
  void shift(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
             cudaStream_t s, int) override {
    const int next = (rank_ + 1) % ranks_, prev = (rank_ + ranks_ - 1) % ranks_;
    nccl_check(nccl().group_start(), "ncclGroupStart");
    nccl_check(nccl().send(send, send_bytes, ncclChar, next, comm_, s), "ncclSend");
    nccl_check(nccl().recv(recv, recv_bytes, ncclChar, prev, comm_, s), "ncclRecv");
    nccl_check(nccl().group_end(), "ncclGroupEnd");
  }
  bool timed() const override { return true; }

 private:
  int rank_, ranks_;
  ncclComm_t comm_ = nullptr;
};
#endif

std::unique_ptr<Link> make_link(RingTransport& net, RingLink link) {
  if (link == RingLink::host) return std::make_unique<HostLink>(net);
#if FLASHDEMO_HAS_NCCL
  return std::make_unique<NcclLink>(net);
#else
  throw CudaError(
      "this flashdemo was built without NCCL (CMake found no nccl.h): a ring over "
      "several GPUs needs it");
#endif
}

// ---- One rank on its GPU --------------------------------------------------------------------

RingParts parts_of(const RingBlock& b) {
  if (b.parts.size() > 2) throw std::logic_error("ring: a block of more than two ranges");
  RingParts p;
  for (std::size_t k = 0; k < b.parts.size(); ++k)
    p.part[k] = b.parts[k], p.offset[k] = b.offset(k);
  p.count = int(b.parts.size());
  return p;
}

template <class Kernel>
void allow_smem(Kernel kernel, std::size_t bytes) {
  allow_dynamic_smem(kernel, bytes, "the ring's tiles need");
}

unsigned blocks_for(index_t count, unsigned threads) {
  return unsigned((count + threads - 1) / threads);
}

template <class E>
class GpuRank {
 public:
  GpuRank(RingTransport& net, const RingSchedule& s, const AttnParams& p, Precision prec,
          RingPass pass, Link* link)
      : s_(s),
        link_(link),
        r_(net.rank()),
        P_(s.ranks),
        d_(s.d),
        nr_(s.rows[std::size_t(r_)].size()),
        own_(s.keys[std::size_t(r_)].size()),
        max_keys_(max_keys(s)),
        tiles_(default_tiles(s.d, sizeof(float))),
        scale_(float(p.scale_for(s.d))),
        p_in_(prec),
        bwd_(pass == RingPass::bwd),
        Q_(std::size_t(nr_ * d_)),
        dO_(bwd_ ? Q_.count : 0),
        kv0_(std::size_t(2 * max_keys_ * d_)),
        kv1_(kv0_.count),
        O_out_(Q_.count),
        dQ_out_(dO_.count),
        dKV_out_(bwd_ ? std::size_t(2 * own_ * d_) : 0),
        O_(Q_.count),
        L_(std::size_t(nr_)),
        L_lo_(L_.count),
        D_(bwd_ ? L_.count : 0),
        dQ_(dO_.count),
        g0_(bwd_ ? kv0_.count : 0),
        g1_(g0_.count) {}

  RingLocal<float> run(const RingInputs<float>& in) {
    const RingBlock& rows = s_.rows[std::size_t(r_)];
    const RingBlock& keys = s_.keys[std::size_t(r_)];
    const std::vector<float> K = ring_take(keys, in.K, d_), V = ring_take(keys, in.V, d_);
    to_device(Q_.ptr, ring_take(rows, in.Q, d_), c_.s);
    if (bwd_) to_device(dO_.ptr, ring_take(rows, in.dO, d_), c_.s);
    if (link_ && link_->timed()) warm_up();
    RingLocal<float> mine;
    mine.forward = forward_ring(K, V);
    store(O_.ptr, O_out_.ptr, nr_ * d_, 1.0f);
    mine.O = to_host(O_out_.ptr, nr_ * d_, c_.s);
    mine.L = to_host(L_.ptr, nr_, c_.s);
    mine.forward.comm = comm_ring(RingPass::fwd);
    if (!bwd_) return mine;
    mine.backward = backward_ring(K, V);
    mine.dQ = to_host(dQ_out_.ptr, nr_ * d_, c_.s);
    mine.dKV = to_host(dKV_out_.ptr, 2 * own_ * d_, c_.s);
    mine.backward.comm = comm_ring(RingPass::bwd);
    return mine;
  }

 private:
  static index_t max_keys(const RingSchedule& s) {
    index_t most = 0;
    for (const RingBlock& b : s.keys) most = std::max(most, b.size());
    return most;
  }
  E* kv(index_t t) { return t % 2 ? kv1_.ptr : kv0_.ptr; }
  float* grad(index_t t) { return t % 2 ? g1_.ptr : g0_.ptr; }
  const RingBlock& block_at(index_t t) const {
    return s_.keys[std::size_t(s_.at(r_, t % P_).block)];
  }
  std::size_t kv_bytes(index_t t) const {
    return std::size_t(2 * block_at(t).size() * d_) * sizeof(E);
  }
  std::size_t grad_bytes(index_t t) const {
    return std::size_t(2 * block_at(t).size() * d_) * sizeof(float);
  }

  // This rank's own block, K then V, into KV[0].
  void upload_own(const std::vector<float>& K, const std::vector<float>& V) {
    to_device(kv0_.ptr, K, c_.s);
    to_device(kv0_.ptr + own_ * d_, V, c_.s);
  }

  // NCCL makes its connections on the first transfer to a peer: one shift before the timed rings.
  void warm_up() {
    if (P_ == 1) return;
    link_->shift(kv0_.ptr, kv_bytes(0), kv1_.ptr, kv_bytes(1), m_.s, kChannelKV);
    sync(m_.s);
  }

  RingStepArgs<E> args(index_t t) {
    const index_t nk = block_at(t).size();
    float* g = grad(t);
    return RingStepArgs<E>{parts_of(s_.rows[std::size_t(r_)]),
                           parts_of(block_at(t)),
                           d_,
                           tiles_.Br,
                           tiles_.Bc,
                           s_.mask,
                           scale_,
                           p_in_,
                           Q_.ptr,
                           dO_.ptr,
                           kv(t),
                           kv(t) + nk * d_,
                           O_.ptr,
                           L_.ptr,
                           L_lo_.ptr,
                           D_.ptr,
                           dQ_.ptr,
                           g,
                           g ? g + nk * d_ : nullptr};
  }

  std::size_t floats(index_t count) const { return std::size_t(count) * sizeof(float); }

  void launch_forward(const RingStepArgs<E>& a) {
    const index_t ld = padded(d_), Br = a.Br, Bc = a.Bc;
    const std::size_t bytes = floats((2 * Br + 2 * Bc) * ld + Br * Bc);
    allow_smem(ring_forward_kernel<E>, bytes);
    const unsigned grid = unsigned(tiles_of(a.rows, Br));
    if (grid) ring_forward_kernel<E><<<grid, unsigned(Br), bytes, c_.s>>>(a);
    check(cudaGetLastError(), "the ring's forward kernel");
  }

  void launch_dkdv(const RingStepArgs<E>& a) {
    const index_t ld = padded(d_), Br = a.Br, Bc = a.Bc;
    const std::size_t bytes = floats(4 * Bc * ld + 2 * Br * ld + 3 * Br);
    allow_smem(ring_dkdv_kernel<E>, bytes);
    const unsigned grid = unsigned(tiles_of(a.keys, Bc));
    if (grid) ring_dkdv_kernel<E><<<grid, unsigned(Bc), bytes, c_.s>>>(a);
    check(cudaGetLastError(), "the ring's dK, dV kernel");
  }

  void launch_dq(const RingStepArgs<E>& a) {
    const index_t ld = padded(d_), Br = a.Br, Bc = a.Bc;
    const std::size_t bytes = floats(3 * Br * ld + 2 * Bc * ld);
    allow_smem(ring_dq_kernel<E>, bytes);
    const unsigned grid = unsigned(tiles_of(a.rows, Br));
    if (grid) ring_dq_kernel<E><<<grid, unsigned(Br), bytes, c_.s>>>(a);
    check(cudaGetLastError(), "the ring's dQ kernel");
  }

  // out = round_E(factor x), count values, on C.
  void store(const float* x, E* out, index_t count, float factor) {
    if (count)
      ring_store_kernel<E><<<blocks_for(count, 256), 256, 0, c_.s>>>(x, out, count, factor);
    check(cudaGetLastError(), "storing the ring's outputs");
  }

  void fill(float* x, index_t count, float value) {
    if (count) ring_fill_kernel<float><<<blocks_for(count, 256), 256, 0, c_.s>>>(x, count, value);
    check(cudaGetLastError(), "filling");
  }

  // Per-step times from the events: compute c_begin .. c_end, the step mark(t) .. mark(t + 1).
  RingTimes times_of(const Events& c_begin, const Events& c_end, const Events& mark) const {
    RingTimes t;
    for (index_t k = 0; k < P_; ++k) {
      t.compute.push_back(elapsed_ms(c_begin[k], c_end[k]));
      t.step.push_back(elapsed_ms(mark[k], mark[k + 1]));
      t.wait.push_back(std::max(0.0, t.step.back() - t.compute.back()));
    }
    return t;
  }

  // The forward ring: at step t the block of rank (r - t) mod P in KV[t mod 2], the next one on
  // its way into the other buffer while this one is computed.
  RingTimes forward_ring(const std::vector<float>& K, const std::vector<float>& V) {
    upload_own(K, V);
    check(cudaMemsetAsync(O_.ptr, 0, floats(nr_ * d_), c_.s), "cudaMemset");  // O = 0
    fill(L_.ptr, nr_, neg_inf<float>());                                      // L = -inf
    check(cudaMemsetAsync(L_lo_.ptr, 0, floats(nr_), c_.s), "cudaMemset");
    Events c_begin(P_), c_end(P_), m_end(P_), mark(P_ + 1);
    record(mark[0], c_.s);
    for (index_t t = 0; t < P_; ++t) {
      record(c_begin[t], c_.s);
      launch_forward(args(t));
      record(c_end[t], c_.s);
      if (t < P_ - 1) {                           // block t on to r + 1, block t + 1 in from r - 1
        if (t > 0) wait_for(m_.s, c_end[t - 1]);  // KV[t + 1] was read by step t - 1
        link_->shift(kv(t), kv_bytes(t), kv(t + 1), kv_bytes(t + 1), m_.s, kChannelKV);
        record(m_end[t], m_.s);
        wait_for(c_.s, m_end[t]);  // step t + 1 computes on what arrived
      }
      record(mark[t + 1], c_.s);
    }
    sync(c_.s), sync(m_.s);
    return times_of(c_begin, c_end, mark);
  }

  // The backward ring: K, V as in the forward; the block's dK, dV (zero at the start, fp32) go on
  // once the dK, dV kernel is done, while the dQ kernel runs; after step P - 1 they reach home.
  RingTimes backward_ring(const std::vector<float>& K, const std::vector<float>& V) {
    upload_own(K, V);
    check(cudaMemsetAsync(g0_.ptr, 0, floats(2 * own_ * d_), c_.s), "cudaMemset");
    check(cudaMemsetAsync(dQ_.ptr, 0, floats(nr_ * d_), c_.s), "cudaMemset");
    launch_d();
    Events c_begin(P_), a_end(P_), c_end(P_), m_end(P_), mark(P_ + 1);
    record(mark[0], c_.s);
    for (index_t t = 0; t < P_; ++t) {
      const RingStepArgs<E> a = args(t);
      record(c_begin[t], c_.s);
      launch_dkdv(a);
      record(a_end[t], c_.s);
      launch_dq(a);
      record(c_end[t], c_.s);
      if (P_ > 1) {
        if (t < P_ - 1) {
          if (t > 0) wait_for(m_.s, c_end[t - 1]);  // KV[t + 1] was read by step t - 1
          link_->shift(kv(t), kv_bytes(t), kv(t + 1), kv_bytes(t + 1), m_.s, kChannelKV);
        }
        wait_for(m_.s, a_end[t]);  // dK, dV of block t are final for this rank
        link_->shift(grad(t), grad_bytes(t), grad(t + 1), grad_bytes(t + 1), m_.s, kChannelGrad);
        record(m_end[t], m_.s);
        wait_for(c_.s, m_end[t]);
      }
      record(mark[t + 1], c_.s);
    }
    const float* home = grad(P_ > 1 ? P_ : 0);      // this rank's own block's dK, dV
    store(dQ_.ptr, dQ_out_.ptr, nr_ * d_, scale_);  // dQ = scale dS K
    store(home, dKV_out_.ptr, own_ * d_, scale_);   // dK = scale dS^T Q
    store(home + own_ * d_, dKV_out_.ptr + own_ * d_, own_ * d_, 1.0f);  // dV = P^T dO
    sync(c_.s), sync(m_.s);
    return times_of(c_begin, c_end, mark);
  }

  // D = rowsum(dO * O), Br rows a block, from the forward's O in fp32 (O_), not O as stored in E
  // (O_out): E's rounding of O would enter D, and dS = P (dP - D) cancels it against dP, which
  // has no such error (in fp16, n = 7, m = 3, d = 256, dK went past the rule by 1.25x that way;
  // with O in fp32 an emulation on the CPU passes).
  void launch_d() {
    const unsigned threads = unsigned(tiles_.Br);
    const std::size_t bytes = floats(2 * tiles_.Br * padded(d_));
    allow_smem(ring_d_kernel<E>, bytes);
    if (nr_)
      ring_d_kernel<E>
          <<<blocks_for(nr_, threads), threads, bytes, c_.s>>>(O_.ptr, dO_.ptr, D_.ptr, nr_, d_);
    check(cudaGetLastError(), "the ring's D kernel");
  }

  // The same shifts as a pass's ring, on M alone, without compute: their time per step. The
  // buffers' contents are spent by then (the outputs are home).
  std::vector<double> comm_ring(RingPass pass) {
    std::vector<double> ms(std::size_t(P_), 0.0);
    if (P_ == 1) return ms;  // nothing travels
    Events begin(P_), end(P_);
    for (index_t t = 0; t < P_; ++t) {
      record(begin[t], m_.s);
      if (t < P_ - 1)
        link_->shift(kv(t), kv_bytes(t), kv(t + 1), kv_bytes(t + 1), m_.s, kChannelKV);
      if (pass == RingPass::bwd)
        link_->shift(grad(t), grad_bytes(t), grad(t + 1), grad_bytes(t + 1), m_.s, kChannelGrad);
      record(end[t], m_.s);
    }
    sync(m_.s);
    for (index_t t = 0; t < P_; ++t) ms[std::size_t(t)] = elapsed_ms(begin[t], end[t]);
    return ms;
  }

  const RingSchedule& s_;
  Link* link_;
  index_t r_, P_, d_, nr_, own_, max_keys_;
  TileSizes tiles_;
  float scale_;
  Precision p_in_;
  bool bwd_;
  Stream c_, m_;  // compute, communication
  DeviceArray<E> Q_, dO_, kv0_, kv1_, O_out_, dQ_out_, dKV_out_;
  DeviceArray<float> O_, L_, L_lo_, D_, dQ_, g0_, g1_;
};

template <class E>
struct Element {
  using type = E;
};

// Calls f(Element<E>{}) with the element type of prec.
template <class F>
auto with_element(Precision prec, F&& f) {
  if (prec == Precision::bf16) return f(Element<__nv_bfloat16>{});
  if (prec == Precision::fp16) return f(Element<__half>{});
  if (prec == Precision::fp32) return f(Element<float>{});
  throw CudaError(std::string("the GPU ring reads fp32, bf16 or fp16, not ") +
                  precision_name(prec));
}

}  // namespace

bool nccl_built() {
  return FLASHDEMO_HAS_NCCL != 0;
}

int device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::size_t ring_element_bytes(Precision prec) {
  return prec == Precision::fp32 ? 4 : prec == Precision::fp64 ? 8 : 2;
}

RingResult<float> ring_rank(RingTransport& net, const RingSchedule& s, const AttnParams& p,
                            RingPass pass, Precision prec, const RingInputs<float>& in,
                            RingLink link, int device) {
  require_gpu();
  if (net.ranks() != s.ranks) throw std::invalid_argument("ring: the schedule is for other ranks");
  if (device < 0 || device >= device_count())
    throw CudaError("GPU " + std::to_string(device) + " is not present");
  check(cudaSetDevice(device), "cudaSetDevice");
  const std::unique_ptr<Link> l = s.ranks > 1 ? make_link(net, link) : nullptr;
  const RingLocal<float> mine = with_element(prec, [&](auto element) {
    using E = typename decltype(element)::type;
    GpuRank<E> rank(net, s, p, prec, pass, l.get());
    return rank.run(in);
  });
  return ring_gather(net, s, pass, mine);
}

RingResult<float> ring_in_process(const RingSchedule& s, const AttnParams& p, RingPass pass,
                                  Precision prec, const RingInputs<float>& in) {
  require_gpu();
  return ring_threads<float>(s.ranks, [&](RingTransport& net) {
    return ring_rank(net, s, p, pass, prec, in, RingLink::host, 0);
  });
}

}  // namespace fd::cuda
