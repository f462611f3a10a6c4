// ring.cpp — ring attention (ring.hpp has the equations, the blocks and the schedule).
#include "flashdemo/at_scale/ring.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

#include "flashdemo/at_scale/ring_transport.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/ring_math.hpp"
#include "flashdemo/host_device/tile_math.hpp"

namespace fd {

index_t RingBlock::size() const {
  index_t total = 0;
  for (const Range& r : parts) total += r.size();
  return total;
}

index_t RingBlock::offset(std::size_t part) const {
  index_t total = 0;
  for (std::size_t p = 0; p < part; ++p) total += parts[p].size();
  return total;
}

RingBlock ring_block(index_t count, index_t ranks, RingLayout layout, index_t r) {
  auto cut = [count](index_t c, index_t pieces) {
    return Range{c * count / pieces, (c + 1) * count / pieces};
  };
  if (layout == RingLayout::contiguous) return RingBlock{{cut(r, ranks)}};
  return RingBlock{{cut(r, 2 * ranks), cut(2 * ranks - 1 - r, 2 * ranks)}};  // chunks r, 2P-1-r
}

namespace {

// The pairs of rank r's rows against block j's keys, and what the step computes of them.
RingStep make_step(const RingSchedule& s, index_t r, index_t j) {
  RingStep step;
  step.block = j;
  for (const Range& a : s.rows[std::size_t(r)].parts)
    for (const Range& b : s.keys[std::size_t(j)].parts) {
      if (a.size() == 0 || b.size() == 0) continue;
      const TileKind kind = s.mask.classify(a.begin, a.end, b.begin, b.end);
      step.pairs.push_back({a, b, kind});
      if (kind == TileKind::skipped) {
        ++step.skipped;
        continue;
      }
      ++step.computed;
      for (index_t q = a.begin; q < a.end; ++q)
        step.entries += double(std::min(b.end, std::max(b.begin, s.mask.visible_keys(q))) -
                               b.begin);  // the keys of b that row q sees
    }
  return step;
}

}  // namespace

RingSchedule ring_schedule(index_t n, index_t m, index_t d, index_t ranks, RingLayout layout,
                           const Mask& mask) {
  if (ranks < 1 || n < 1 || m < 1 || d < 1)
    throw std::invalid_argument("ring: ranks, n, m and d must be at least 1");
  RingSchedule s;
  s.ranks = ranks, s.n = n, s.m = m, s.d = d, s.layout = layout, s.mask = mask;
  for (index_t r = 0; r < ranks; ++r) {
    s.rows.push_back(ring_block(n, ranks, layout, r));
    s.keys.push_back(ring_block(m, ranks, layout, r));
  }
  for (index_t r = 0; r < ranks; ++r)
    for (index_t t = 0; t < ranks; ++t) s.steps.push_back(make_step(s, r, (r - t + ranks) % ranks));
  return s;
}

double RingSchedule::bytes_sent(index_t r, index_t s, RingPass pass, std::size_t bytes) const {
  return bytes_sent(r, s, pass, bytes, bytes);
}

double RingSchedule::bytes_sent(index_t r, index_t s, RingPass pass, std::size_t bytes,
                                std::size_t grad_bytes) const {
  const double values = double(keys[std::size_t(at(r, s).block)].size()) * double(d);
  const double kv = 2 * values * double(bytes), grad = 2 * values * double(grad_bytes);
  if (pass == RingPass::fwd) return s < ranks - 1 ? kv : 0;  // K, V; nothing after the last
  return s < ranks - 1 ? kv + grad : grad;                   // K, V, dK, dV; then dK, dV go home
}

index_t RingSchedule::computed(index_t r) const {
  index_t total = 0;
  for (index_t t = 0; t < ranks; ++t) total += at(r, t).computed;
  return total;
}

index_t RingSchedule::skipped(index_t r) const {
  index_t total = 0;
  for (index_t t = 0; t < ranks; ++t) total += at(r, t).skipped;
  return total;
}

namespace {

// Calls f(q, i, b, k0, cols, kl) for every tile of at most Bc keys that row q (local row i) sees
// of the block: part b, global keys [k0, k0 + cols), local row kl of the first. Pairs the mask
// hides wholly are skipped, and in the others the keys past the row's last visible one.
template <class F>
void for_each_tile(const RingSchedule& s, const RingBlock& rows, const RingBlock& keys, F&& f) {
  for (std::size_t a = 0; a < rows.parts.size(); ++a) {
    const Range ra = rows.parts[a];
    for (index_t q = ra.begin; q < ra.end; ++q) {
      const index_t i = rows.offset(a) + (q - ra.begin), seen = s.mask.visible_keys(q);
      f.row_begin(i);
      for (std::size_t b = 0; b < keys.parts.size(); ++b) {
        const Range rb = keys.parts[b];
        if (rb.size() == 0 ||
            s.mask.classify(ra.begin, ra.end, rb.begin, rb.end) == TileKind::skipped)
          continue;
        for (index_t k0 = rb.begin; k0 < std::min(rb.end, seen); k0 += kRingKeyTile)
          f.tile(q, i, k0, std::min(kRingKeyTile, rb.end - k0), keys.offset(b) + (k0 - rb.begin));
      }
      f.row_end(i);
    }
  }
}

template <class T>
struct ForwardRows {  // the online softmax of one row over the step's keys, folded at its end
  const T *Q, *K, *V;
  T *O, *L, *L_lo;
  index_t d;
  T scale;
  const Mask& mask;
  RowState<T> st{};
  std::vector<T> scores = std::vector<T>(std::size_t(kRingKeyTile)), O_s = std::vector<T>(d);

