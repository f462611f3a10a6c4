// runner.hpp — what every test of the flashdemo binary shares: a run of `flashdemo ARGS` (or of a
// bash script) with stdout, stderr and the exit code captured apart, from a scratch directory of
// the test process's own; the output split into lines and words and measured in columns; JSON
// Lines parsed; the inputs the cases read written; and the program's own list of subcommands.
//
//   Run.code = the exit status, or 128 + the signal that ended the run
//   columns(line)         = code points (every one one column wide)
//   display_columns(line) = code points, CJK (U+3000..U+9FFF) and fullwidth forms (U+FF00..U+FF60)
//                           counted twice, as a terminal draws them
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>  // the cases that read JSON include nlohmann/json.hpp

#include "flashdemo/host_device/base.hpp"

namespace cli {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // no run under ulimit -v: ASan reserves its shadow memory
#else
constexpr bool kSanitized = false;
#endif

struct Run {
  int code = -1;
  std::string out, err;
};

// The whole file at path ("" when it cannot be read).
std::string slurp(const std::string& path);

// Runs `flashdemo ARGS` (LC_ALL=C) with stdout and stderr captured apart.
Run run(const std::string& args);

// The flashdemo binary, quoted for a shell.
std::string exe();

// Runs a bash script in `dir` (FD stands for the flashdemo binary), stdout and stderr apart.
Run in_dir(const std::string& dir, const std::string& script);

bool has(const std::string& text, const std::string& piece);
std::vector<std::string> lines(const std::string& text);
std::vector<std::string> words(const std::string& line);
std::size_t columns(const std::string& line);
std::size_t display_columns(const std::string& line);

// Every line of a --json run parsed; fails the test on a line that is not a JSON object with an
// "event".
std::vector<nlohmann::json> json_lines(const std::string& out);
std::size_t count_events(const std::vector<nlohmann::json>& objects, const std::string& event);

// Q, K, V (and dO) of the given sizes written as .npy into the working directory: in_q.npy,
// in_k.npy, in_v.npy, in_do.npy, and in_q32.npy (a float32 Q).
void write_inputs(fd::index_t n, fd::index_t m, fd::index_t d);
inline const std::string kQKV = "--q in_q.npy --k in_k.npy --v in_v.npy";

// A batch of b x h heads, each with its own random Q, K, V, dO and the teaching path's O, L,
// dQ, dK, dV (causal, bottom-right, tiles 8 x 8), written as (b, h, rows, d) files (L: (b, h,
// n)), as an assignment saves them: b_q.npy, b_k.npy, b_v.npy, b_do.npy, b_o.npy, b_l.npy,
// b_dq.npy, b_dk.npy, b_dv.npy. The values, head after head, are returned too.
struct BatchFiles {
  std::vector<double> Q, K, V, dO, O, L, dQ, dK, dV;
};
BatchFiles write_batch(fd::index_t b, fd::index_t h, fd::index_t n, fd::index_t m, fd::index_t d);
inline const std::string kBatchQKV =
    "--q b_q.npy --k b_k.npy --v b_v.npy --causal --causal-align bottom-right";

// Whether this machine runs CUDA kernels: a CUDA build and a GPU that answers.
bool gpu_here();

// The program's own list of subcommands, the one source of every list of them in these tests:
// the names of the "Subcommands:" section of the top-level --help, in its order.
std::vector<std::string> listed_subcommands();

// A list of runs said to cover "every subcommand" checked against the program's own list: each
// listed subcommand is the first word of one of `commands` or a key of `elsewhere` (whose value
// says where, or why not, it is covered), and each key of `elsewhere` is a listed subcommand. A new
// subcommand that such a list has not reached fails here, named.
void check_every_subcommand(const std::vector<std::string>& commands,
                            const std::map<std::string, std::string>& elsewhere);

}  // namespace cli
