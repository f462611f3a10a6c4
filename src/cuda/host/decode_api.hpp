// decode_api.hpp — split-KV decoding on the GPU (decode.cuh) as `flashdemo decode --device cuda`
// and the tests see it: host arrays in and out, no CUDA headers (a build without CUDA answers
// every call with CudaError, stub.cpp).
//
// The plan is the CPU decode's (split_kv.hpp: plan_splits, FlashAttention's num_splits
// heuristic), with workers W = SMs x the decode kernel's blocks an SM (those that fit, at most
// kDecodePlanBlocksPerSm), units U = heads x query-row groups (Br rows each, decode_tiles), and
// the keys in tiles of Bc (splits are whole tiles); K and V fed as decode_feed chooses. Layout: Q,
// O (heads, n, d); K, V (heads, m, d); L (heads, n); the partials O_part (heads, S, n, d) and
// L_part (heads, S, n), in fp32, as split_kv_forward writes them.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/host/cuda_api.hpp"
#include "flashdemo/at_scale/split_kv.hpp"

namespace fd::cuda {

// Query rows of a block (1 for one row, else groups of 4) and keys per tile (16).
TileSizes decode_tiles(index_t n);

// A d of DecodeHeadDims (head_dims.hpp); bf16, fp16 or fp32 (why = none when the kernel runs the
// case). These two: decode_rules.cpp.
Refusal decode_refuses(index_t d, Precision p);

// What the plan counts as workers: the GPU's SMs times the blocks of the decode kernel it counts
// on one, the blocks that fit there (for this element type, d and n) but at most
// kDecodePlanBlocksPerSm. Measured (docs/at-scale.md): at 8 heads and m = 65536 the plan for the
// 4 that fit (55 splits) ran 4 % to 7 % slower than about 2 an SM, on an H100 and an H200; with
// the loads ahead the cap read 0.98x to 1.00x elsewhere (H100), made up by the bulk feed
// (decode_feed) that its longer splits take.
inline constexpr int kDecodePlanBlocksPerSm = 2;
struct DecodeWorkers {
  std::string gpu;
  int sms = 0;
  int resident_per_sm = 0;  // blocks that fit on one SM (CUDA's occupancy calculator)
  int blocks_per_sm = 0;    // those the plan counts: at most kDecodePlanBlocksPerSm
  index_t workers() const { return index_t(sms) * blocks_per_sm; }
};
// How the kernel's lanes get the keys and values of a step (decode.cuh):
//   plain  each lane loads its 16-byte chunks from global memory, then computes (nothing in
//          flight while it does)
//   ahead  the same loads issued a step ahead: step k + 1's in flight while step k is computed
//   bulk   the copy engine brings whole steps of K and V into shared memory (cp.async.bulk, one
//          thread issuing, kStages steps in flight); the lanes read their chunks from there
// All three compute the same arithmetic in the same order: the same bits.
enum class KvFeed { plain, ahead, bulk };
inline constexpr KvFeed kDefaultKvFeed = KvFeed::ahead;
inline const char* kv_feed_name(KvFeed feed) {
  return feed == KvFeed::plain ? "plain" : feed == KvFeed::ahead ? "ahead" : "bulk";
}

// feed: of the kernel that feeds K and V so (decode below).
DecodeWorkers decode_workers(Precision p, index_t d, index_t n, KvFeed feed = kDefaultKvFeed);

// The feed flashdemo decode runs for S splits of m keys: the copy engine's (bulk) where a split
// streams at least kBulkMinSplitKeys keys and the GPU has it (sm_90), else the loads a step
// ahead. Measured on an H100 with the plan above (docs/at-scale.md): bulk 1.02x to 1.07x the loads
// ahead at splits of 8,192 keys and more (its four stages keep more bytes in flight once filled),
// 0.90x and 0.96x at splits of 2,259 keys (the fill is not paid back); bf16, one query row (other
// element types and row groups take the same rule, untimed). All feeds give the same bits.
inline constexpr index_t kBulkMinSplitKeys = 4096;
KvFeed decode_feed(index_t m, index_t splits);

// Where Q, K, V come from: host arrays of the shape's sizes holding values of the precision
// (rounded to it), or, all null, drawn on the device (a counter-based normal draw of the seed,
// decode.cu; far faster than the host's torch.randn at a KV cache of GBs).
struct DecodeInputs {
  const float *Q = nullptr, *K = nullptr, *V = nullptr;
  std::uint32_t seed = 0;
};

struct DecodeRun {
  std::vector<float> O, L;            // the merged rows (O as stored in the element type)
  std::vector<float> O_part, L_part;  // every split's (O_s, L_s)
  std::vector<float> Q, K, V;         // the inputs of the heads asked for, one after another
  std::vector<double> ms;             // CUDA-event milliseconds of each timed run
};

// One run of S splits (1 <= S <= min(Tc of decode_tiles, kMaxSplits): the merging block holds the
// parts' L_s in shared memory) for the outputs, then `reps` timed runs after
// `warmup` untimed ones on the same device arrays; `heads`: the heads whose inputs come back.
// feed: how K and V reach the lanes (KvFeed above); the default (ahead) measured faster than
// plain at decode_compare's 8 cases (docs/at-scale.md).
DecodeRun decode(const DecodeShape& s, const AttnParams& p, Precision prec, index_t splits,
                 const DecodeInputs& in, const std::vector<index_t>& heads, int warmup, int reps,
                 KvFeed feed = kDefaultKvFeed);

// A device-to-device cudaMemcpy of `bytes`: the median milliseconds of `reps` after one warm-up,
// and (bytes read + bytes written) / time in TB/s.
struct CopyBandwidth {
  double bytes = 0, median_ms = 0, tbps = 0;
};
CopyBandwidth copy_bandwidth(double bytes, int reps);

}  // namespace fd::cuda
