// benchmark.hpp — the mechanics of timing one case, shared by `flashdemo bench` and
// `flashdemo ladder` (demos/ only choose what runs and print what came back):
//   FLOPs      as FlashAttention's benchmarks count them: forward 4 b h n m d, halved when causal
//              with n == m; backward 2.5x the forward
//   inputs     Q, K, V, dO drawn with PyTorch's generator (torch.randn after manual_seed), one head
//              after another; with bf16 or fp16 rounded to that format (stored in it, held in T)
//   verify     before any timing: sampled rows of the first and the last head (every row when
//              n <= 16) against the reference in a wider type, by the 2x rule in the case's
//              precision (verify.hpp)
//   timing     `reps` runs after a warm-up: on the CPU a steady-clock loop here, on a device its
//   own
//              timer (a callback); median, min and max of the milliseconds
//   memory     the growth of the resident memory during the timed runs (Linux: VmHWM after
//              resetting it), beyond the outputs a forward allocates
//   ceiling    on the CPU, the best speed of a square GEMM in the same run, checked on two rows
//   bandwidth  on the CPU, a memcpy-like read: a parallel sum over a buffer of a given size, GB/s
// Nothing here prints; a progress callback lets the caller show long runs.
#pragma once

#include <functional>
#include <stdexcept>
#include <vector>

#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/judge/verify.hpp"
#include "flashdemo/params.hpp"
#include "flashdemo/teaching/variant.hpp"

namespace fd::bench {

enum class Pass { fwd, bwd };

// "fwd" or "bwd": the value of --pass, and of "pass" in bench's and ladder's JSON.
inline const char* pass_name(Pass p) {
  return p == Pass::bwd ? "bwd" : "fwd";
}

// One case: the sizes, the mask (top-left causal or none), the pass and the precision it runs in
// (fp64, fp32; bf16 and fp16: inputs stored in that format, sums in fp32, computed in float).
struct Case {
  index_t b = 1, h = 1, n = 1024, m = 1024, d = 64;
  bool causal = false;
  Pass pass = Pass::fwd;
  Precision precision = Precision::fp32;
  std::uint32_t seed = 0;  // of the inputs' generator
  index_t heads() const { return b * h; }
  AttnParams params() const { return AttnParams{causal, CausalAlign::top_left, {}}; }
  bool emulated() const { return precision == Precision::bf16 || precision == Precision::fp16; }
  // P (and dS) rounded to the format as matmul inputs, as the inputs are (variant.hpp).
  Variant variant() const { return Variant{emulated() ? precision : Precision::fp32}; }
};

double flops(const Case& c);

template <class T>
struct Arrays {
  std::vector<T> Q, K, V, dO;
};

template <class T>
Arrays<T> random_arrays(const Case& c);

// Outputs of one run of every head, host-side. L_lo: L's rounding error (online_softmax.hpp).
template <class T>
struct Outputs {
  std::vector<T> O, L, L_lo, dQ, dK, dV, D;
};

// Zeroed outputs of the case's size (gradients only for the backward pass).
template <class T>
Outputs<T> make_outputs(const Case& c);

// The first and the last head's outputs checked (verify.hpp), judged in c.precision: the worst.
template <class T>
Verdict verify(const Case& c, const Arrays<T>& a, const Outputs<T>& out);

// The CPU paths: standard attention (S and P materialized), the teaching path (64 x 64 tiles,
// c.variant()), the fast path (threads, fast::tiles_for's tiles; fp32 and fp64 only).
enum class CpuImpl { reference, tiled, fast };

inline constexpr TileSizes kTeachingTiles{64, 64};

// How one implementation runs the case: the forward into O, L (and L_lo); the backward into dQ,
// dK, dV, D from the O and L already there; and, for a device that times itself (CUDA events),
// `device_times`, else the CPU loop below times the calls.
template <class T>
struct Runner {
  std::function<void(Outputs<T>&)> forward, backward;
  std::function<std::vector<double>(index_t warmup, index_t reps)> device_times;
};

template <class T>
Runner<T> cpu_runner(const Case& c, CpuImpl impl, index_t threads, const Arrays<T>& a);

// Called after each timed run with the runs done, all of them, and the seconds since the start.
using Progress = std::function<void(index_t done, index_t total, double seconds)>;

// Milliseconds of `reps` calls after `warmup` untimed ones.
std::vector<double> time_loop(const std::function<void()>& once, index_t warmup, index_t reps,
                              const Progress& progress = {});

struct Times {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::size_t reps = 0;
  std::vector<double> ms;  // every timed run's, in the order they ran
};
Times summarize(std::vector<double> ms);

// Resident memory: the peak since construction (which resets it), beyond the resident memory then.
class PeakMemory {
 public:
  PeakMemory();
  double growth() const;

