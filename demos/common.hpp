// common.hpp — what every subcommand shares: errors and exit codes, checked options, the
// memory guard, and the lecture's random inputs.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "flashdemo/attention.hpp"
#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/tools/benchmark.hpp"
#include "ui/i18n.hpp"

#include "flashdemo/judge/verdict.hpp"

namespace fd::demos {

// Exit codes (listed in the README).
enum ExitCode : int {
  kOk = 0,
  kUsage = 2,          // a bad option or value
  kTooLarge = 3,       // the run would not fit in memory
  kFile = 4,           // an input file is missing or malformed, or an output cannot be written
  kNoDevice = 5,       // --device cuda without CUDA in the build or without a GPU
  kCheckFailed = 1,    // a run failed the rule (or has no verdict): check's grades, the tool's own
  kInternal = 70,      // a bug in flashdemo (please report it)
  kInterrupted = 130,  // Ctrl-C at a pause (walkthrough, pages): 128 + SIGINT, as a shell says
};

// A failure the user caused and can fix: printed as one line, no stack trace.
struct Error : std::runtime_error {
  Error(int code_, const std::string& what) : std::runtime_error(what), code(code_) {}
  int code;
};

// Exit 1 in one line when a judged run is not a pass: "dQ, dK failed the rule ...", or "no verdict
// on O: ..." (the table above it says by how much, or how to grade it).
void conclude_run(const RunVerdict& verdict, Precision p);

// Ctrl-C at the walkthrough's pause: not an error, no message; the run ends with kInterrupted.
struct Interrupted {};

// bf16 and fp16: the inputs stored in that format, sums in fp32 (emulated in fp32 on the CPU,
// tensor cores on the GPU); computed in float, judged in that precision.
enum class DType { fp32, fp64, bf16, fp16 };

// Which parts of a subcommand's output to print: all of them from the command line; the
// walkthrough picks a few per screen.
struct Parts {
  bool heading = true;  // title and source line
  bool problem = true;  // sizes, mask, inputs
  bool map = true;      // the tile map
  bool results = true;  // errors against the reference
  bool extra = true;    // softmax: merge; backward: finite differences; memory: ledger
};
const char* dtype_name(DType t);
Precision dtype_precision(DType t);
// DType::bf16 and fp16: stored in that format, computed in fp32.
inline bool low_precision(DType t) {
  return t == DType::bf16 || t == DType::fp16;
}

// Options whose values are checked at parse time, with the problem named in the message.
// Integers are parsed signed, so "-5" is refused rather than wrapped to a huge unsigned value.
CLI::Option* add_count(CLI::App* app, const std::string& name, index_t& value,
                       const std::string& help, index_t max_value);
// A row number: a whole number >= 0 (its upper bound is checked once n is known).
CLI::Option* add_row(CLI::App* app, const std::string& name, index_t& value,
                     const std::string& help);
CLI::Option* add_seed(CLI::App* app, std::uint32_t& seed);
CLI::Option* add_finite(CLI::App* app, const std::string& name, std::optional<double>& value,
                        const std::string& help);
// --dtype fp64|fp32 (f64, f32 accepted); with `low`, bf16 and fp16 too.
CLI::Option* add_dtype(CLI::App* app, DType& value, bool low = false);
// The same with its own help text and no default shown.
CLI::Option* add_dtype(CLI::App* app, DType& value, bool low, const std::string& help);

// --pass fwd|bwd (default fwd), for bench, ladder and ring.
CLI::Option* add_pass(CLI::App* app, bench::Pass& value, const std::string& help);

// An option taking one name from a fixed list; anything else is refused listing the names.
template <class E>
CLI::Option* add_choice(CLI::App* app, const std::string& name, E& value,
                        const std::vector<std::pair<std::string, E>>& choices,
                        const std::string& help) {
  std::string names, spoken;  // "a, b" for --help, and as the current language lists them
  for (const auto& c : choices) {
    names += (names.empty() ? "" : ", ") + c.first;
    spoken += (spoken.empty() ? "" : ui::text(ui::Msg::list_comma)) + c.first;
  }
  auto find = [choices](const std::string& s) -> const E* {
    for (const auto& c : choices)
      if (c.first == s) return &c.second;
    return nullptr;
  };
  auto* opt = app->add_option_function<std::string>(
      name, [&value, find](const std::string& s) { value = *find(s); }, help);
  opt->check(CLI::Validator(
      [find, spoken](const std::string& s) -> std::string {
        return find(s) ? "" : ui::tr(ui::Msg::err_choice, s, spoken);
      },
      "{" + names + "}", ""));
  return opt;
}
// The shape of an attention problem: batch b, heads h, n queries and m keys (m = 0: as many as
// queries) of head dim d, and whether the causal mask is on. Declared once: every subcommand's
// options that take a shape derive from it (forward, backward, bench, ladder, decode, ring).
struct ProblemShape {
  index_t b = 1, h = 1, n = 1024, m = 0, d = 64;
  bool causal = false;
  index_t keys() const { return m ? m : n; }
};

// Which of the shape's options a subcommand takes, and their limits.
struct ShapeLimits {
  bool batched;   // --b and --h (each at most kMaxBatch)
  index_t max_n;  // --n and --m
  index_t max_d;  // --d
  ui::Msg n_help = ui::Msg::opt_n, m_help = ui::Msg::opt_m;
  bool m_is_n = true;  // --m defaults to n (and --help says so), else to the m given
};
inline constexpr index_t kMaxBatch = 4096;
// forward and backward: one head, the sizes a lesson or a file may have.
inline constexpr ShapeLimits kOneHead = {false, index_t(1) << 31, index_t(1) << 16};
// bench and ladder: a batch of heads, the d the kernels take.
inline constexpr ShapeLimits kBatched = {true, index_t(1) << 24, 256};

// --b and --h (when batched), --n, --m, --d, in that order, their defaults those already in s.
void add_shape(CLI::App* app, ProblemShape& s, const ShapeLimits& limits);
// --causal, where the subcommand's --help lists it.
CLI::Option* add_causal(CLI::App* app, ProblemShape& s);

// --causal-align top-left|bottom-right. An alignment only means something for a causal mask, so
// giving it implies --causal (the problem header then says so: *implied = true).
CLI::Option* add_align(CLI::App* app, CausalAlign& value, bool& causal, bool& implied);

// Refuses a run in which a value would overflow the precision it is held in: exit 4 naming the
// file when `file` is given (an input), else exit 2 (a quantity the options make too large).
// what: "Q", "S = scale Q K^T", ...; entries already infinite (masked scores) are left alone.
// x: count values, row-major with `cols` columns (for the position in the message).
template <class T>
void require_fits(const T* x, index_t count, index_t cols, const std::string& what, Precision p,
                  const std::string& file);
template <class T>
void require_fits(const Mat<T>& X, const std::string& what, Precision p, const std::string& file) {
  require_fits(X.data(), X.size(), X.cols(), what, p, file);
}

// The items of a comma-separated list, every one of them: "1,,2" and "1,2," hold an empty item
// (which the caller refuses, as it refuses one at the start).
std::vector<std::string> split_commas(const std::string& text);

// Refuses (exit kTooLarge) a run on `threads` threads when the system lets this process start
// fewer (ulimit -u, ulimit -v, named in the message): OpenMP would print its own lines and exit.
void ensure_threads(index_t threads, const char* option = "--threads");

// A run of the fast path: exit 2 in one line when FLASHDEMO_FAST_LEVEL names no level of this
// build, or one this CPU lacks (the other subcommands ignore the variable).
void require_fast_level();
// The limit that keeps a thread from starting, in words: ulimit -v when the address space left
// cannot hold another thread's stack, else ulimit -u when it is set, else the system's.
std::string thread_limit();

// Refuses (exit kTooLarge) a run that needs more than the memory available now.
void ensure_fits(double bytes, const std::string& what);
// The memory available now: free memory, or what ulimit -v leaves, whichever is less.
double memory_available();
std::string format_bytes(double bytes);

// The lecture's inputs: Q, K, V drawn in that order as torch.randn(.., dtype=float64)
// after torch.manual_seed(seed); `draw` = k takes the (k+1)-th triple, as a loop that draws
// afresh on every pass does (the lecture's demo 3 draws again for its causal run).
template <class T>
struct Inputs {
  Mat<T> Q, K, V;
};
template <class T>
Inputs<T> lecture_inputs(std::uint32_t seed, index_t n, index_t m, index_t d, index_t draw = 0);

}  // namespace fd::demos
