// ring.hpp — context-parallel ("ring") attention: P ranks, each holding a block of the query rows
// and the matching block of the keys, the K/V blocks passed round a ring (Liu et al., Ring
// Attention; the causal balance of Striped/zigzag attention).
//
// The blocks. Rank r holds the query rows Q_r and the keys K_r, V_r of the same positions:
//   contiguous: rows [floor(r n / P), floor((r+1) n / P)), keys likewise with m
//   zigzag:     2P chunks [floor(c n / 2P), floor((c+1) n / 2P)); rank r holds chunks r and
//               2P - 1 - r (one early, one late), so under a causal mask every rank computes about
//               as much: with n = m (top-left) 2P + 1 of its 4P chunk pairs, every rank alike.
// The ring. At step s = 0 .. P-1 rank r holds the K/V block of rank j = (r - s) mod P, computes
// its rows against it, and passes it to rank r + 1 (received from r - 1), the send and the
// receive posted before the step's compute, so the transfer overlaps it. A chunk pair (rows a,
// keys b) wholly in the masked future (mask.hpp: classify = skipped) is not computed.
//
// Forward, rank r, step s: the step's part of every row q, over the keys k of block j it sees,
//   L_s = logsumexp_k S_qk,   O_s = sum_k exp(S_qk - L_s) V_k         (tile_math.hpp: score_row,
//   update_row, finalize_row over tiles of Bc keys; L_s = -inf when q sees none of them)
// folds into the row's running (O, L), the merge of online_softmax.hpp (merge_lse, split_weight)
// over two normalized parts:
//   L' = logsumexp(L, L_s) = M + log(exp(L - M) + exp(L_s - M)),  M = max(L, L_s)
//   O' = exp(L - L') O + exp(L_s - L') O_s
// Exact: after P steps (O, L) are those of every key the row sees, whatever the order.
//
// Backward, FlashAttention-2 per block, with D_q = rowsum(dO_q * O_q) on the rank that owns q.
// K_j, V_j travel with their gradient accumulators dK_j, dV_j (zero at the start). At step s,
// rank r, block j, for every row q of Q_r and key k of block j that q sees:
//   P_qk = exp(S_qk - L_q)                 recomputed from the forward's L
//   dV_k += P_qk dO_q,   dP_qk = <dO_q, V_k>,   dS_qk = P_qk (dP_qk - D_q)
//   dQ_q += dS_qk K_k,   dK_k += dS_qk Q_q
// then (K_j, V_j, dK_j, dV_j) go to rank r + 1: K, V posted before the compute (overlapped), dK,
// dV after it (they change during it). After step P - 1 one more pass of dK, dV alone brings each
// block's gradients home to its owner; dQ = scale dQ, dK = scale dK there, rounded once.
//
// Bytes each rank sends at step s (T of `bytes` bytes each, d per row):
//   forward   2 |K_j| d  for s < P - 1 (K and V), 0 at the last step
//   backward  4 |K_j| d  for s < P - 1 (K, V, dK, dV), 2 |K_{j}| d at s = P - 1 (dK, dV, home)
// The per-row arithmetic of a step (the fold, P and dS of a pair) is ring_math.hpp's, shared with
// the GPU ring (src/cuda/host/ring_api.hpp), which runs the same schedule with one GPU per rank.
// This file is MPI-free: the communication goes through RingTransport (ring_transport.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/ring_math.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/params.hpp"

namespace fd {

enum class RingLayout { contiguous, zigzag };
enum class RingPass { fwd, bwd };

inline constexpr index_t kRingKeyTile = 64;  // Bc: keys per tile inside a step

// The positions a rank holds (queries or keys): one range (contiguous) or two (zigzag), ascending,
// global indices; ranges may be empty when P does not divide n. Local row of position x of part
// p: offset(p) + (x - parts[p].begin).
struct RingBlock {
  std::vector<Range> parts;
  index_t size() const;
  index_t offset(std::size_t part) const;
};

// One (row part, key part) pair of a step: its tile class under the mask (both non-empty).
struct RingPair {
  Range rows, keys;
  TileKind kind = TileKind::full;
};

// Rank r at step s.
struct RingStep {
  index_t block = 0;            // j = (r - s) mod P: whose K/V the rank holds
  std::vector<RingPair> pairs;  // every non-empty pair, skipped ones included
  index_t computed = 0;         // pairs computed (full or partial)
  index_t skipped = 0;          // pairs wholly masked: not computed
  double entries = 0;           // score entries inside the computed pairs
};

struct RingSchedule {
  index_t ranks = 1, n = 1, m = 1, d = 1;
  RingLayout layout = RingLayout::contiguous;
  Mask mask;
  std::vector<RingBlock> rows, keys;  // per rank: its query rows, its keys
  std::vector<RingStep> steps;        // [r * P + s]

