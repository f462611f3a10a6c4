// softmax.cpp — `flashdemo softmax`: parse, call the library, print. No math here.
#include "softmax.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "common.hpp"
#include "flashdemo/io/file_io.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/teaching/softmax.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"
#include "ui/text_trace.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

std::vector<double> parse_values(const std::string& text) {
  std::vector<double> x;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0')
      throw Error(kUsage, ui::tr(Msg::softmax_err_not_number, item));
    if (!std::isfinite(v)) throw Error(kUsage, ui::tr(Msg::softmax_err_not_finite, item));
    x.push_back(v);
  }
  if (x.empty()) throw Error(kUsage, "--values: " + ui::tr(Msg::softmax_err_empty));
  return x;
}

// The lecture's x = torch.randn(n) * scale, rounded to the element type as torch would.
template <class T>
std::vector<T> input_values(const SoftmaxOptions& o) {
  std::vector<T> x;
  if (!o.input.empty()) {
    const NpyArray a = read_npy(o.input, 0.8 * memory_available());
    require_finite(a, o.input);
    if (a.shape.size() != 1 || a.shape[0] < 1)
      throw NpyError(ui::tr(Msg::softmax_err_vector, shown(o.input)));
    require_fits(a.data.data(), index_t(a.data.size()), 1, "x", precision_of<T>(), o.input);
    for (double v : a.data) x.push_back(T(v));
    return x;
  }
  if (!o.values.empty()) {
    const std::vector<double> v = parse_values(o.values);
    require_fits(v.data(), index_t(v.size()), 1, "--values", precision_of<T>(), "");
    for (double value : v) x.push_back(T(value));
    return x;
  }
  const T scale = T(o.scale.value_or(5.0));
  for (double v : TorchGenerator(o.seed).randn(o.n)) x.push_back(T(v) * scale);
  std::vector<long double> wide;  // the same products wider than T, to see one overflow T
  for (double v : TorchGenerator(o.seed).randn(o.n))
    wide.push_back((long double)T(v) * (long double)o.scale.value_or(5.0));
  require_fits(wide.data(), index_t(wide.size()), 1, "x = randn * --scale", precision_of<T>(), "");
  return x;
}

// A value with `decimals` places, in scientific notation past 1e6 (ui::fixed).
template <class T>
std::string fx(T v, int decimals) {
  return ui::fixed(double(v), decimals);
}

template <class T>
std::vector<double> widen(const std::vector<T>& x) {
  return std::vector<double>(x.begin(), x.end());
}

template <class T>
void print_merge(const std::vector<T>& x, index_t block, const RowState<T>& whole) {
  ui::section(ui::tr(Msg::softmax_merge));
  if (x.size() < 2) return ui::say(Msg::softmax_merge_single);
  const auto half = x.begin() + std::ptrdiff_t(x.size() / 2);
  const RowState<T> a = online_softmax_stats(std::vector<T>(x.begin(), half), block);
  const RowState<T> b = online_softmax_stats(std::vector<T>(half, x.end()), block);
  const RowState<T> ab = merge(a, b), ba = merge(b, a);
  const std::size_t h = x.size() / 2;
  std::string left = fmt::format("x[0:{}]", h), right = fmt::format("x[{}:{}]", h, x.size());
  const std::size_t width = std::max(left.size(), right.size());
  left.resize(width, ' '), right.resize(width, ' ');
  ui::say(Msg::softmax_merge_a, left, fx(a.m, 3), fx(a.l, 4));
  ui::say(Msg::softmax_merge_b, right, fx(b.m, 3), fx(b.l, 4));
  ui::say(Msg::softmax_merge_ab, fx(ab.m, 3), fx(ab.l, 4));
  ui::say(Msg::softmax_merge_check, fx(whole.m, 3), fx(whole.l, 4),
          ui::sci(std::abs(double(ab.m - whole.m))), ui::sci(std::abs(double(ab.l - whole.l))),
          ui::sci(std::abs(double(ba.l - ab.l))));
}

// Shown only where it breaks (large or very negative x): the naive softmax's inf and nan, computed.
template <class T>
void print_naive(const std::vector<T>& x, DType dtype) {
  const NaiveSoftmax<T> r = softmax_naive(x);
  if (!r.broke()) return;
  const std::string type = dtype_name(dtype);
  ui::section(ui::tr(Msg::softmax_naive, type));
  const std::size_t i = std::size_t(r.culprit);
  if (std::isinf(r.Z))
    ui::say(Msg::softmax_naive_over, fx(x[i], 2), type, fx(r.overflow_above, 2), i, r.nonfinite,
            x.size());
  else
    ui::say(Msg::softmax_naive_under, fx(x[i], 2), type, fx(r.underflow_below, 2), i, r.nonfinite,
            x.size());
  ui::say(Msg::softmax_naive_fix);
}