 private:
  double rss_before_ = 0;
};

// One case measured: run once, verified, and (only when verified) timed. The CPU forward is timed
// as a whole call with its outputs allocated; the backward alone, from the forward's O and L, as
// PyTorch's autograd backward is timed. The CPU warm-up is one run at most (warmup 0: none).
struct Measurement {
  Verdict verdict;
  bool timed = false;  // false: the verification failed, nothing was timed
  Times times;
  double tflops = 0;
  double peak_bytes = 0;  // beyond inputs and outputs (meaningful on the CPU)
};

// budget_s > 0: the warm-up and reps cut so that the timed runs take about budget_s, judged by the
// verification run's time (fit_to_budget): a slow kernel (the teaching rung at n = 16384 takes
// seconds a run) is timed a few times, not --reps times.
template <class T>
Measurement measure(const Case& c, const Arrays<T>& a, const Runner<T>& run, index_t warmup,
                    index_t reps, const Progress& progress = {}, double budget_s = 0);

// With runs of `once` seconds, warmup + reps of them past budget_s: no warm-up (the verification
// run was one) and budget_s / once reps, kMinBudgetReps at least (or reps, if fewer were asked).
inline constexpr index_t kMinBudgetReps = 3;
void fit_to_budget(double once, double budget_s, index_t& warmup, index_t& reps);

// The CPU's ceiling in the same run: the best speed of a square GEMM C = A B (k x k each, 2 k^3
// FLOPs) on the same threads, checked on two rows against a double product. Square, because a
// GEMM's best speed is reached on square shapes: a skinny n x m x d product is slower than the
// fused attention kernel itself and would be no ceiling. Two sides: the case's, 2 k^3 ~ 2 n m d
// (k a multiple of 16, 16..2048), and kBigSide, since a small case's GEMM runs far below the
// machine's speed (16 x 16 x 16 is mostly overhead) and the fused kernel would pass it. Each is
// timed `runs` times (5 at least) after a warm-up and its fastest run counts: noise only slows.
inline constexpr index_t kBigSide = 512, kCeilingRuns = 5;
index_t gemm_side(const Case& c);

// GFLOP/s, the side that reached it, and its check: the largest error on rows 0 and k - 1 of C
// against a double product, and the bound each entry had (1e-5 of the sum of |terms|, plus 1e-6).
struct Ceiling {
  double gflops = 0, max_error = 0, bound = 0;
  index_t side = 0;
};

// An entry of C beyond its bound: the GEMM is wrong, and no ceiling.
struct GemmUnverified : std::runtime_error {
  GemmUnverified(double err_, double bound_)
      : std::runtime_error("GEMM check failed"), err(err_), bound(bound_) {}
  double err, bound;
};

template <class T>
Ceiling gemm_ceiling(const Case& c, const Arrays<T>& a, index_t threads,
                     index_t runs = kCeilingRuns, const Progress& progress = {});

// A memcpy-like read of `bytes` on `threads` threads: a sum of 64-bit words over a buffer of that
// size, each thread its own contiguous share (first written by that thread), timed `reps` times
// after one warm-up. What a kernel that streams that many bytes once could reach at best.
struct ReadBandwidth {
  double gbps = 0;       // bytes / median time
  double median_ms = 0;  // of one read of the whole buffer
  double bytes = 0;      // read each time (the size asked for, in whole words)
};
ReadBandwidth read_bandwidth(double bytes, index_t threads, index_t reps);

}  // namespace fd::bench
