// attention_cli.cpp — the options and output `forward` and `backward` share.
#include "attention_cli.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "batch_arrays.hpp"
#include "device.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/io/file_io.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/judge/compare.hpp"
#include "ui/format.hpp"
#include "ui/json_trace.hpp"
#include "ui/mistakes.hpp"
#include "ui/output.hpp"
#include "ui/verdict.hpp"

namespace fd::demos {
namespace {

using ui::Msg;
using ui::tr;

constexpr index_t kMaxSize = index_t(1) << 31;

void add_files(CLI::App* sub, AttentionOptions& o, Subcommand which) {
  ArrayFiles& f = o.files;
  auto* q = add_file(sub, "--q", f.q, tr(Msg::opt_q));
  auto* k = add_file(sub, "--k", f.k, tr(Msg::opt_k));
  auto* v = add_file(sub, "--v", f.v, tr(Msg::opt_v));
  q->needs(k)->needs(v);
  k->needs(q);
  v->needs(q);
  for (const char* sized : {"--n", "--m", "--d", "--seed"}) q->excludes(sub->get_option(sized));
  add_file(sub, "--save-q", f.save_q, tr(Msg::opt_save_q));
  add_file(sub, "--save-k", f.save_k, tr(Msg::opt_save_k));
  add_file(sub, "--save-v", f.save_v, tr(Msg::opt_save_v));
  if (which == Subcommand::backward) add_file(sub, "--save-do", f.save_do, tr(Msg::opt_save_do));
  add_file(sub, "--save-o", f.save_o, tr(Msg::opt_save_o));
  add_file(sub, "--save-lse", f.save_lse, tr(Msg::opt_save_lse));
  if (which == Subcommand::backward) {
    add_file(sub, "--do", f.dO, tr(Msg::opt_do))->needs(q);
    auto* o_in = add_file(sub, "--o", f.o, tr(Msg::opt_o_in));
    auto* lse_in = add_file(sub, "--lse", f.lse, tr(Msg::opt_lse_in));
    o_in->needs(q)->needs(lse_in), lse_in->needs(q)->needs(o_in);
    add_file(sub, "--save-dq", f.save_dq, tr(Msg::opt_save_dq));
    add_file(sub, "--save-dk", f.save_dk, tr(Msg::opt_save_dk));
    add_file(sub, "--save-dv", f.save_dv, tr(Msg::opt_save_dv));
  }
}

void add_variants(CLI::App* sub, AttentionOptions& o, Subcommand which) {
  auto* precision = add_choice<Precision>(sub, "--precision", o.precision,
                                          {{"bf16", Precision::bf16}, {"fp16", Precision::fp16}},
                                          tr(Msg::opt_precision));
  precision->each([&o](const std::string&) { o.precision_given = true; });
  std::vector<std::pair<std::string, Mistake>> names{{"list", Mistake::none}};
  for (const ui::MistakeInfo& m : ui::mistakes())
    if (which == Subcommand::backward || !m.backward_only) names.push_back({m.name, m.mistake});
  add_choice<Mistake>(sub, "--break", o.mistake, names, tr(Msg::opt_break))
      ->each([&o](const std::string& s) { o.list_mistakes = s == "list"; });
}

// One head's matrix (Q has two dimensions): read (load_input), with Q's number of dimensions,
// its rows and columns checked (-1: any).
Mat<double> load_matrix(const std::string& path, const char* what, index_t rows, index_t cols,
                        const NpyArray& q) {
  const NpyArray a = load_input(path, what);
  require_dims(a, path, what, q);
  if ((rows >= 0 && a.shape[0] != rows) || (cols >= 0 && a.shape[1] != cols))
    throw NpyError(tr(Msg::err_shape, shown(path), what, a.shape[0], a.shape[1],
                      rows >= 0 ? std::to_string(rows) : "rows",
                      cols >= 0 ? std::to_string(cols) : "d"));
  return to_matrix<double>(a);
}

// A forward's L to start the backward from: (n) or (n, 1), no NaN and no +inf (-inf is a row that
// sees no key).
Mat<double> load_lse(const std::string& path, index_t n) {
  const NpyArray a = read_npy(path, 0.8 * memory_available());
  const bool column = a.shape.size() == 2 && a.shape[1] == 1;
  if (!(a.shape.size() == 1 || column) || a.shape[0] != n)
    throw NpyError(tr(Msg::err_lse_shape, shown(path), ui::shape_text(a.shape), n));
  require_lse_values(a, path);
  return to_matrix<double>(a);
}

// A batch of heads (Q of 3 or 4 dimensions): K, V, dO, O with Q's leading dimensions (K and V
// of m rows, the others of n), L of shape lead + (n); cut into heads, head 0 selected.
void load_heads(const AttentionOptions& o, const NpyArray& q, LoadedArrays& a) {
  const HeadsProblem p = heads_problem(q, o.files.k, o.files.v, o.files.dO);
  a.lead = p.Q.lead, a.Qs = p.Q, a.Ks = p.K, a.Vs = p.V, a.dOs = p.dO;
  if (!o.files.o.empty()) {
    const NpyArray O = load_input(o.files.o, "O");
    require_dims(O, o.files.o, "O", q);
    require_shape(O, o.files.o, "O", q.shape);
    a.Os = split_heads(O, a.lead.size());
    a.Ls = load_lse_heads(o.files.lse, a.lead, p.n);
  }
  a.select(0);
}

// Every input and output of the run, the outputs checked before anything runs.
RunFiles run_files(const AttentionOptions& o) {
  const ArrayFiles& f = o.files;
  RunFiles files;
  files.input("--q", f.q), files.input("--k", f.k), files.input("--v", f.v);
  files.input("--do", f.dO), files.input("--o", f.o), files.input("--lse", f.lse);
  files.output("--save-q", f.save_q), files.output("--save-k", f.save_k);
  files.output("--save-v", f.save_v), files.output("--save-do", f.save_do);
  files.output("--save-o", f.save_o), files.output("--save-lse", f.save_lse);
  files.output("--save-dq", f.save_dq), files.output("--save-dk", f.save_dk);
  files.output("--save-dv", f.save_dv);
  files.outputs(o.trace_files);
  files.check();
  return files;
}

}  // namespace

void add_attention_options(CLI::App* sub, AttentionOptions& o, Subcommand which) {
  add_shape(sub, o, kOneHead);
  add_count(sub, "--block-q", o.Br, tr(Msg::opt_block_q), kMaxSize)->each([&o](const std::string&) {
    o.tiles_given = o.br_given = true;
  });
  add_count(sub, "--block-k", o.Bc, tr(Msg::opt_block_k), kMaxSize)->each([&o](const std::string&) {
    o.tiles_given = o.bc_given = true;
  });
  add_causal(sub, o);
  add_align(sub, o.align, o.causal, o.causal_implied)->each([&o](const std::string&) {
    o.align_given = true;
  });
  add_dtype(sub, o.dtype, true)->each([&o](const std::string&) { o.dtype_given = true; });
  add_seed(sub, o.seed);
  add_finite(sub, "--scale", o.scale, tr(Msg::opt_scale));
  add_choice<ui::TraceLevel>(sub, "--trace", o.trace,
                             {{"none", ui::TraceLevel::none},
                              {"summary", ui::TraceLevel::summary},
                              {"tiles", ui::TraceLevel::tiles},
                              {"rows", ui::TraceLevel::rows}},
                             tr(Msg::opt_trace))
      ->default_str("summary");
  add_files(sub, o, which);
  add_variants(sub, o, which);
  add_choice<Device>(sub, "--device", o.device, {{"cpu", Device::cpu}, {"cuda", Device::cuda}},
                     tr(Msg::opt_device))
      ->default_str("cpu");
  add_choice<Impl>(sub, "--impl", o.impl,
                   {{"teaching", Impl::teaching},
                    {"fast", Impl::fast},
                    {"simt", Impl::simt},
                    {"tc", Impl::tc},
                    {"mma", Impl::mma},
                    {"hopper", Impl::hopper}},
                   tr(Msg::opt_impl))
      ->default_str("teaching");
  add_count(sub, "--threads", o.threads, tr(Msg::opt_threads), 1024)->default_str("all");
  if (which == Subcommand::backward)
    sub->add_flag("--deterministic", o.deterministic, tr(Msg::opt_deterministic));
  add_trace_files(sub, o.trace_files);
}

// What a mistake needs in order to show, set where the command line left it free: no-max needs
// scores past exp's range, finite-mask a row that sees no key (bottom-right, n > m), wrong-align
// n != m with bottom-right intended. o.showcase lists the changes for the problem header.
void showcase_mistake(AttentionOptions& o) {
  const bool m_free = o.files.q.empty() && o.m == 0;
  auto set_causal = [&o](CausalAlign align) {
    if (!o.causal) o.showcase.push_back("--causal");
    if (o.align != align || !o.align_given)
      o.showcase.push_back(align == CausalAlign::top_left ? "--causal-align top-left"
                                                          : "--causal-align bottom-right");
    o.causal = true, o.align = align, o.causal_implied = false;
  };
  auto set_m = [&o](index_t m) {
    o.m = std::max<index_t>(1, m);
    o.showcase.push_back(fmt::format("--m {}", o.m));
  };
  if (o.mistake == Mistake::no_max && !o.scale) {
    o.scale = o.accumulator() == Precision::fp64 ? 300.0 : 40.0;  // past ~709 / ~88
    o.showcase.push_back(fmt::format("--scale {}", *o.scale));
  } else if (o.mistake == Mistake::finite_mask) {
    if (m_free) set_m(o.n * 3 / 5);
    set_causal(o.align_given ? o.align : CausalAlign::bottom_right);
  } else if (o.mistake == Mistake::wrong_align) {
    if (m_free) set_m(o.n + o.n / 2);
    set_causal(CausalAlign::bottom_right);
  }
}

// --trace rows prints a line per row per computed tile, about n Tc lines: past kMaxRowLines it
// is refused (a screen cannot show it, and a file of it is better written as --trace-json).
constexpr double kMaxRowLines = 200000;

void limit_row_trace(const AttentionOptions& o) {
  if (o.trace != ui::TraceLevel::rows || ui::settings().json) return;
  const TileCounts c = count_tiles(o.tiling(), o.params().mask_for(o.n, o.keys()));
  const double lines = double(c.computed()) * double(o.tiles().Br) + double(o.n);
  if (lines > kMaxRowLines)
    throw Error(kUsage, tr(Msg::err_trace_rows_size, ui::grouped(lines), format_bytes(lines * 80),
                           ui::grouped(kMaxRowLines)));
}

namespace {

// Step 1 of validate_run: --dtype bf16|fp16 sets precision from it and dtype to fp32; a second
// call changes nothing (the walkthrough runs one options object several times).
void settle_dtype(AttentionOptions& o) {
  const bool low = low_precision(o.dtype);
  if (o.dtype_given && o.precision_given && (!low || dtype_precision(o.dtype) != o.precision))
    throw Error(kUsage, tr(Msg::err_dtype_precision, dtype_name(o.dtype),
                           precision_name(o.precision), precision_name(o.precision)));
  if (low) o.precision = dtype_precision(o.dtype), o.dtype = DType::fp32;
  if (o.dtype_given || o.precision_given) o.precision_named = o.precision_given;
  o.dtype_given = o.precision_given = false;  // settled: a second call changes nothing
}

// Step 3 of validate_run: the showcase, the files checked and read, n, m, d from them.
LoadedArrays prepare_inputs(AttentionOptions& o) {
  showcase_mistake(o);
  LoadedArrays a;
  a.files = run_files(o);
  if (o.files.q.empty()) {
    limit_row_trace(o);
    return a;
  }
  const NpyArray q = load_input(o.files.q, "Q");
  if (q.shape.size() > 2) {
    load_heads(o, q, a);
  } else {
    a.Q = to_matrix<double>(q);
    a.K = load_matrix(o.files.k, "K", -1, a.Q.cols(), q);
    a.V = load_matrix(o.files.v, "V", a.K.rows(), a.Q.cols(), q);
    if (!o.files.dO.empty()) a.dO = load_matrix(o.files.dO, "dO", a.Q.rows(), a.Q.cols(), q);
    if (!o.files.o.empty()) {
      a.O = load_matrix(o.files.o, "O", a.Q.rows(), a.Q.cols(), q);
      a.L = load_lse(o.files.lse, a.Q.rows());
    }
  }
  o.n = a.Q.rows(), o.m = a.K.rows(), o.d = a.Q.cols(), o.inputs_read = true, o.lead = a.lead;
  limit_row_trace(o);
  return a;
}

}  // namespace

void LoadedArrays::select(index_t k) {
  if (lead.empty()) return;
  const auto at = [k](const Heads& x) { return x.heads.empty() ? Mat<double>() : x.heads[k]; };
  Q = at(Qs), K = at(Ks), V = at(Vs), dO = at(dOs), O = at(Os), L = at(Ls);
}

LoadedArrays validate_run(AttentionOptions& o, Subcommand which) {
  settle_dtype(o);
  require_device(o, which);
  if (o.impl == Impl::fast) require_fast_level();
  LoadedArrays files = prepare_inputs(o);
  if (o.inputs_read) require_device_d(o, which);
  if (which == Subcommand::forward && o.show_p >= o.n)
    throw Error(kUsage, tr(Msg::err_show_p, o.show_p, o.n));
  return files;
}

// What the run's records hold in memory until it ends, in bytes: the events for --json,
// --trace-json and --html (recording.hpp), and the text trace's lines (--trace tiles, rows),
// held as stdout is. Every tile counted with the backward's event (six numbers a query row: the
// forward's four are then over-counted by about half); the fast path traces nothing.
namespace {
double trace_bytes(const AttentionOptions& o) {
  const bool text =
      !ui::settings().json && !ui::settings().quiet && o.trace >= ui::TraceLevel::tiles;
  if (o.impl == Impl::fast) return 0;
  const Tiling f = o.tiling(), b = o.tiling(cuda::Pass::bwd);
  const double tiles = std::max(double(f.Tr()) * double(f.Tc()), double(b.Tr()) * double(b.Tc()));
  const double rows = double(std::max(f.Br, b.Br)), row_tiles = double(std::max(f.Tr(), b.Tr()));
  const double events = tiles + row_tiles + double(std::max(f.Tc(), b.Tc())) + 2;
  const double numbers = tiles * 6 * rows + row_tiles * 3 * rows + tiles;  // the grid too
  double bytes = recorded_bytes(o.trace_files, events, numbers);
  if (text) {  // a line a tile, and at level rows a line a row of each (limit_row_trace caps it)
    const double per_row =
        o.trace == ui::TraceLevel::rows ? std::min(tiles * rows, kMaxRowLines) : 0;
    bytes += 3 * 100 * (tiles + per_row);
  }
  return bytes;
}
}  // namespace

void ensure_reference_fits(const AttentionOptions& o, double extra_nm, std::size_t bytes,
                           index_t heads) {
  const double n = double(o.n), m = double(o.keys()), d = double(o.d);
  // every head's inputs and copies (a batch is held whole, with its outputs); one head's n x m
  const double words = double(heads) * (n + 2 * m) * d * 4 + extra_nm * n * m;
  // The path's own buffers: per tile S, P, dP, dS (Br x Bc) and its rows of Q, K, V, O, dO, dQ,
  // dK, dV, for each thread of the fast path, which also sums dQ per thread (n x d each).
  const TileSizes t = o.tiles();
  const double threads = o.impl == Impl::fast ? double(thread_count(o)) : 1.0;
  const double tile = 4.0 * double(t.Br) * double(t.Bc) + 8.0 * double(t.Br + t.Bc) * d;
  const double per_thread = o.impl == Impl::fast ? 2.0 * n * d : 0.0;  // dQ partials, in double
  const double recorded = trace_bytes(o);
  ensure_fits((words + threads * (tile + per_thread)) * double(bytes) + recorded,
              tr(recorded > 0 ? Msg::what_reference_records : Msg::what_reference, extra_nm));
}

nlohmann::json problem_event(const AttentionOptions& o, const char* subcommand, cuda::Pass pass) {
  const Tiling t = o.tiling(pass);
  const Mask mask = o.params().mask_for(o.n, o.keys());
  nlohmann::json grid = nlohmann::json::array();
  for (index_t i = 0; i < t.Tr() && t.Tr() * t.Tc() <= (1 << 16); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (index_t j = 0; j < t.Tc(); ++j) {
      const TileKind k = t.classify(mask, i, j);
      row.push_back(k == TileKind::full ? "full" : k == TileKind::partial ? "partial" : "skipped");
    }
    grid.push_back(row);
  }
  const bool files = !o.files.q.empty();
  return {{"event", "problem"},
          {"subcommand", subcommand},
          {"inputs", input_source(o)},
          {"seed", files ? nlohmann::json(nullptr) : nlohmann::json(o.seed)},
          {"draw", files ? nlohmann::json(nullptr) : nlohmann::json(o.draw())},
          {"break", o.mistake == Mistake::none ? nlohmann::json(nullptr)
                                               : nlohmann::json(ui::info(o.mistake).name)},
          {"show_p", o.show_p < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.show_p)},
          {"n", o.n},
          {"m", o.keys()},
          {"d", o.d},
          {"Br", t.Br},
          {"Bc", t.Bc},
          {"impl", impl_name(o.impl)},
          {"device", device_name(o.device)},
          {"causal", o.causal},
          {"align", o.align == CausalAlign::top_left ? "top-left" : "bottom-right"},
          {"dtype", precision_name(o.working())},
          {"scale", o.params().scale_for(o.d)},
          {"Tr", t.Tr()},
          {"Tc", t.Tc()},
          {"batch", o.lead},
          {"grid", grid}};
}