// Refuses (exit 3) a softmax of x that would not fit: x's copies (widened for the table and the
// events, the online and exact results, the naive run's) and the problem event's x as JSON values
// (built, then taken apart), what the run records (a block event each, x in the problem event),
// and the table's line a block, held as stdout is.
void ensure_softmax_fits(const SoftmaxOptions& o, std::size_t n) {
  const double values = double(n), blocks = std::ceil(values / double(o.block));
  const bool table = o.parts.map && !ui::settings().quiet && !ui::settings().json;
  const double bytes = 8 * 8 * values + 2 * 16 * values +
                       recorded_bytes(o.files, blocks + 2, values + 5 * blocks) +
                       (table ? 3 * 80 * blocks : 0);
  ensure_fits(bytes, ui::tr(Msg::softmax_memory_what, n));
}

template <class T>
void run_softmax_as(const SoftmaxOptions& o, RunFiles& files) {
  const std::vector<T> x = input_values<T>(o);
  ensure_softmax_fits(o, x.size());
  Recording rec(o.files, ui::tr(Msg::softmax_title));
  const bool drawn = o.input.empty() && o.values.empty();
  rec.emit({{"event", "problem"},
            {"subcommand", "softmax"},
            {"inputs", !o.input.empty()    ? "file"
                       : !o.values.empty() ? "values"
                       : o.seed == 0       ? "lecture"
                                           : "seeded"},
            {"seed", drawn ? nlohmann::json(o.seed) : nlohmann::json(nullptr)},
            {"x", ui::numbers(widen(x))},
            {"block", o.block},
            {"dtype", dtype_name(o.dtype)}});
  if (o.parts.heading) ui::heading(ui::tr(Msg::softmax_title), ui::tr(Msg::softmax_source));
  if (o.parts.problem) {
    ui::say(Msg::softmax_x, ui::list(widen(x), 2, 80), x.size(), dtype_name(o.dtype));
    if (!o.input.empty())
      ui::say(Msg::softmax_read_from, o.input);
    else if (o.values.empty())
      ui::say(Msg::softmax_drawn, o.n, o.scale.value_or(5.0), o.seed);
  }
  ui::SoftmaxTable table(widen(x));
  if (o.parts.map) {
    if (o.map_title) ui::section(ui::tr(Msg::softmax_blocks, o.block));
    table.print_header();
    if (!ui::settings().quiet && !ui::settings().json) rec.add_text(&table);
  }
  const RowState<T> state = online_softmax_stats(x, o.block, rec.sink());
  const std::vector<T> online = softmax_from_state(x, state), exact = softmax_three_pass(x);
  double diff = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    diff = std::max(diff, std::abs(double(online[i]) - double(exact[i])));
  if (o.parts.results) {
    ui::section(ui::tr(Msg::softmax_result));
    ui::result(Msg::softmax_online, fx(state.m, 3), fx(state.l, 4));
    ui::result(Msg::softmax_diff, ui::sci(diff), dtype_name(o.dtype));
    ui::result(Msg::softmax_lse, fx(state.finalize(), 5), fx(logsumexp_direct(x), 5));
  }
  if (o.parts.results) print_naive(x, o.dtype);
  if (o.parts.extra) print_merge(x, o.block, state);
  rec.emit({{"event", "result"},
            {"subcommand", "softmax"},
            {"m", ui::number(double(state.m))},
            {"l", ui::number(double(state.l))},
            {"L", ui::number(double(state.finalize()))},
            {"lse_direct", ui::number(double(logsumexp_direct(x)))},
            {"max_diff", ui::number(diff)}});
  rec.finish(files);
  files.commit();
}

}  // namespace

void setup_softmax(CLI::App& app) {
  auto o = std::make_shared<SoftmaxOptions>();
  CLI::App* sub = app.add_subcommand("softmax", ui::tr(Msg::softmax_help));
  auto* n = add_count(sub, "--n", o->n, ui::tr(Msg::softmax_opt_n), index_t(1) << 24);
  add_count(sub, "--block", o->block, ui::tr(Msg::softmax_opt_block), index_t(1) << 24);
  auto* seed = add_seed(sub, o->seed);
  auto* scale = add_finite(sub, "--scale", o->scale, ui::tr(Msg::softmax_opt_scale));
  auto* values = sub->add_option("--values", o->values, ui::tr(Msg::softmax_opt_values))
                     ->check(CLI::Validator(
                         [](const std::string& s) {
                           return s.empty() ? ui::tr(Msg::softmax_err_empty) : std::string();
                         },
                         "LIST", ""))
                     ->excludes(n)
                     ->excludes(seed)
                     ->excludes(scale);
  add_file(sub, "--input", o->input, ui::tr(Msg::softmax_opt_input))
      ->excludes(n)
      ->excludes(seed)
      ->excludes(scale)
      ->excludes(values);
  add_dtype(sub, o->dtype)->description(ui::tr(Msg::softmax_opt_dtype))->default_str("fp32");
  add_trace_files(sub, o->files);
  sub->footer(ui::tr(Msg::softmax_examples));
  sub->callback([o] { run_softmax(*o); });
}

void run_softmax(const SoftmaxOptions& o) {
  RunFiles files;
  files.input("--input", o.input);
  files.outputs(o.files);
  files.check();
  o.dtype == DType::fp32 ? run_softmax_as<float>(o, files) : run_softmax_as<double>(o, files);
}

}  // namespace fd::demos
