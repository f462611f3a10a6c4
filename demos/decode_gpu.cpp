// decode_gpu.cpp — `flashdemo decode --device cuda`: split-KV attention on the GPU
// (cuda/at_scale/decode.cuh, one thread block per (head, query-row group, split), the group's last
// block merging). The plan is the CPU's heuristic with workers W = SMs x the kernel's blocks an SM
// (those that fit, at most 2: decode_api.hpp), K and V fed as decode_feed chooses from the splits'
// length; the output is the CPU decode's (the plan, the splits' L_s, the merge, the verdict
// of the first and the last head against the reference, decode_parts.hpp), then the kernel's time
// and the bandwidth it reads K and V at:
//   TB/s = kv_bytes / median kernel time,   kv_bytes = 2 heads (keys some row sees) d sizeof(E)
// beside a device-to-device cudaMemcpy of a few GB in the same run, (bytes read + written) / time.
// Q, K, V are drawn on the device (a counter-based normal draw, decode.cu): at a KV cache of GBs
// the host's torch.randn would take minutes.
#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "decode_parts.hpp"
#include "device.hpp"
#include "ui/format.hpp"
#include "ui/json_trace.hpp"
#include "ui/output.hpp"

namespace fd::demos::decoding {
namespace {

using ui::Msg;

constexpr int kWarmup = 3;                      // untimed launches before the timed ones
constexpr double kCopyBytes = 2.0 * (1 << 30);  // the device-to-device copy: 2 GiB
constexpr int kCopyReps = 10;

std::size_t element_bytes(Precision p) {
  return p == Precision::fp32 ? 4 : 2;
}

// The host's share of the run: the merged rows and every split's partials, the checked heads'
// inputs, and one head's reference and naive run (S and P, n x m each, and the inputs in double).
double host_bytes(const DecodeOptions& o, index_t num_splits) {
  const double H = double(o.heads()), n = double(o.n), m = double(o.m), d = double(o.d);
  const double outputs = H * (double(num_splits) + 1) * n * (d + 1) * 4;
  const double inputs = double(checked_heads(o).size()) * (n + 2 * m) * d * 4;
  const double reference = 6 * n * m * 8 + 2 * (n + 2 * m) * d * 8 + 2 * (n + 2 * m) * d * 4;
  return outputs + inputs + reference;
}

struct GpuTiming {
  cuda::KvFeed feed = cuda::kDefaultKvFeed;  // how the kernel timed got K and V
  double bytes = 0, median_ms = 0, min_ms = 0;
  cuda::CopyBandwidth copy;
  double tbps() const { return bytes / (median_ms * 1e-3) / 1e12; }
};

GpuTiming timing_of(const DecodeOptions& o, const cuda::DecodeRun& run, cuda::KvFeed feed) {
  GpuTiming t;
  t.feed = feed;
  t.bytes = kv_bytes(o.shape(), o.mask(), element_bytes(dtype_precision(o.dtype)));
  std::vector<double> ms = run.ms;
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  t.copy = cuda::copy_bandwidth(kCopyBytes, kCopyReps);
  return t;
}

std::string gpu_units_line(const DecodeOptions& o, const SplitPlan& plan,
                           const cuda::DecodeWorkers& w) {
  return ui::tr(Msg::decode_plan_units_gpu, o.heads(), o.tiling().Tr(), plan.units, w.sms,
                w.blocks_per_sm, plan.workers, plan.min_tiles, kMaxSplits, plan.max_splits,
                plan.min_tiles);
}

// How the kernel got K and V, in the learner's words (the feed's name in brackets).
std::string feed_words(cuda::KvFeed feed) {
  return ui::tr(feed == cuda::KvFeed::bulk ? Msg::decode_feed_bulk : Msg::decode_feed_ahead);
}

void print_gpu_timing(const DecodeOptions& o, const SplitPlan& plan, const cuda::DecodeWorkers& w,
                      const GpuTiming& t) {
  ui::result_section(ui::tr(Msg::decode_gpu_timing_title, w.gpu, o.reps, kWarmup,
                            format_bytes(t.bytes), feed_words(t.feed)));
  ui::result(plan.forced ? Msg::decode_gpu_time_forced : Msg::decode_gpu_time_split, plan.splits,
             fmt::format("{:.4f}", t.median_ms), fmt::format("{:.2f}", t.tbps()));
  ui::result(Msg::decode_gpu_copy, format_bytes(t.copy.bytes),
             fmt::format("{:.4f}", t.copy.median_ms), fmt::format("{:.2f}", t.copy.tbps));
  ui::result(Msg::decode_gpu_copy_ratio, 100 * t.tbps() / t.copy.tbps);
}

void emit_gpu_json(const DecodeOptions& o, const SplitPlan& plan, const cuda::DecodeWorkers& w,
                   const SplitKvResult<float>& r, const Checked& c, const GpuTiming& t) {
  emit_splits_json(o, r);
  nlohmann::json j = result_json(o, plan, r, c, dtype_precision(o.dtype));
  j["gpu"] = w.gpu;
  j["sms"] = w.sms;
  j["blocks_per_sm"] = w.blocks_per_sm;  // counted by the plan (resident_per_sm fit)
  j["resident_per_sm"] = w.resident_per_sm;
  j["workers"] = plan.workers;
  j["warmup"] = kWarmup;
  j["feed"] = cuda::kv_feed_name(t.feed);
  j["kv_bytes"] = t.bytes;
  j["median_ms"] = t.median_ms;
  j["min_ms"] = t.min_ms;
  j["tbps"] = t.tbps();
  j["copy_bytes"] = t.copy.bytes;
  j["copy_ms"] = t.copy.median_ms;
  j["copy_tbps"] = t.copy.tbps;
  j["of_copy"] = t.tbps() / t.copy.tbps;
  ui::out() << j.dump() << "\n";
}

// The checked heads' arrays: their inputs as the run returned them, their outputs in r.
std::vector<HeadArrays<float>> head_arrays(const DecodeOptions& o, const cuda::DecodeRun& run,
                                           const SplitKvResult<float>& r) {
  const index_t n = o.n, m = o.m, d = o.d;
  std::vector<HeadArrays<float>> heads;
  const std::vector<index_t> which = checked_heads(o);
  for (std::size_t k = 0; k < which.size(); ++k) {
    const index_t h = which[k], i = index_t(k);
    heads.push_back({run.Q.data() + i * n * d, run.K.data() + i * m * d, run.V.data() + i * m * d,
                     r.O.data() + h * n * d, r.L.data() + h * n});
  }
  return heads;
}

void run_on_gpu(const DecodeOptions& o) {
  const Precision p = dtype_precision(o.dtype);
  cuda::DecodeWorkers w = cuda::decode_workers(p, o.d, o.n);
  const SplitPlan plan = plan_for(
      o, w.workers(), gpu_min_split_tiles(o.tiling().Bc));  // a --splits too large: refused here
  ensure_fits(host_bytes(o, plan.splits), ui::tr(Msg::decode_gpu_memory_what));
  cuda::DecodeInputs in;
  in.seed = o.seed;
  const cuda::KvFeed feed = cuda::decode_feed(o.m, plan.splits);
  // (the plan counts the same blocks an SM for either feed, both fitting 2 or more; the report
  // names the resident blocks of the kernel that runs)
  w.resident_per_sm = cuda::decode_workers(p, o.d, o.n, feed).resident_per_sm;
  cuda::DecodeRun run = cuda::decode(o.shape(), o.params(), p, plan.splits, in, checked_heads(o),
                                     kWarmup, int(o.reps), feed);
  SplitKvResult<float> r;
  r.splits = plan.splits;
  r.O = std::move(run.O), r.L = std::move(run.L);
  r.O_part = std::move(run.O_part), r.L_part = std::move(run.L_part);
  const Checked checked = check_heads(o, p, head_arrays(o, run, r), r.splits);
  const GpuTiming t = timing_of(o, run, feed);
  if (ui::settings().json) {
    emit_gpu_json(o, plan, w, r, checked, t);
  } else {
    print_problem(o, precision_name(p));
    print_plan(plan, gpu_units_line(o, plan, w));
    print_splits(o, r);
    print_merge(o, r);
    print_verdicts(o, checked, p);
    print_gpu_timing(o, plan, w, t);
  }
  conclude_run(checked, p);
}

}  // namespace

void run_decode_gpu(const DecodeOptions& o) {
  require_gpu();  // exit 5, in one line, without CUDA in the build or without a GPU
  try {
    run_on_gpu(o);
  } catch (const cuda::CudaError& e) {
    throw Error(kNoDevice, e.what());
  }
}

}  // namespace fd::demos::decoding