const char* input_source(const AttentionOptions& o) {
  return !o.files.q.empty() ? "files" : o.seed == 0 ? "lecture" : "seeded";
}

void print_problem(const AttentionOptions& o, cuda::Pass pass) {
  const AttnParams params = o.params();
  const index_t m = o.keys();
  const TileSizes t = o.tiles(pass), fwd = o.tiles(cuda::Pass::fwd);
  ui::say(Msg::problem_shapes, o.n, o.d, m, o.d, precision_name(o.working()),
          o.scale ? "" : fmt::format("1/sqrt({}) = ", o.d), params.scale_for(o.d), t.Br, t.Bc);
  if (fwd.Br != t.Br || fwd.Bc != t.Bc)  // the backward's forward step ran other tiles
    ui::say(Msg::problem_rung_tiles, impl_name(o.impl), fwd.Br, fwd.Bc, t.Br, t.Bc);
  if (o.emulated())
    ui::say(o.device == Device::cuda ? Msg::problem_gpu_precision : Msg::problem_emulated,
            precision_name(o.working()), precision_name(o.working()));
  if (o.impl == Impl::fast) ui::say(Msg::problem_fast, thread_count(o));
  ui::say(!o.causal                          ? Msg::mask_none
          : o.align == CausalAlign::top_left ? Msg::mask_top_left
                                             : Msg::mask_bottom_right,
          o.causal_implied ? tr(Msg::align_implies_causal) : "");
  const Mask mask = params.mask_for(o.n, m);
  if (!o.showcase.empty())
    ui::say(Msg::break_showcase, ui::info(o.mistake).name,
            fmt::format("{}", fmt::join(o.showcase, " ")));
  index_t unseeing = 0;
  for (index_t q = 0; q < o.n; ++q) unseeing += mask.visible_keys(q) == 0;
  if (unseeing > 0) ui::say(Msg::rows_unseeing, unseeing, o.n);
  if (o.files.q.empty())
    ui::say(o.draw() ? Msg::inputs_random_second : Msg::inputs_random, o.seed);
  else
    ui::say(Msg::inputs_files, o.files.q, o.files.k, o.files.v);
  if (!o.lead.empty())
    ui::say(Msg::problem_batch, o.heads(), ui::shape_text(o.lead),
            ui::shape_text(head_index(o.lead, 0)));
}