  const RingStep& at(index_t r, index_t s) const { return steps[std::size_t(r * ranks + s)]; }
  // Bytes rank r sends at step s in the given pass, elements of `bytes` bytes; dK, dV of
  // `grad_bytes` each where they travel wider than K, V (the GPU ring's bf16 keys, fp32 sums).
  double bytes_sent(index_t r, index_t s, RingPass pass, std::size_t bytes) const;
  double bytes_sent(index_t r, index_t s, RingPass pass, std::size_t bytes,
                    std::size_t grad_bytes) const;
  index_t computed(index_t r) const;  // pairs rank r computes over the P steps
  index_t skipped(index_t r) const;
};

// The block rank r of P holds out of `count` positions (a range may be empty when count < 2P).
RingBlock ring_block(index_t count, index_t ranks, RingLayout layout, index_t r);

// The whole schedule: blocks, the K/V block of every (rank, step), its pairs and their classes.
// Needs ranks >= 1 (throws std::invalid_argument otherwise).
RingSchedule ring_schedule(index_t n, index_t m, index_t d, index_t ranks, RingLayout layout,
                           const Mask& mask);

// Forward, one step: the rank's rows (Q: |rows| x d, local order) against one K/V block (KV:
// K then V, |keys| x d each), skipping the pairs the mask hides wholly (those the schedule lists
// as skipped); each row's part folded into O (|rows| x d), L, L_lo (|rows|). Start: O = 0,
// L = -inf.
template <class T>
void ring_forward_step(const RingSchedule& s, const AttnParams& p, const RingBlock& rows,
                       const RingBlock& keys, const T* Q, const T* KV, T* O, T* L, T* L_lo);

// What the rank's rows need in the backward: Q, dO, the forward's L (and L_lo) and D.
template <class T>
struct RingRows {
  const T *Q, *dO, *L, *L_lo, *D;
};

// Backward, one step: dQ (|rows| x d) += dS K, and the travelling block's dKV (dK then dV, |keys|
// x d each) += dS^T Q, P^T dO; unscaled (the owner scales once at the end).
template <class T>
void ring_backward_step(const RingSchedule& s, const AttnParams& p, const RingBlock& rows,
                        const RingBlock& keys, const RingRows<T>& in, const T* KV, T* dQ, T* dKV);

class RingTransport;

// Timings of one rank, per step, in milliseconds.
struct RingTimes {
  std::vector<double> compute, wait, step;  // compute; waiting on (and posting) transfers; both
  std::vector<double> comm;                 // the same transfers alone, no compute (comm pass)
};

// One rank's program, the same under MPI and in one process: its blocks cut from the full inputs
// (Q, dO: n x d; K, V: m x d; every rank may hold them, it keeps its own), the forward ring, the
// backward ring (pass bwd; dO needed), a ring of the same transfers without compute (the time the
// communication takes alone), then everything gathered on rank 0.
template <class T>
struct RingInputs {
  const T *Q, *K, *V, *dO;  // dO: nullptr for the forward only
};

// On rank 0: the outputs in global order and every rank's times ([r]); elsewhere empty.
template <class T>
struct RingResult {
  std::vector<T> O, L, dQ, dK, dV;           // n x d, n, n x d, m x d, m x d
  std::vector<RingTimes> forward, backward;  // per rank
};

// How far the overlap hid the communication on one rank, over its steps (milliseconds):
//   hidden = (compute + comm - steps) / comm, clamped to [0, 1]: 1 when the steps took no longer
//   than the compute alone, 0 when they took compute + comm or more (no overlap at all).
struct RingOverlap {
  double compute = 0, comm = 0, waited = 0, steps = 0;
  double bound_max = 0;  // sum over steps of max(compute, comm): a perfect overlap
  double bound_sum = 0;  // compute + comm: none
  double hidden = 1;
};
RingOverlap ring_overlap(const RingTimes& t);

template <class T>
RingResult<T> ring_rank(RingTransport& net, const RingSchedule& s, const AttnParams& p,
                        RingPass pass, const RingInputs<T>& in);

// P ranks simulated in one process (threads, ring_transport.hpp: InProcessRing); rank 0's
// result.
template <class T>
RingResult<T> ring_in_process(const RingSchedule& s, const AttnParams& p, RingPass pass,
                              const RingInputs<T>& in);

// What ring_rank is made of, for a ring that computes elsewhere (the GPU ring): the rows (or
// keys) of a block out of the full row-major X of `cols` columns, in local order;
template <class T>
std::vector<T> ring_take(const RingBlock& block, const T* X, index_t cols);

// what one rank computed, in its local order;
template <class T>
struct RingLocal {
  std::vector<T> O, L;          // its rows
  std::vector<T> dQ, dKV;       // pass bwd: its rows' dQ; its own block's dK then dV
  RingTimes forward, backward;  // comm included
};

// and all of it on rank 0: the outputs in global order and every rank's times (elsewhere empty).
template <class T>
RingResult<T> ring_gather(RingTransport& net, const RingSchedule& s, RingPass pass,
                          const RingLocal<T>& mine);

// P ranks as threads of this process over one InProcessRing, rank r running rank(its end of the
// ring); rank 0's result. A rank that throws wakes the others, and its error is the one thrown.
template <class T>
RingResult<T> ring_threads(index_t ranks, const std::function<RingResult<T>(RingTransport&)>& rank);

}  // namespace fd
