// common.cpp — checked options, the memory guard and the lecture's inputs.
#include "common.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <system_error>
#include <thread>
#include <vector>

#include "flashdemo/fast/levels.hpp"
#include "flashdemo/io/file_io.hpp"
#include "flashdemo/io/random.hpp"
#include "ui/file_errors.hpp"
#include "ui/i18n.hpp"
#include "ui/verdict.hpp"

namespace fd::demos {
namespace {

// Parses the whole of s as a signed integer; an empty optional when it is not one. A whole
// number beyond the range of long long comes back as LLONG_MAX or LLONG_MIN (too large either way).
std::optional<long long> parse_integer(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;  // on ERANGE strtoll saturates, and the range checks below say so
}

// A field of /proc/self/status or /proc/meminfo in bytes (kB there); -1 when absent. Read line
// by line: status has lines whose value is not a number ("Name:\tflashdemo").
double proc_kb(const char* file, const std::string& field) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0)
      return std::strtod(line.c_str() + field.size(), nullptr) * 1024.0;
  return -1;
}

// The memory this process may still take: what the system has available, and no more than the
// address space its limit (ulimit -v) leaves beyond what it maps already.
double available_memory_bytes() {
  double available = proc_kb("/proc/meminfo", "MemAvailable:");
  if (available < 0) available = 8.0 * 1024 * 1024 * 1024;  // no /proc: a modest 8 GiB
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const double mapped = std::max(0.0, proc_kb("/proc/self/status", "VmSize:"));
    available = std::min(available, std::max(0.0, double(limit.rlim_cur) - mapped));
  }
  return available;
}

}  // namespace

const char* dtype_name(DType t) {
  return precision_name(dtype_precision(t));
}

Precision dtype_precision(DType t) {
  switch (t) {
    case DType::fp32:
      return Precision::fp32;
    case DType::fp64:
      return Precision::fp64;
    case DType::bf16:
      return Precision::bf16;
    case DType::fp16:
      return Precision::fp16;
  }
  return Precision::fp64;
}

CLI::Option* add_count(CLI::App* app, const std::string& name, index_t& value,
                       const std::string& help, index_t max_value) {
  auto check = [max_value](const std::string& s) -> std::string {
    const auto v = parse_integer(s);
    if (!v) return ui::tr(ui::Msg::err_whole_number, s);
    if (*v < 1) return ui::tr(ui::Msg::err_at_least_1, *v);
    if (*v > max_value) return ui::tr(ui::Msg::err_at_most, max_value, s);
    return "";
  };
  return app->add_option(name, value, help)
      ->check(CLI::Validator(check, "INT>=1", ""))
      ->capture_default_str();
}

CLI::Option* add_row(CLI::App* app, const std::string& name, index_t& value,
                     const std::string& help) {
  auto check = [](const std::string& s) -> std::string {
    const auto v = parse_integer(s);
    if (!v || *v < 0) return ui::tr(ui::Msg::err_row, s);
    return "";
  };
  return app->add_option(name, value, help)->check(CLI::Validator(check, "ROW", ""));
}

CLI::Option* add_seed(CLI::App* app, std::uint32_t& seed) {
  auto check = [](const std::string& s) -> std::string {
    const auto v = parse_integer(s);
    if (!v || *v < 0 || *v > 4294967295LL) return ui::tr(ui::Msg::err_seed, s);
    return "";
  };
  return app->add_option("--seed", seed, ui::tr(ui::Msg::opt_seed))
      ->check(CLI::Validator(check, "SEED", ""))
      ->capture_default_str();
}

CLI::Option* add_finite(CLI::App* app, const std::string& name, std::optional<double>& value,
                        const std::string& help) {
  auto check = [](const std::string& s) -> std::string {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') return ui::tr(ui::Msg::err_number, s);
    if (!std::isfinite(v)) return ui::tr(ui::Msg::err_finite, s);
    return "";
  };
  return app->add_option(name, value, help)->check(CLI::Validator(check, "NUMBER", ""));
}