TileSizes AttentionOptions::tiles(cuda::Pass pass) const {
  const bool fixed =
      impl == Impl::simt || impl == Impl::tc || impl == Impl::mma || impl == Impl::hopper;
  if (impl == Impl::fast && !tiles_given)
    return fast::tiles_for(fast::Shape{1, 1, n, keys(), d},
                           pass == cuda::Pass::fwd ? fast::Pass::fwd : fast::Pass::bwd,
                           thread_count(*this), dtype == DType::fp32 ? 4 : 8);
  const TileSizes t =
      fixed ? cuda::problem_tiles(impl, n, keys(), d, params().mask_for(n, keys()), pass)
            : TileSizes{Br, Bc};
  return {t.Br < n ? t.Br : n, t.Bc < keys() ? t.Bc : keys()};
}

index_t thread_count(const AttentionOptions& o) {
  return o.threads ? o.threads : std::max<index_t>(1, std::thread::hardware_concurrency());
}

std::string reference_name(const AttentionOptions& o) {
  return o.working() == Precision::fp64 ? tr(Msg::reference_wide) : "fp64";
}

nlohmann::json result_event(const AttentionOptions& o, const char* subcommand,
                            const RunVerdict& verdict) {
  nlohmann::json event = {{"event", "result"},
                          {"subcommand", subcommand},
                          {"reference", o.working() == Precision::fp64 ? "long double" : "fp64"}};
  for (const ArrayVerdict& a : verdict.arrays()) {
    event["err_" + a.name] = ui::number(a.rule.err);
    event["naive_" + a.name] = ui::number(a.rule.naive);
    event["bound_" + a.name] = ui::number(a.rule.bound);
    event["verdict_" + a.name] = a.used ? ui::outcome_id(a.rule.outcome) : "not used";
  }
  event["pass"] = verdict.pass();
  return event;
}

