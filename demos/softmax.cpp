// softmax.cpp — `flashdemo softmax`: parse, call the library, print. No math here.
#include "softmax.hpp"

#include <fmt/core.h>

#include <memory>
#include <sstream>

#include "common.hpp"
#include "flashdemo/npy.hpp"
#include "flashdemo/random.hpp"
#include "flashdemo/softmax.hpp"
#include "ui/format.hpp"
#include "ui/text_trace.hpp"

namespace fd::demos {
namespace {

struct SoftmaxOptions {
  index_t n = 10;     // lecture: torch.randn(10) * 5
  index_t block = 3;  // lecture: online_softmax_stats(x, block=3)
  std::uint32_t seed = 0;
  std::optional<double> scale;
  std::string values;
  std::string input;          // a .npy vector
  DType dtype = DType::fp32;  // the lecture's x is float32
};

std::vector<double> parse_values(const std::string& text) {
  std::vector<double> x;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0')
      throw Error(kUsage, fmt::format("--values: '{}' is not a number", item));
    if (!std::isfinite(v))
      throw Error(kUsage, fmt::format("--values: '{}' is not a finite number", item));
    x.push_back(v);
  }
  if (x.empty()) throw Error(kUsage, "--values: give at least one number, e.g. --values=1.5,-2,3");
  return x;
}

// The lecture's x = torch.randn(n) * scale, rounded to the element type as torch would.
template <class T>
std::vector<T> input_values(const SoftmaxOptions& o) {
  std::vector<T> x;
  if (!o.input.empty()) {
    const NpyArray a = read_npy(o.input);
    require_finite(a, o.input);
    if (a.shape.size() != 1 || a.shape[0] < 1)
      throw NpyError(o.input + ": expected a non-empty vector (1-D array)");
    for (double v : a.data) x.push_back(T(v));
    return x;
  }
  if (!o.values.empty()) {
    for (double v : parse_values(o.values)) x.push_back(T(v));
    return x;
  }
  const T scale = T(o.scale.value_or(5.0));
  for (double v : TorchGenerator(o.seed).randn(o.n)) x.push_back(T(v) * scale);
  return x;
}

template <class T>
std::vector<double> widen(const std::vector<T>& x) {
  return std::vector<double>(x.begin(), x.end());
}

template <class T>
void print_merge(const std::vector<T>& x, index_t block, const RowState<T>& whole) {
  ui::section(
      "Merge: two halves scanned apart, then combined (the step split-KV and ring "
      "attention build on)");
  if (x.size() < 2) return fmt::print("  (a single value has no halves to merge)\n");
  const auto half = x.begin() + std::ptrdiff_t(x.size() / 2);
  const RowState<T> a = online_softmax_stats(std::vector<T>(x.begin(), half), block);
  const RowState<T> b = online_softmax_stats(std::vector<T>(half, x.end()), block);
  const RowState<T> ab = merge(a, b), ba = merge(b, a);
  const std::size_t h = x.size() / 2;
  fmt::print("  x[0:{}]  → m_a = {:.3f}, l_a = {:.4f}\n", h, a.m, a.l);
  fmt::print("  x[{}:{}] → m_b = {:.3f}, l_b = {:.4f}\n", h, x.size(), b.m, b.l);
  fmt::print("  m = max(m_a, m_b) = {:.3f},  l = exp(m_a - m) l_a + exp(m_b - m) l_b = {:.4f}\n",
             ab.m, ab.l);
  fmt::print(
      "  one pass over all of x gave m = {:.3f}, l = {:.4f}:  |Δm| = {},  |Δl| = {};"
      "  merge(b, a) - merge(a, b) = {}\n",
      whole.m, whole.l, ui::sci(std::abs(double(ab.m - whole.m))),
      ui::sci(std::abs(double(ab.l - whole.l))), ui::sci(std::abs(double(ba.l - ab.l))));
}

template <class T>
void run_softmax(const SoftmaxOptions& o) {
  const std::vector<T> x = input_values<T>(o);
  ui::heading("flashdemo softmax · online softmax: one pass, a block at a time",
              "lecture 5, demo 1 (05_flash_attention.py: online_softmax_stats)");
  fmt::print("\n  x = {}  ({} values, {})\n", ui::list(widen(x), 2, 80), x.size(),
             dtype_name(o.dtype));
  if (!o.input.empty())
    fmt::print("      read from {}\n", o.input);
  else if (o.values.empty())
    fmt::print("      drawn as torch.randn({}) * {} after torch.manual_seed({})\n", o.n,
               o.scale.value_or(5.0), o.seed);
  ui::section(fmt::format("Blocks of {}: m = running max, l = sum of exp(x - m)", o.block));
  ui::SoftmaxTable table(widen(x));
  table.print_header();
  const RowState<T> state = online_softmax_stats(x, o.block, &table);
  const std::vector<T> online = softmax_from_state(x, state), exact = softmax_three_pass(x);
  double diff = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    diff = std::max(diff, std::abs(double(online[i]) - double(exact[i])));
  ui::section("Result");
  fmt::print("  online:  m = {:.3f}, l = {:.4f};  softmax_i = exp(x_i - m) / l\n", state.m,
             state.l);
  fmt::print("  max |online - three-pass softmax| = {}  ({})\n", ui::sci(diff),
             dtype_name(o.dtype));
  fmt::print("  logsumexp = m + log(l) = {:.5f},  computed directly: {:.5f}\n", state.finalize(),
             logsumexp_direct(x));
  print_merge(x, o.block, state);
}

}  // namespace

void setup_softmax(CLI::App& app) {
  auto o = std::make_shared<SoftmaxOptions>();
  CLI::App* sub = app.add_subcommand(
      "softmax", "Online softmax: running max m and sum l, one block at a time (lecture demo 1)");
  auto* n = add_count(sub, "--n", o->n, "How many values to draw", index_t(1) << 24);
  add_count(sub, "--block", o->block, "Values read per block", index_t(1) << 24);
  auto* seed = add_seed(sub, o->seed);
  auto* scale = add_finite(sub, "--scale", o->scale, "Draw values as N(0,1) x SCALE [5]");
  auto* values = sub->add_option("--values", o->values, "Your own values: --values=1.5,-2,3")
                     ->excludes(n)
                     ->excludes(seed)
                     ->excludes(scale);
  sub->add_option("--input", o->input, "Read the values from a .npy vector")
      ->excludes(n)
      ->excludes(seed)
      ->excludes(scale)
      ->excludes(values);
  add_dtype(sub, o->dtype)->default_str("fp32");
  sub->callback(
      [o] { o->dtype == DType::fp32 ? run_softmax<float>(*o) : run_softmax<double>(*o); });
}

}  // namespace fd::demos