CLI::Option* add_pass(CLI::App* app, bench::Pass& value, const std::string& help) {
  return add_choice<bench::Pass>(app, "--pass", value,
                                 {{"fwd", bench::Pass::fwd}, {"bwd", bench::Pass::bwd}}, help)
      ->default_str("fwd");
}

CLI::Option* add_dtype(CLI::App* app, DType& value, bool low) {
  return add_dtype(app, value, low, ui::tr(low ? ui::Msg::opt_dtype_low : ui::Msg::opt_dtype))
      ->default_str("fp64");
}

CLI::Option* add_dtype(CLI::App* app, DType& value, bool low, const std::string& help) {
  std::vector<std::pair<std::string, DType>> names{
      {"fp64", DType::fp64}, {"fp32", DType::fp32}, {"f64", DType::fp64}, {"f32", DType::fp32}};
  if (low) names.insert(names.end(), {{"bf16", DType::bf16}, {"fp16", DType::fp16}});
  return add_choice<DType>(app, "--dtype", value, names, help);
}

void add_shape(CLI::App* app, ProblemShape& s, const ShapeLimits& limits) {
  if (limits.batched) {
    add_count(app, "--b", s.b, ui::tr(ui::Msg::bench_opt_b), kMaxBatch);
    add_count(app, "--h", s.h, ui::tr(ui::Msg::bench_opt_h), kMaxBatch);
  }
  add_count(app, "--n", s.n, ui::tr(limits.n_help), limits.max_n);
  auto* m = add_count(app, "--m", s.m, ui::tr(limits.m_help), limits.max_n);
  if (limits.m_is_n) m->default_str("n");
  add_count(app, "--d", s.d, ui::tr(ui::Msg::opt_d), limits.max_d);
}

CLI::Option* add_causal(CLI::App* app, ProblemShape& s) {
  return app->add_flag("--causal", s.causal, ui::tr(ui::Msg::opt_causal));
}

CLI::Option* add_align(CLI::App* app, CausalAlign& value, bool& causal, bool& implied) {
  return add_choice<CausalAlign>(
             app, "--causal-align", value,
             {{"top-left", CausalAlign::top_left}, {"bottom-right", CausalAlign::bottom_right}},
             ui::tr(ui::Msg::opt_align))
      ->default_str("top-left")
      ->each([&causal, &implied](const std::string&) {
        implied = implied || !causal;
        causal = true;
      });
}

template <class T>
void require_fits(const T* x, index_t count, index_t cols, const std::string& what, Precision p,
                  const std::string& file) {
  const double limit = largest_finite(p);
  index_t worst = -1;  // the entry of largest magnitude beyond the limit
  for (index_t k = 0; k < count; ++k) {
    const T v = x[k];  // compared in T: a long double beyond fp64 stays itself
    if (std::isinf(v) || !(std::abs(v) > T(limit))) continue;  // inf: a masked score (-inf)
    if (worst < 0 || std::abs(v) > std::abs(x[worst])) worst = k;
  }
  if (worst < 0) return;
  const std::string where =
      cols > 1 ? fmt::format("({}, {})", worst / cols, worst % cols) : fmt::format("[{}]", worst);
  const std::string value = fmt::format("{:.5g}", x[worst]), largest = fmt::format("{:.5g}", limit);
  if (!file.empty())
    throw Error(kFile, ui::tr(ui::Msg::err_overflow_input, shown(file), what, value, where,
                              precision_name(p), largest, ui::overflow_hint(p)));
  throw Error(kUsage, ui::tr(ui::Msg::err_overflow_value, what, value, where, precision_name(p),
                             largest, ui::overflow_hint(p)));
}

template void require_fits(const float*, index_t, index_t, const std::string&, Precision,
                           const std::string&);
template void require_fits(const double*, index_t, index_t, const std::string&, Precision,
                           const std::string&);
template void require_fits(const long double*, index_t, index_t, const std::string&, Precision,
                           const std::string&);