void HeadsVerdict::add(index_t k, const RunVerdict& head) {
  heads == 0 ? void(all = head) : all.fold(head);
  ++heads;
  if (head.pass())
    ++passed;
  else if (first_failing < 0)
    first_failing = k;
}

std::string in_head(const AttentionOptions& o, index_t k, const std::string& what) {
  return tr(Msg::err_in_head, ui::shape_text(head_index(o.lead, k)), what);
}

AttentionOptions head_options(const AttentionOptions& o, index_t k) {
  if (k == 0 && (o.lead.empty() || !ui::settings().quiet)) return o;
  AttentionOptions quiet = o;
  quiet.parts = Parts{false, false, false, false, false};
  quiet.trace = ui::TraceLevel::none, quiet.show_p = -1;
  return quiet;
}

void print_heads(const AttentionOptions& o, const HeadsVerdict& v, Msg title) {
  if (o.lead.empty() || !o.parts.results) return;
  ui::section(tr(title, v.heads, ui::shape_text(o.lead), reference_name(o)));
  print_error_lines(o, v.all);
  ui::result(Msg::heads_passed, v.passed, v.heads);
  if (v.first_failing >= 0)
    ui::result(Msg::heads_first_failing, ui::shape_text(head_index(o.lead, v.first_failing)));
}

