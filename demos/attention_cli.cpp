// attention_cli.cpp — the options and output `forward` and `backward` share.
#include "attention_cli.hpp"

#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "flashdemo/compare.hpp"
#include "flashdemo/npy.hpp"
#include "ui/format.hpp"
#include "ui/mistakes.hpp"

namespace fd::demos {
namespace {

constexpr index_t kMaxSize = index_t(1) << 31;

void add_files(CLI::App* sub, AttentionOptions& o, Subcommand which) {
  ArrayFiles& f = o.files;
  auto* q = sub->add_option("--q", f.q, "Q from a .npy file (n x d, float32 or float64)");
  auto* k = sub->add_option("--k", f.k, "K from a .npy file (m x d)");
  auto* v = sub->add_option("--v", f.v, "V from a .npy file (m x d)");
  q->needs(k)->needs(v);
  k->needs(q);
  v->needs(q);
  for (const char* sized : {"--n", "--m", "--d", "--seed"}) q->excludes(sub->get_option(sized));
  sub->add_option("--save-o", f.save_o, "Write O to this .npy file");
  sub->add_option("--save-lse", f.save_lse, "Write L (the logsumexp of each row) to .npy");
  if (which == Subcommand::backward) {
    sub->add_option("--do", f.dO, "dO from a .npy file (n x d); default dO = 2 O")->needs(q);
    sub->add_option("--save-dq", f.save_dq, "Write dQ to this .npy file");
    sub->add_option("--save-dk", f.save_dk, "Write dK to this .npy file");
    sub->add_option("--save-dv", f.save_dv, "Write dV to this .npy file");
  }
}

void add_variants(CLI::App* sub, AttentionOptions& o, Subcommand which) {
  auto* precision = add_choice<Precision>(
      sub, "--precision", o.precision, {{"bf16", Precision::bf16}, {"fp16", Precision::fp16}},
      "Emulate bf16 or fp16: Q, K, V and P rounded (ties to even), fp32 accumulation");
  precision->excludes(sub->get_option("--dtype"));
  std::vector<std::pair<std::string, Mistake>> names{{"list", Mistake::none}};
  for (const ui::MistakeInfo& m : ui::mistakes())
    if (which == Subcommand::backward || !m.backward_only) names.push_back({m.name, m.mistake});
  add_choice<Mistake>(sub, "--break", o.mistake, names,
                      "Run with a classic mistake and see the drift ('list' lists them)")
      ->each([&o](const std::string& s) { o.list_mistakes = s == "list"; });
}

Mat<double> load_matrix(const std::string& path, const char* what, index_t rows, index_t cols) {
  const NpyArray a = read_npy(path);
  require_finite(a, path);
  if (a.shape.size() != 2)
    throw NpyError(path + ": " + what + " must be a matrix (2-D), got " +
                   std::to_string(a.shape.size()) + "-D");
  if ((rows >= 0 && a.shape[0] != rows) || (cols >= 0 && a.shape[1] != cols) || a.shape[0] < 1 ||
      a.shape[1] < 1)
    throw NpyError(fmt::format("{}: {} has shape ({}, {}), expected ({}, {})", path, what,
                               a.shape[0], a.shape[1], rows >= 0 ? std::to_string(rows) : "rows",
                               cols >= 0 ? std::to_string(cols) : "d"));
  return to_matrix<double>(a);
}

// Every output must be writable and distinct from every input, before anything runs.
void check_outputs(const ArrayFiles& f) {
  const std::string inputs[] = {f.q, f.k, f.v, f.dO};
  for (const std::string& out : {f.save_o, f.save_lse, f.save_dq, f.save_dk, f.save_dv}) {
    if (out.empty()) continue;
    for (const std::string& in : inputs)
      if (!in.empty() &&
          std::filesystem::weakly_canonical(in) == std::filesystem::weakly_canonical(out))
        throw Error(kUsage, fmt::format("output {} is also an input: choose another name", out));
    const std::string probe = out + ".tmp";
    if (!std::ofstream(probe)) throw Error(kFile, fmt::format("{}: cannot write there", out));
    std::remove(probe.c_str());
  }
}

}  // namespace

void add_attention_options(CLI::App* sub, AttentionOptions& o, Subcommand which) {
  add_count(sub, "--n", o.n, "Queries (rows of Q)", kMaxSize);
  add_count(sub, "--m", o.m, "Keys (rows of K and V)", kMaxSize)->default_str("n");
  add_count(sub, "--d", o.d, "Head dimension", index_t(1) << 16);
  add_count(sub, "--block-q", o.Br, "Br: query rows per tile", kMaxSize);
  add_count(sub, "--block-k", o.Bc, "Bc: keys per tile", kMaxSize);
  sub->add_flag("--causal", o.causal, "Causal mask: query q sees only keys up to the diagonal");
  add_align(sub, o.align);
  add_dtype(sub, o.dtype);
  add_seed(sub, o.seed);
  add_finite(sub, "--scale", o.scale, "Softmax scale [1/sqrt(d)]");
  add_choice<ui::TraceLevel>(sub, "--trace", o.trace,
                             {{"none", ui::TraceLevel::none},
                              {"summary", ui::TraceLevel::summary},
                              {"tiles", ui::TraceLevel::tiles},
                              {"rows", ui::TraceLevel::rows}},
                             "How much to show: none, summary (tile map), tiles (a line per "
                             "tile), rows (every row after every tile)")
      ->default_str("summary");
  add_files(sub, o, which);
  add_variants(sub, o, which);
}

LoadedArrays prepare_inputs(AttentionOptions& o) {
  if (o.mistake == Mistake::wrong_align) o.causal = true, o.align = CausalAlign::bottom_right;
  if (o.mistake == Mistake::finite_mask) o.causal = true;
  check_outputs(o.files);
  LoadedArrays a;
  if (o.files.q.empty()) return a;
  a.Q = load_matrix(o.files.q, "Q", -1, -1);
  a.K = load_matrix(o.files.k, "K", -1, a.Q.cols());
  a.V = load_matrix(o.files.v, "V", a.K.rows(), a.Q.cols());
  if (!o.files.dO.empty()) a.dO = load_matrix(o.files.dO, "dO", a.Q.rows(), a.Q.cols());
  o.n = a.Q.rows(), o.m = a.K.rows(), o.d = a.Q.cols();
  return a;
}

void ensure_reference_fits(const AttentionOptions& o, double extra_nm) {
  const double n = double(o.n), m = double(o.keys()), d = double(o.d);
  const double words = (n + 2 * m) * d * 4 + extra_nm * n * m;  // inputs, copies; n x m arrays
  ensure_fits(words * 8.0, fmt::format("the fp64 reference ({} matrices of n x m)", extra_nm));
}

const char* precision_name(const AttentionOptions& o) {
  switch (o.precision) {
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    default:
      return dtype_name(o.dtype);
  }
}

void print_problem(const AttentionOptions& o) {
  const AttnParams params = o.params();
  const index_t m = o.keys();
  fmt::print("\n  Q: {} x {},  K, V: {} x {},  {}{},  scale = {}{:.6g},  tiles Br = {}, Bc = {}\n",
             o.n, o.d, m, o.d, precision_name(o), o.emulated() ? " (emulated, fp32 sums)" : "",
             o.scale ? "" : fmt::format("1/sqrt({}) = ", o.d), params.scale_for(o.d), o.Br, o.Bc);
  fmt::print("  mask: {}\n", !o.causal ? "none (every query sees every key)"
                             : o.align == CausalAlign::top_left
                                 ? "causal, top-left (query q sees keys k <= q)"
                                 : "causal, bottom-right (query q sees keys k <= q + m - n)");
  const Mask mask = params.mask_for(o.n, m);
  index_t unseeing = 0;
  for (index_t q = 0; q < o.n; ++q) unseeing += mask.visible_keys(q) == 0;
  if (unseeing > 0)
    fmt::print("  {} of {} rows see no key at all (bottom-right, n > m): their O = 0, L = -inf\n",
               unseeing, o.n);
  if (o.files.q.empty())
    fmt::print(
        "  inputs: Q, K, V = torch.randn(.., dtype=float64) x 3 after torch.manual_seed({})"
        "\n",
        o.seed);
  else
    fmt::print("  inputs: Q = {}, K = {}, V = {}\n", o.files.q, o.files.k, o.files.v);
}

void print_error_line(const std::string& label, const AttentionOptions& o, double err,
                      double err_naive, double ref_max_abs) {
  std::string verdict;
  if (o.dtype == DType::fp64 && !o.emulated()) {
    verdict = err <= double_bound(ref_max_abs) ? "exact to double rounding"
                                               : "FAIL: above 1e-12 relative";
  } else {
    const double bound = two_x_bound(err_naive);
    verdict = fmt::format("naive {} {}, bound 2x + 1e-6 = {}: {}", precision_name(o),
                          ui::sci(err_naive), ui::sci(bound), err <= bound ? "pass" : "FAIL");
  }
  fmt::print("  max |{} - {}_ref| = {:<8}  {}\n", label, label, ui::sci(err), verdict);
}

void print_mistake(Mistake mistake) {
  const ui::MistakeInfo& m = ui::info(mistake);
  ui::section(fmt::format("Mistake on purpose: --break {} ({})", m.name, m.summary));
  std::string why = m.why;
  std::size_t start = 0;
  while (start < why.size()) {
    const std::size_t end = why.find('\n', start);
    fmt::print("  {}\n", why.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

void print_mistake_list(Subcommand which) {
  fmt::print("Mistakes for --break (flashdemo {} --break NAME):\n",
             which == Subcommand::forward ? "forward" : "backward");
  for (const ui::MistakeInfo& m : ui::mistakes())
    if (which == Subcommand::backward || !m.backward_only)
      fmt::print("  {:<14} {}\n", m.name, m.summary);
}

template <class X>
void save_if(const std::string& path, const X& x) {
  if (!path.empty()) write_npy(path, x);
}

template void save_if(const std::string&, const Mat<float>&);
template void save_if(const std::string&, const Mat<double>&);
template void save_if(const std::string&, const Vec<float>&);
template void save_if(const std::string&, const Vec<double>&);

}  // namespace fd::demos