void conclude_run(const RunVerdict& verdict, Precision p) {
  switch (verdict.outcome()) {
    case Outcome::pass:
      return;
    case Outcome::fail:
      throw Error(kCheckFailed, ui::tr(ui::Msg::run_failed, verdict.failing()));
    case Outcome::no_verdict:
      throw Error(kCheckFailed,
                  ui::tr(ui::Msg::run_no_verdict, verdict.failing(), precision_name(p)));
  }
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items{""};
  for (char c : text) c == ',' ? items.push_back("") : items.back().push_back(c);
  return items;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 6) bytes /= 1000.0, ++u;
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::string thread_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    struct rlimit stack {};  // glibc's default stack: the stack limit, or 2 MiB when unlimited
    const double stack_bytes =
        ::getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY
            ? double(stack.rlim_cur)
            : 2.0 * 1024 * 1024;
    const double left =
        double(limit.rlim_cur) - std::max(0.0, proc_kb("/proc/self/status", "VmSize:"));
    if (left < 2 * stack_bytes)  // a stack and its guard, with what the start itself maps
      return ui::tr(ui::Msg::limit_threads_as, format_bytes(std::max(0.0, left)),
                    format_bytes(stack_bytes));
  }
  if (::getrlimit(RLIMIT_NPROC, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    return ui::tr(ui::Msg::limit_threads_nproc, limit.rlim_cur);
  return ui::tr(ui::Msg::limit_threads_system);
}

void ensure_threads(index_t threads, const char* option) {
  std::vector<std::thread> started;
  try {
    for (index_t k = 1; k < threads; ++k) started.emplace_back([] {});
  } catch (const std::system_error& e) {
    const std::string limit = thread_limit();  // while the threads started still hold theirs
    for (std::thread& t : started) t.join();
    const std::error_code& code = e.code();  // an errno (EAGAIN): in the catalog's words
    const bool is_errno =
        code.category() == std::generic_category() || code.category() == std::system_category();
    throw Error(kTooLarge,
                ui::tr(ui::Msg::err_threads, threads, started.size() + 1,
                       is_errno ? ui::errno_text(code.value()) : code.message(), limit, option));
  }
  for (std::thread& t : started) t.join();
}

void require_fast_level() {
  const fast::LevelSetting set = fast::level_setting();
  switch (set.problem) {
    case fast::LevelSetting::Problem::unknown_name:
      throw Error(kUsage, ui::tr(ui::Msg::err_level_unknown, fast::kLevelVariable, set.value,
                                 fast::built_level_names()));
    case fast::LevelSetting::Problem::not_on_this_cpu:
      throw Error(kUsage, ui::tr(ui::Msg::err_level_cpu, fast::kLevelVariable, set.value,
                                 fast::level_name(std::max(1, fast::cpu_level()))));
    case fast::LevelSetting::Problem::none:
      break;
  }
}

double memory_available() {
  return available_memory_bytes();
}

void ensure_fits(double bytes, const std::string& what) {
  const double available = available_memory_bytes();
  if (bytes > 0.8 * available)
    throw Error(kTooLarge,
                ui::tr(ui::Msg::err_memory, what, format_bytes(bytes), format_bytes(available)));
}

template <class T>
Inputs<T> lecture_inputs(std::uint32_t seed, index_t n, index_t m, index_t d, index_t draw) {
  TorchGenerator gen(seed);
  Inputs<T> in;
  for (index_t k = 0; k <= draw; ++k) {  // the generator's stream, triple after triple
    in.Q = gen.randn_matrix<T>(n, d);
    in.K = gen.randn_matrix<T>(m, d);
    in.V = gen.randn_matrix<T>(m, d);
  }
  return in;
}

template Inputs<float> lecture_inputs(std::uint32_t, index_t, index_t, index_t, index_t);
template Inputs<double> lecture_inputs(std::uint32_t, index_t, index_t, index_t, index_t);

}  // namespace fd::demos
