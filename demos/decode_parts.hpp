// decode_parts.hpp — what `flashdemo decode` on the CPU (decode.cpp) and on the GPU
// (decode_gpu.cpp) share: the options, the plan's and the splits' printing, the merge of the
// first rows, and the verdict of the checked heads against the reference (the 2x rule).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "cuda/host/decode_api.hpp"
#include "flashdemo/at_scale/split_kv.hpp"
#include "flashdemo/impl.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/judge/verdict.hpp"

namespace fd::demos::decoding {

// Decoding: a few new query rows (n) against a long cache of m keys.
inline constexpr ShapeLimits kDecodeShape = {
    true, index_t(1) << 24, 256, ui::Msg::decode_opt_n, ui::Msg::decode_opt_m, false};

struct DecodeOptions : ProblemShape {  // b, h, n, m, d, causal
  DecodeOptions() { n = 1, m = 65536, d = 128; }
  index_t splits = 0;   // 0: the plan chooses
  index_t threads = 0;  // 0: every hardware thread
  Device device = Device::cpu;
  DType dtype = DType::fp32;
  bool causal_implied = false;
  CausalAlign align = CausalAlign::bottom_right;  // decoding: the new rows are the last ones
  std::uint32_t seed = 0;
  std::optional<double> scale;
  index_t reps = 0;  // 0: 5 on the CPU, 20 on the GPU

  index_t heads() const { return b * h; }
  index_t workers() const {
    return threads ? threads : std::max<index_t>(1, std::thread::hardware_concurrency());
  }
  DecodeShape shape() const { return {heads(), n, m, d}; }
  AttnParams params() const { return AttnParams{causal, align, scale}; }
  Mask mask() const { return params().mask_for(n, m); }
  // The CPU's tiles (kDecodeTiles), or the GPU kernel's (cuda::decode_tiles).
  TileSizes tiles() const { return device == Device::cuda ? cuda::decode_tiles(n) : kDecodeTiles; }
  Tiling tiling() const { return decode_tiling(shape(), tiles()); }
};

// The plan for W workers: the heuristic, or --splits (refused beyond the key tiles).
SplitPlan plan_for(const DecodeOptions& o, index_t workers, index_t min_tiles = 1);

// The heads checked against the reference: the first and the last.
std::vector<index_t> checked_heads(const DecodeOptions& o);

using Checked = RunVerdict;  // O and L, folded over the checked heads (verdict.hpp)

// One checked head's inputs (n x d, m x d, m x d, row-major) and outputs (n x d, n).
template <class T>
struct HeadArrays {
  const T *Q, *K, *V, *O, *L;
};

// The rule on O and L of the checked heads (one HeadArrays each), each against the reference in
// the wider type, with standard attention in precision p (T's own, or bf16/fp16 stored in T) as
// the yardstick: the worst head's errors.
template <class T>
Checked check_heads(const DecodeOptions& o, Precision p, const std::vector<HeadArrays<T>>& heads,
                    index_t splits);

void print_problem(const DecodeOptions& o, const char* dtype);
// units: the plan's units line, already worded (CPU: threads; GPU: SMs x blocks per SM).
void print_plan(const SplitPlan& plan, const std::string& units_line);
template <class T>
void print_splits(const DecodeOptions& o, const SplitKvResult<T>& r);
template <class T>
void print_merge(const DecodeOptions& o, const SplitKvResult<T>& r);
void print_verdicts(const DecodeOptions& o, const Checked& c, Precision p);
// The decode_split objects of --json (head 0's first rows).
template <class T>
void emit_splits_json(const DecodeOptions& o, const SplitKvResult<T>& r);
// The fields of the result object both devices print.
template <class T>
nlohmann::json result_json(const DecodeOptions& o, const SplitPlan& plan, const SplitKvResult<T>& r,
                           const Checked& c, Precision p);

// `flashdemo decode --device cuda`: after the options' checks, on the GPU (decode_gpu.cpp).
void run_decode_gpu(const DecodeOptions& o);

}  // namespace fd::demos::decoding