nlohmann::json result_event(const AttentionOptions& o, const char* subcommand,
                            const HeadsVerdict& verdict) {
  nlohmann::json event = result_event(o, subcommand, verdict.all);
  event["heads"] = verdict.heads, event["heads_passed"] = verdict.passed;
  event["first_failing_head"] = verdict.first_failing < 0
                                    ? nlohmann::json(nullptr)
                                    : nlohmann::json(head_index(o.lead, verdict.first_failing));
  return event;
}

void refuse_nonfinite_at(const char* name, double value, index_t k, index_t cols, Precision p) {
  const std::string where =
      cols > 1 ? fmt::format("({}, {})", k / cols, k % cols) : fmt::format("[{}]", k);
  throw Error(
      kCheckFailed,
      tr(Msg::err_nonfinite_output, name, std::isnan(value) ? "NaN" : fmt::format("{}", value),
         where, precision_name(p), fmt::format("{:.5g}", largest_finite(p)), ui::overflow_hint(p)));
}

void conclude(const AttentionOptions& o, const RunVerdict& verdict) {
  if (o.mistake == Mistake::none) conclude_run(verdict, o.working());
}

void print_reference_title(const AttentionOptions& o) {
  ui::section(tr(Msg::against_reference, reference_name(o)));
}

void print_error_line(const std::string& label, const AttentionOptions& o, const RuleVerdict& v,
                      std::size_t label_width) {
  const std::size_t pad = label_width > label.size() ? 2 * (label_width - label.size()) : 0;
  const std::string expr = fmt::format("|{} - {}_ref|", label, label) + std::string(pad, ' ');
  ui::result(Msg::error_line, expr, ui::sci(v.err), ui::verdict_text(o.working(), v));
}