  void row_begin(index_t) { st = RowState<T>{}, std::fill(O_s.begin(), O_s.end(), T(0)); }
  void tile(index_t q, index_t i, index_t k0, index_t cols, index_t kl) {
    score_row(Q + i * d, K + kl * d, d, k0, cols, d, scale, mask, q, scores.data());  // S, masked
    update_row(st, scores.data(), V + kl * d, d, cols, d, O_s.data());  // (m, l, O_s) <- tile
  }
  void row_end(index_t i) { fold_row(st, O_s.data(), O + i * d, L[i], L_lo[i], d); }
};

template <class T>
struct BackwardRows {  // FlashAttention-2's backward of one row against the step's keys
  RingRows<T> in;
  const T *K, *V;
  T *dQ, *dK, *dV;
  index_t d;
  T scale;
  const Mask& mask;
  std::vector<T> p = std::vector<T>(std::size_t(kRingKeyTile));

  void row_begin(index_t) {}
  void row_end(index_t) {}
  void tile(index_t q, index_t i, index_t k0, index_t cols, index_t kl) {
    const T *q_row = in.Q + i * d, *do_row = in.dO + i * d;
    T* dq_row = dQ + i * d;
    score_row(q_row, K + kl * d, d, k0, cols, d, scale, mask, q, p.data());  // S (masked: -inf)
    for (index_t c = 0; c < cols; ++c) {
      const index_t k = kl + c;  // P = exp(S - L), dS = P (dP - D)
      const PairGrad<T> g =
          pair_grad(p[std::size_t(c)], do_row, V + k * d, d, in.L[i], in.L_lo[i], in.D[i]);
      for (index_t x = 0; x < d; ++x) {
        dV[k * d + x] = fmadd(g.p, do_row[x], dV[k * d + x]);  // dV += P^T dO
        dq_row[x] = fmadd(g.ds, K[k * d + x], dq_row[x]);      // dQ += dS K   (scale: at the end)
        dK[k * d + x] = fmadd(g.ds, q_row[x], dK[k * d + x]);  // dK += dS^T Q (scale: at the end)
      }
    }
  }
};

}  // namespace

template <class T>
void ring_forward_step(const RingSchedule& s, const AttnParams& p, const RingBlock& rows,
                       const RingBlock& keys, const T* Q, const T* KV, T* O, T* L, T* L_lo) {
  const index_t d = s.d;
  ForwardRows<T> f{Q, KV, KV + keys.size() * d, O, L, L_lo, d, T(p.scale_for(d)), s.mask};
  for_each_tile(s, rows, keys, f);
}

template <class T>
void ring_backward_step(const RingSchedule& s, const AttnParams& p, const RingBlock& rows,
                        const RingBlock& keys, const RingRows<T>& in, const T* KV, T* dQ, T* dKV) {
  const index_t d = s.d, nk = keys.size();
  BackwardRows<T> b{in, KV, KV + nk * d, dQ, dKV, dKV + nk * d, d, T(p.scale_for(d)), s.mask};
  for_each_tile(s, rows, keys, b);
}

template <class T>
std::vector<T> ring_take(const RingBlock& block, const T* X, index_t cols) {
  std::vector<T> out;
  for (const Range& r : block.parts) out.insert(out.end(), X + r.begin * cols, X + r.end * cols);
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

constexpr int kChannelKV = 0, kChannelGrad = 1;

// K then V of a block: what travels.
template <class T>
std::vector<T> take_kv(const RingBlock& keys, const T* K, const T* V, index_t d) {
  std::vector<T> kv = ring_take(keys, K, d);
  const std::vector<T> v = ring_take(keys, V, d);
  kv.insert(kv.end(), v.begin(), v.end());
  return kv;
}

template <class T>
std::size_t bytes_of(const std::vector<T>& x) {
  return x.size() * sizeof(T);
}

// Rank 0: the blocks of every rank (blocks[r] of rank r, `per` values a position), put back into
// global order in `out` (count x per values); elsewhere `out` is left as it is.
template <class T>
void gather_blocks(RingTransport& net, const std::vector<RingBlock>& blocks, const T* mine,
                   index_t per, index_t count, std::vector<T>& out) {
  std::vector<std::size_t> sizes;
  for (const RingBlock& b : blocks) sizes.push_back(std::size_t(b.size() * per) * sizeof(T));
  const bool root = net.rank() == 0;
  std::vector<T> all(root ? std::size_t(count * per) : 0);
  net.gather(mine, sizes[std::size_t(net.rank())], all.data(), sizes);
  if (!root) return;
  out.assign(std::size_t(count * per), T(0));
  const T* from = all.data();
  for (const RingBlock& b : blocks)
    for (const Range& r : b.parts) {
      std::copy(from, from + r.size() * per, out.begin() + r.begin * per);
      from += r.size() * per;
    }
}

template <class T>
struct LocalForward {
  std::vector<T> O, L, L_lo;
  RingTimes times;
};

// The forward ring on rank r: at step t the K/V block of rank (r - t) mod P, the next one already
// on its way while this one is computed.
template <class T>
LocalForward<T> forward_ring(RingTransport& net, const RingSchedule& s, const AttnParams& p,
                             const std::vector<T>& Q, std::vector<T> kv) {
  const index_t r = net.rank(), P = s.ranks, d = s.d, rows = s.rows[std::size_t(r)].size();
  LocalForward<T> out{std::vector<T>(std::size_t(rows * d), T(0)),
                      std::vector<T>(std::size_t(rows), neg_inf<T>()),
                      std::vector<T>(std::size_t(rows), T(0)),
                      {}};
  std::vector<T> next;
  for (index_t t = 0; t < P; ++t) {
    const Clock::time_point t0 = Clock::now();
    int shift = -1;
    if (t < P - 1) {  // post the pass of this block on, and the receive of the next, first
      next.resize(std::size_t(2 * s.keys[std::size_t(s.at(r, t + 1).block)].size() * d));
      shift = net.start_shift(kv.data(), bytes_of(kv), next.data(), bytes_of(next), kChannelKV);
    }
    const Clock::time_point t1 = Clock::now();
    ring_forward_step(s, p, s.rows[std::size_t(r)], s.keys[std::size_t(s.at(r, t).block)], Q.data(),
                      kv.data(), out.O.data(), out.L.data(), out.L_lo.data());
    const Clock::time_point t2 = Clock::now();
    if (shift >= 0) net.wait(shift), kv.swap(next);
    const Clock::time_point t3 = Clock::now();
    out.times.compute.push_back(ms_since(t1, t2));
    out.times.wait.push_back(ms_since(t0, t1) + ms_since(t2, t3));
    out.times.step.push_back(ms_since(t0, t3));
  }
  return out;
}

template <class T>
struct LocalBackward {
  std::vector<T> dQ, dKV;  // this rank's rows; its own block's dK then dV
  RingTimes times;
};

// The backward ring on rank r: K, V posted on before the compute, the block's dK, dV (changed by
// it) after; a last pass of dK, dV alone takes every block's gradients home.
template <class T>
LocalBackward<T> backward_ring(RingTransport& net, const RingSchedule& s, const AttnParams& p,
                               const RingRows<T>& in, std::vector<T> kv) {
  const index_t r = net.rank(), P = s.ranks, d = s.d, rows = s.rows[std::size_t(r)].size();
  auto block_size = [&](index_t t) {
    return std::size_t(2 * s.keys[std::size_t(s.at(r, t % P).block)].size() * d);
  };
  LocalBackward<T> out{std::vector<T>(std::size_t(rows * d), T(0)), {}, {}};
  std::vector<T> next, grad(block_size(0), T(0)), grad_next;
  int grad_shift = -1;
  for (index_t t = 0; t < P; ++t) {
    const Clock::time_point t0 = Clock::now();
    int shift = -1;
    if (t < P - 1) {
      next.resize(block_size(t + 1));
      shift = net.start_shift(kv.data(), bytes_of(kv), next.data(), bytes_of(next), kChannelKV);
    }
    if (grad_shift >= 0) net.wait(grad_shift), grad.swap(grad_next);  // dK_j, dV_j from r - 1
    const Clock::time_point t1 = Clock::now();
    ring_backward_step(s, p, s.rows[std::size_t(r)], s.keys[std::size_t(s.at(r, t).block)], in,
                       kv.data(), out.dQ.data(), grad.data());
    const Clock::time_point t2 = Clock::now();
    grad_next.resize(block_size(t + 1));  // at t = P - 1: this rank's own block, coming home
    grad_shift = net.start_shift(grad.data(), bytes_of(grad), grad_next.data(), bytes_of(grad_next),
                                 kChannelGrad);
    if (shift >= 0) net.wait(shift), kv.swap(next);
    const Clock::time_point t3 = Clock::now();
    out.times.compute.push_back(ms_since(t1, t2));
    out.times.wait.push_back(ms_since(t0, t1) + ms_since(t2, t3));
    out.times.step.push_back(ms_since(t0, t3));
  }
  const Clock::time_point t0 = Clock::now();
  net.wait(grad_shift), grad.swap(grad_next);
  out.times.wait.back() += ms_since(t0, Clock::now());
  out.times.step.back() += ms_since(t0, Clock::now());
  const T scale = T(p.scale_for(d));
  for (T& x : out.dQ) x *= scale;  // dQ = scale dS K: scaled once
  const std::size_t nk = grad.size() / 2;
  for (std::size_t k = 0; k < nk; ++k) grad[k] *= scale;  // dK = scale dS^T Q
  out.dKV = std::move(grad);
  return out;
}

// The same transfers as a pass's ring, without compute: the time they take alone, per step.
template <class T>
std::vector<double> comm_ring(RingTransport& net, const RingSchedule& s, RingPass pass) {
  const index_t r = net.rank(), P = s.ranks, d = s.d;
  auto block_size = [&](index_t t) {
    return std::size_t(2 * s.keys[std::size_t(s.at(r, t % P).block)].size() * d);
  };
  std::vector<T> kv(block_size(0)), next, grad(block_size(0)), grad_next;
  std::vector<double> ms;
  for (index_t t = 0; t < P; ++t) {
    const Clock::time_point t0 = Clock::now();
    std::vector<int> shifts;
    if (t < P - 1) {
      next.resize(block_size(t + 1));
      shifts.push_back(
          net.start_shift(kv.data(), bytes_of(kv), next.data(), bytes_of(next), kChannelKV));
    }
    if (pass == RingPass::bwd) {
      grad_next.resize(block_size(t + 1));
      shifts.push_back(net.start_shift(grad.data(), bytes_of(grad), grad_next.data(),
                                       bytes_of(grad_next), kChannelGrad));
    }
    for (int id : shifts) net.wait(id);
    kv.swap(next), grad.swap(grad_next);
    ms.push_back(ms_since(t0, Clock::now()));
  }
  return ms;
}

// Every rank's times on rank 0.
std::vector<RingTimes> gather_times(RingTransport& net, const RingTimes& mine, index_t P) {
  std::vector<double> packed;
  for (const auto* v : {&mine.compute, &mine.wait, &mine.step, &mine.comm})
    packed.insert(packed.end(), v->begin(), v->end());
  const std::vector<std::size_t> sizes(std::size_t(P), bytes_of(packed));
  std::vector<double> all(net.rank() == 0 ? packed.size() * std::size_t(P) : 0);
  net.gather(packed.data(), bytes_of(packed), all.data(), sizes);
  std::vector<RingTimes> out;
  if (net.rank() != 0) return out;
  for (index_t r = 0; r < P; ++r) {
    auto part = [&](index_t k) {
      const auto from = all.begin() + (r * 4 + k) * P;
      return std::vector<double>(from, from + P);
    };
    out.push_back({part(0), part(1), part(2), part(3)});
  }
  return out;
}

}  // namespace

RingOverlap ring_overlap(const RingTimes& t) {
  RingOverlap o;
  for (std::size_t k = 0; k < t.step.size(); ++k) {
    const double comm = k < t.comm.size() ? t.comm[k] : 0;
    o.compute += t.compute[k], o.comm += comm, o.waited += t.wait[k], o.steps += t.step[k];
    o.bound_max += std::max(t.compute[k], comm);
  }
  o.bound_sum = o.compute + o.comm;
  if (o.comm > 0) o.hidden = std::clamp((o.bound_sum - o.steps) / o.comm, 0.0, 1.0);
  return o;
}

template <class T>
RingResult<T> ring_gather(RingTransport& net, const RingSchedule& s, RingPass pass,
                          const RingLocal<T>& mine) {
  const index_t d = s.d, own_keys = s.keys[std::size_t(net.rank())].size();
  RingResult<T> out;
  gather_blocks(net, s.rows, mine.O.data(), d, s.n, out.O);
  gather_blocks(net, s.rows, mine.L.data(), 1, s.n, out.L);
  out.forward = gather_times(net, mine.forward, s.ranks);
  if (pass == RingPass::fwd) return out;
  gather_blocks(net, s.rows, mine.dQ.data(), d, s.n, out.dQ);
  gather_blocks(net, s.keys, mine.dKV.data(), d, s.m, out.dK);  // dK: the first half of dKV
  gather_blocks(net, s.keys, mine.dKV.data() + own_keys * d, d, s.m, out.dV);
  out.backward = gather_times(net, mine.backward, s.ranks);
  return out;
}

template <class T>
RingResult<T> ring_rank(RingTransport& net, const RingSchedule& s, const AttnParams& p,
                        RingPass pass, const RingInputs<T>& in) {
  if (net.ranks() != s.ranks) throw std::invalid_argument("ring: the schedule is for other ranks");
  const index_t r = net.rank(), d = s.d;
  const RingBlock& rows = s.rows[std::size_t(r)];
  const RingBlock& keys = s.keys[std::size_t(r)];
  const std::vector<T> Q = ring_take(rows, in.Q, d), kv = take_kv(keys, in.K, in.V, d);
  RingLocal<T> mine;
  LocalForward<T> f = forward_ring(net, s, p, Q, kv);
  f.times.comm = comm_ring<T>(net, s, RingPass::fwd);
  mine.forward = f.times;
  if (pass == RingPass::bwd) {
    const std::vector<T> dO = ring_take(rows, in.dO, d);
    std::vector<T> D(std::size_t(rows.size()));
    for (index_t i = 0; i < rows.size(); ++i)
      D[std::size_t(i)] = row_D(dO.data() + i * d, f.O.data() + i * d, d);  // D = rowsum(dO * O)
    const RingRows<T> local{Q.data(), dO.data(), f.L.data(), f.L_lo.data(), D.data()};
    LocalBackward<T> b = backward_ring(net, s, p, local, kv);
    b.times.comm = comm_ring<T>(net, s, RingPass::bwd);
    mine.dQ = std::move(b.dQ), mine.dKV = std::move(b.dKV), mine.backward = b.times;
  }
  mine.O = std::move(f.O), mine.L = std::move(f.L);
  return ring_gather(net, s, pass, mine);
}

template <class T>
RingResult<T> ring_threads(index_t ranks,
                           const std::function<RingResult<T>(RingTransport&)>& rank) {
  InProcessRing ring(ranks);
  std::vector<RingResult<T>> results(static_cast<std::size_t>(ranks));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  try {
    for (index_t r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        try {
          InProcessRank net(ring, r);
          results[std::size_t(r)] = rank(net);
        } catch (const RingAborted&) {  // another rank failed first: its error is the one
        } catch (...) {
          errors[std::size_t(r)] = std::current_exception();
          ring.abort();
        }
      });
  } catch (...) {  // a thread that could not start (a process limit): end the ones that did
    ring.abort();
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return std::move(results[0]);
}

template <class T>
RingResult<T> ring_in_process(const RingSchedule& s, const AttnParams& p, RingPass pass,
                              const RingInputs<T>& in) {
  return ring_threads<T>(s.ranks,
                         [&](RingTransport& net) { return ring_rank(net, s, p, pass, in); });
}

#define FD_INSTANTIATE(T)                                                                    \
  template void ring_forward_step(const RingSchedule&, const AttnParams&, const RingBlock&,  \
                                  const RingBlock&, const T*, const T*, T*, T*, T*);         \
  template void ring_backward_step(const RingSchedule&, const AttnParams&, const RingBlock&, \
                                   const RingBlock&, const RingRows<T>&, const T*, T*, T*);  \
  template RingResult<T> ring_rank(RingTransport&, const RingSchedule&, const AttnParams&,   \
                                   RingPass, const RingInputs<T>&);                          \
  template RingResult<T> ring_in_process(const RingSchedule&, const AttnParams&, RingPass,   \
                                         const RingInputs<T>&);                              \
  template std::vector<T> ring_take(const RingBlock&, const T*, index_t);                    \
  template RingResult<T> ring_gather(RingTransport&, const RingSchedule&, RingPass,          \
                                     const RingLocal<T>&);                                   \
  template RingResult<T> ring_threads(index_t, const std::function<RingResult<T>(RingTransport&)>&);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd
