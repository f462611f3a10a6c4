// attention_cli.hpp — what `forward` and `backward` share: their options (sizes or .npy inputs,
// mask, precision, mistakes), the problem header, and the verdict lines of the correctness rule
// (src/flashdemo/judge/compare.hpp; docs/correctness.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "cuda/host/cuda_api.hpp"
#include "flashdemo/attention.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/impl.hpp"
#include "flashdemo/judge/batch.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/judge/verdict.hpp"
#include "flashdemo/teaching/variant.hpp"
#include "recording.hpp"
#include "ui/text_trace.hpp"

namespace fd::demos {

struct ArrayFiles {
  std::string q, k, v, dO;  // inputs (.npy)
  std::string o, lse;       // backward: a forward's O and L to start from (.npy)
  std::string save_q, save_k, save_v, save_do;              // the inputs used, written back
  std::string save_o, save_lse, save_dq, save_dk, save_dv;  // outputs (.npy)
};

struct AttentionOptions : ProblemShape {  // one head: n, m (0: n), d, causal
  AttentionOptions() { n = 100, d = 32; }
  index_t Br = 16, Bc = 16;
  CausalAlign align = CausalAlign::top_left;
  DType dtype = DType::fp64;  // the lecture's tensors are float64; bf16, fp16: see settle_dtype
  std::uint32_t seed = 0;
  std::optional<double> scale;
  ui::TraceLevel trace = ui::TraceLevel::summary;
  ArrayFiles files;
  TraceFiles trace_files;                 // --trace-json, --html
  Precision precision = Precision::fp64;  // bf16 / fp16: emulated, computed in fp32
  Mistake mistake = Mistake::none;        // --break
  bool list_mistakes = false;             // --break list
  index_t show_p = -1;                    // --show-p ROW (forward)
  Parts parts;
  Device device = Device::cpu;              // --device
  Impl impl = Impl::teaching;               // --impl
  index_t threads = 0;                      // --threads (the fast path; 0: every hardware thread)
  bool tiles_given = false;                 // --block-q or --block-k on the command line
  bool br_given = false, bc_given = false;  // which of them
  bool dtype_given = false, precision_given = false;  // --dtype, --precision on the command line
  bool precision_named =
      true;                    // the precision came from --precision (not --dtype): messages say so
  bool inputs_read = false;    // prepare_inputs has read --q, --k, --v (n, m, d are theirs)
  bool deterministic = false;  // --deterministic (backward on the GPU)
  bool draws_per_mask = false;  // backward: the lecture draws Q, K, V afresh for its causal run
  bool causal_implied = false;  // --causal-align without --causal
  bool align_given = false;     // --causal-align on the command line
  std::vector<std::string> showcase;  // what --break changed so that its mistake shows
  std::vector<index_t> lead;  // a batch's leading dimensions ((b) or (b, h)), from --q; () one head

  index_t heads() const {
    index_t count = 1;
    for (index_t x : lead) count *= x;
    return count;
  }

  // Which triple of the lecture's random draws the run takes: the lecture's demo 3 loops over
  // causal = False, True and draws inside the loop, so its causal run takes the second triple.
  index_t draw() const { return draws_per_mask && causal ? 1 : 0; }

  AttnParams params() const { return AttnParams{causal, align, scale}; }
  // The tiles a pass uses: --block-q, --block-k (or the lecture's), except that the fast path
  // chooses its own from the machine's cache (fast::tiles_for) unless they were given, and the
  // GPU rungs simt, tc, mma, hopper compute their fixed tiles (cuda::problem_tiles, per pass:
  // mma's forward and backward differ, hopper's forward Br at d = 64 by the shape; other tiles
  // given are refused); a tile larger than the problem is the problem's size.
  TileSizes tiles(cuda::Pass pass = cuda::Pass::fwd) const;
  Tiling tiling(cuda::Pass pass = cuda::Pass::fwd) const {
    const TileSizes t = tiles(pass);
    return Tiling{n, keys(), t.Br, t.Bc};
  }
  Variant variant() const { return Variant{precision, mistake}; }
  bool emulated() const { return precision == Precision::bf16 || precision == Precision::fp16; }
  // The precision the run is judged in: the emulated one, else --dtype's.
  Precision working() const {
    return emulated() ? precision : dtype == DType::fp32 ? Precision::fp32 : Precision::fp64;
  }
  // Where sums accumulate: fp32 for fp32 and the emulated formats, fp64 for fp64.
  Precision accumulator() const {
    return dtype == DType::fp64 && !emulated() ? Precision::fp64 : Precision::fp32;
  }
};

enum class Subcommand { forward, backward };

// Sizes, tiles, mask, dtype, seed, scale, trace, .npy files, --precision, --break; the defaults
// shown are those already in `o`.
void add_attention_options(CLI::App* sub, AttentionOptions& o, Subcommand which);

// The run's arrays from files. A batch ((b, n, d) or (b, h, n, d) inputs: batch_arrays.hpp) is
// held head by head; Q, K, V, dO, O, L are then the selected head's.
struct LoadedArrays {
  Mat<double> Q, K, V, dO;        // dO empty unless --do
  Mat<double> O, L;               // backward --o, --lse (L as n x 1): empty unless given
  std::vector<index_t> lead;      // the inputs' leading dimensions: () for one head, (b) or (b, h)
  Heads Qs, Ks, Vs, dOs, Os, Ls;  // every head of a batch (empty for one head)
  RunFiles files;                 // every input and output, checked; the outputs staged at the end
  index_t heads() const { return lead.empty() ? 1 : index_t(Qs.heads.size()); }
  void select(index_t k);  // Q, K, V (dO, O, L) := head k's (a batch only)
};

// The one validation step of a forward or backward run, between parsing and computing: afterwards
// `o` is the checked problem description and nothing below it refuses an option. In the order the
// user sees the errors (each one line; usage, exit 2, before a missing GPU, exit 5):
//   1. the dtype settled: --dtype bf16|fp16 is --precision bf16|fp16 (stored in that format,
//      computed in fp32); --dtype and --precision that disagree are refused;
//   2. what the device and --impl need of the options (require_device, device.hpp), with d from
//      --d (or, when --q gives it, only what holds for any d);
//   3. the mistake's showcase (a mistake that needs a mask turns it on: finite-mask needs masked
//      scores, wrong-align means bottom-right was intended), every output path checked against
//      the inputs and each other, --q/--k/--v (and --do) read: n, m, d are theirs; the size of a
//      --trace rows listing;
//   4. with d from the files: what the rung needs of that d (require_device_d, device.hpp);
//   5. forward: --show-p within n.
// The rung's d rule comes after the files on purpose: d is known only then, and checking
// everything else first refuses a wrong combination of options before a large file is read.
// With --o, --lse (backward) the student's O and L are read in step 3 too.
LoadedArrays validate_run(AttentionOptions& o, Subcommand which);

// Refuses sizes whose reference (extra_nm matrices of n x m, `bytes` per element) would not fit,
// beside the inputs and outputs of every head (one head's reference is held at a time).
void ensure_reference_fits(const AttentionOptions& o, double extra_nm, std::size_t bytes,
                           index_t heads = 1);

// The problem: shapes, precision, scale, tiles (the pass's), mask, where the inputs come from.
void print_problem(const AttentionOptions& o, cuda::Pass pass = cuda::Pass::fwd);

// The "problem" event that opens a JSON trace: sizes, tiles and the tile grid (the pass's), mask,
// where the inputs come from (the lecture's draws, another seed's, or files), --break, --show-p.
nlohmann::json problem_event(const AttentionOptions& o, const char* subcommand,
                             cuda::Pass pass = cuda::Pass::fwd);

// Where the inputs come from: "files" (--q, --k, --v), "lecture" (drawn as the lecture draws
// them, after torch.manual_seed(0)) or "seeded" (the same draws after another --seed).
const char* input_source(const AttentionOptions& o);

// The threads the fast path runs on: --threads, else every hardware thread.
index_t thread_count(const AttentionOptions& o);

// The type the reference of a run is computed in: fp64, or 80-bit long double for an fp64 run.
std::string reference_name(const AttentionOptions& o);

// The section title: against the reference, in the type it was computed in.
void print_reference_title(const AttentionOptions& o);

// The "result" event of forward and backward: for each array X its error err_X, the naive
// error naive_X, the bound bound_X and the verdict verdict_X ("pass", "fail", "no verdict"),
// the reference's type ("long double" for an fp64 run, else "fp64"), and "pass": all of them pass.
// An array the run does not use (D under --break no-d) has "verdict_X": "not used".
nlohmann::json result_event(const AttentionOptions& o, const char* subcommand,
                            const RunVerdict& verdict);

// The verdict of a run over its heads: every head's folded (each array keeps the worst head's),
// the heads that pass, the first that does not (-1: none).
struct HeadsVerdict {
  RunVerdict all;
  index_t heads = 0, passed = 0, first_failing = -1;
  void add(index_t k, const RunVerdict& head);
};

// Head k's options: head 0 is the run as one head prints it (trace, tables, --show-p); the other
// heads of a batch print nothing, nor does head 0 under --quiet (the batch's lines are then its
// results).
AttentionOptions head_options(const AttentionOptions& o, index_t k);

// After a batch's last head, under `title` (heads, their leading dimensions, the reference): the
// worst error of each array over the heads, how many pass, the first failing head. Nothing for
// one head.
void print_heads(const AttentionOptions& o, const HeadsVerdict& v,
                 ui::Msg title = ui::Msg::heads_title);

// The result event of a run over heads: the folded verdict's, with "heads" (1 for one head),
// "heads_passed" and "first_failing_head" (its leading indices, [] for one head; null when every
// head passed).
nlohmann::json result_event(const AttentionOptions& o, const char* subcommand,
                            const HeadsVerdict& verdict);

// The terminal's text sinks of one head's run, in the run's Recording while they live (none when
// the head is not traced: rec null).
class TextSinks {
 public:
  explicit TextSinks(Recording* rec) : rec_(rec) {}
  TextSinks(const TextSinks&) = delete;
  TextSinks& operator=(const TextSinks&) = delete;
  ~TextSinks() {
    for (TraceSink* s : added_) rec_->remove_text(s);
  }
  void add(TraceSink* s) {
    if (rec_) rec_->add_text(s), added_.push_back(s);
  }

 private:
  Recording* rec_;
  std::vector<TraceSink*> added_;
};

// "head (1, 2): " + what.
std::string in_head(const AttentionOptions& o, index_t k, const std::string& what);

// Every head of the run in order: files.select(k), then verdict.add(k, head(k, options,
// recording)), with head k's options (head_options) and the run's Recording for head 0 only (the
// trace is head 0's). A refusal inside a head of a batch (an output that is not finite) names the
// head.
template <class Head>
HeadsVerdict run_heads(const AttentionOptions& o, LoadedArrays& files, Recording& rec,
                       Head&& head) {
  HeadsVerdict verdict;
  for (index_t k = 0; k < o.heads(); ++k) {
    files.select(k);
    try {
      verdict.add(k, head(k, head_options(o, k), k == 0 ? &rec : nullptr));
    } catch (const Error& e) {
      if (o.lead.empty()) throw;
      throw Error(e.code, in_head(o, k, e.what()));
    }
  }
  return verdict;
}

// Refuses (exit 1, before any file is written) an output that is not finite where its reference
// is: a value the run made inf or NaN from finite inputs is never saved or shown beside a pass.
[[noreturn]] void refuse_nonfinite_at(const char* name, double value, index_t k, index_t cols,
                                      Precision p);
template <class X, class R>
void refuse_nonfinite(const char* name, const X& x, const R& ref, Precision p) {
  const index_t k = first_nonfinite(x, ref);
  if (k >= 0) refuse_nonfinite_at(name, double(x.derived().data()[k]), k, x.cols(), p);
}

// The verdict of the tool's own run: exit 1 in one line (after the table is shown, before any file
// is written) when it is not a pass, unless --break made a mistake on purpose (its failure is the
// lesson: exit 0).
void conclude(const AttentionOptions& o, const RunVerdict& verdict);

// After the verdict of a --break run: FAIL is the expected outcome (or why it passed).
void print_mistake_verdict(Mistake mistake, bool passed);

// "max |X - X_ref| = 3.1e-07   naive fp32 2.4e-07, bound 2x + 1e-6 = 1.5e-06: pass", or the
// reason there is no verdict (the naive yardstick overflowed in that precision).

// label_width: the widest label of the block, so that "|D - D_ref|" lines up with "|dQ - dQ_ref|".
void print_error_line(const std::string& label, const AttentionOptions& o, const RuleVerdict& v,
                      std::size_t label_width = 0);
// Every array of a verdict, lined up; an array the run does not use says so.
void print_error_lines(const AttentionOptions& o, const RunVerdict& v);

// What a --break mistake does and why it drifts (or, at these scores, does not).
void print_mistake(Mistake mistake);
void print_mistake_list(Subcommand which);

// Inputs in T: the files when given, else the lecture's random draws; rounded to the emulated
// precision when --precision asks.
// Values that do not fit the working precision are refused (require_fits), never rounded to inf.
template <class T>
Inputs<T> inputs_for(const AttentionOptions& o, const LoadedArrays& files) {
  if (files.Q.size()) {
    require_fits(files.Q, "Q", o.working(), o.files.q);
    require_fits(files.K, "K", o.working(), o.files.k);
    require_fits(files.V, "V", o.working(), o.files.v);
  }
  Inputs<T> in = files.Q.size() ? Inputs<T>{files.Q.cast<T>(), files.K.cast<T>(), files.V.cast<T>()}
                                : lecture_inputs<T>(o.seed, o.n, o.keys(), o.d, o.draw());
  if (o.emulated())
    for (Mat<T>* x : {&in.Q, &in.K, &in.V})
      *x = x->unaryExpr([&](T v) { return round_to(o.precision, v); });
  return in;
}

// Runs f.template operator()<T>() with T = float or double as --dtype / --precision say.
template <class F>
void dispatch_dtype(const AttentionOptions& o, F&& f) {
  if (o.dtype == DType::fp32 || o.emulated())
    f.template operator()<float>();
  else
    f.template operator()<double>();
}

}  // namespace fd::demos