void print_error_lines(const AttentionOptions& o, const RunVerdict& v) {
  std::size_t width = 0;
  for (const ArrayVerdict& a : v.arrays()) width = std::max(width, a.name.size());
  for (const ArrayVerdict& a : v.arrays()) {
    if (a.used) {
      print_error_line(a.name, o, a.rule, width);
      continue;
    }
    const std::size_t pad = 2 * (width - a.name.size());
    const std::string expr = fmt::format("|{} - {}_ref|", a.name, a.name) + std::string(pad, ' ');
    ui::result(Msg::error_line, expr, ui::sci(a.rule.err), tr(Msg::verdict_not_used));
  }
}

void print_mistake(Mistake mistake) {
  const ui::MistakeInfo& m = ui::info(mistake);
  ui::section(tr(Msg::mistake_title, m.name, tr(m.summary)));
  const std::string why = tr(m.why);
  std::size_t start = 0;
  while (start < why.size()) {
    const std::size_t end = why.find('\n', start);
    ui::say_raw("  " + why.substr(start, end == std::string::npos ? end : end - start) + "\n");
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

void print_mistake_verdict(Mistake mistake, bool passed) {
  ui::result(passed ? Msg::mistake_expected_pass : Msg::mistake_expected_fail,
             ui::info(mistake).name);
}

void print_mistake_list(Subcommand which) {
  ui::say(Msg::mistake_list, which == Subcommand::forward ? "forward" : "backward");
  for (const ui::MistakeInfo& m : ui::mistakes())
    if (which == Subcommand::backward || !m.backward_only)
      ui::say_raw(fmt::format("  {:<14} {}\n", m.name, tr(m.summary)));
}

}  // namespace fd::demos
