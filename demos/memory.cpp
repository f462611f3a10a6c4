// memory.cpp — `flashdemo memory`: parse, call the library, print. No formulas here.
#include "memory.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "common.hpp"
#include "flashdemo/tools/io_model.hpp"
#include "recording.hpp"
#include "ui/format.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

index_t element_bytes(MemType t) {
  return t == MemType::fp32 ? 4 : 2;
}
const char* type_name(MemType t) {
  return t == MemType::fp32 ? "fp32" : t == MemType::bf16 ? "bf16" : "fp16";
}

// v with three decimals (the lecture's table) and its digits grouped as in the columns beside
// it, or in scientific notation where that would not leave a space in a column `width` wide.
std::string fitted(double v, std::size_t width) {
  const std::string f = ui::grouped(v, 3);
  return f.size() < width ? f : fmt::format("{:.3e}", v);
}

// A table row without the spaces that right-aligned empty cells leave at its end.
std::string trimmed(std::string line) {
  while (line.size() > 1 && line[line.size() - 2] == ' ') line.erase(line.size() - 2, 1);
  return line;
}

std::vector<index_t> parse_n_list(const std::string& text) {
  std::vector<index_t> ns;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE || v < 1 || v > (1LL << 24))
      throw Error(kUsage, ui::tr(Msg::memory_err_n, item));
    ns.push_back(v);
  }
  if (ns.empty()) throw Error(kUsage, ui::tr(Msg::memory_err_n_empty));
  return ns;
}

void print_formula_table(const MemoryOptions& o, const std::vector<index_t>& ns, double M,
                         Recording& rec) {
  ui::result_section(ui::tr(Msg::memory_formula_title));
  ui::result_raw(fmt::format("  {:>10}{:>20}{:>18}{:>22}{:>20}\n", ui::tr(Msg::memory_col_n),
                             ui::tr(Msg::memory_col_std_mem), ui::tr(Msg::memory_col_flash_mem),
                             ui::tr(Msg::memory_col_std_io), ui::tr(Msg::memory_col_flash_io)));
  for (index_t n : ns) {
    const MemoryFormula f =
        memory_formula(n, o.d, element_bytes(o.dtype), M, o.causal, o.batch * o.heads);
    ui::result_raw(fmt::format("  {:>10}{:>17} GB{:>15} MB{:>22}{:>20}\n", n,
                               fitted(f.standard_bytes / 1e9, 17), fitted(f.flash_bytes / 1e6, 15),
                               ui::grouped_fit(f.standard_io / 1e6, 22),
                               ui::grouped_fit(f.flash_io / 1e6, 20)));
    rec.emit({{"event", "memory_formula"},
              {"n", n},
              {"standard_bytes", f.standard_bytes},
              {"flash_bytes", f.flash_bytes},
              {"standard_io", f.standard_io},
              {"flash_io", f.flash_io}});
  }
  // The memory of one head at the largest n asked for, in the type asked for.
  const index_t n = *std::max_element(ns.begin(), ns.end());
  const MemoryFormula one = memory_formula(n, o.d, element_bytes(o.dtype), M, o.causal, 1);
  ui::say(Msg::memory_notes, n, type_name(o.dtype), format_bytes(one.standard_bytes),
          double(o.d) * double(o.d) / M);
}

nlohmann::json traffic(const Traffic& t) {
  return {{"loads", t.loads}, {"stores", t.stores}, {"total", t.total()}};
}

void print_ledger(const MemoryOptions& o, const std::vector<index_t>& ns, double M,
                  Recording& rec) {
  const TileSizes t = paper_tiles(M, o.d);
  ui::result_section(ui::tr(Msg::memory_ledger_title));
  ui::say(Msg::memory_ledger_tiles, t.Bc, t.Br);
  ui::result(Msg::memory_ledger_unit, o.causal ? ui::tr(Msg::memory_ledger_causal) : "");
  const std::string row = "  {:>10}{:>10} |{:>10}{:>10}{:>10} |{:>10}{:>10}{:>10}\n";
  const std::string standard = ui::tr(Msg::memory_col_standard);
  ui::result_raw(trimmed(fmt::format(fmt::runtime(row), "", ui::tr(Msg::memory_col_formula),
                                     ui::tr(Msg::memory_col_forward), "", "",
                                     ui::tr(Msg::memory_col_backward), "", "")));
  ui::result_raw(fmt::format(fmt::runtime(row), "n", "n²d²/M", standard, "FA-1", "FA-2", standard,
                             "FA-1", "FA-2"));
  Ledger last;
  double fa2_over_fa1 = 0;  // the most FA-2's forward moves against FA-1's, over the rows
  for (index_t n : ns) {
    const Ledger g =
        count_traffic(Tiling{n, n, t.Br, t.Bc}, Mask{o.causal, CausalAlign::top_left, n, n}, o.d,
                      o.batch * o.heads);
    const MemoryFormula f =
        memory_formula(n, o.d, element_bytes(o.dtype), M, o.causal, o.batch * o.heads);
    auto mil = [](double v) { return ui::grouped_fit(v / 1e6, 10); };
    ui::result_raw(fmt::format(fmt::runtime(row), n, mil(f.flash_io), mil(g.standard_fwd.total()),
                               mil(g.fa1_fwd.total()), mil(g.fa2_fwd.total()),
                               mil(g.standard_bwd.total()), mil(g.fa1_bwd.total()),
                               mil(g.fa2_bwd.total())));
    rec.emit({{"event", "memory_ledger"},
              {"n", n},
              {"Br", t.Br},
              {"Bc", t.Bc},
              {"formula", f.flash_io},
              {"standard_fwd", traffic(g.standard_fwd)},
              {"fa1_fwd", traffic(g.fa1_fwd)},
              {"fa2_fwd", traffic(g.fa2_fwd)},
              {"standard_bwd", traffic(g.standard_bwd)},
              {"fa1_bwd", traffic(g.fa1_bwd)},
              {"fa2_bwd", traffic(g.fa2_bwd)}});
    last = g;
    fa2_over_fa1 = std::max(fa2_over_fa1, g.fa2_fwd.total() / g.fa1_fwd.total());
  }
  // FA-2's forward can move more than FA-1's only where the rule holds Br below Bc (Br = d < Bc):
  // then K and V are re-read once per d query rows. With Br = Bc it always moves less (2d
  // elements a key per query tile against FA-1's 3d + 4 a query row per key tile).
  if (fa2_over_fa1 > 1 && t.Br < t.Bc)
    ui::say(Msg::memory_ledger_fa2_more, fa2_over_fa1, t.Br, t.Bc);
  ui::say(Msg::memory_ledger_note, ns.back(), last.fa2_fwd.total() / last.standard_fwd.total());
}

void print_fusion(const MemoryOptions& o, const std::vector<index_t>& ns, Recording& rec) {
  ui::result_section(ui::tr(Msg::memory_fusion_title));
  ui::say(Msg::memory_fusion_intro);
  ui::result(Msg::memory_fusion_unit, type_name(o.dtype), element_bytes(o.dtype));
  const std::string row = "  {:>10}{:>25}{:>14}{:>15}{:>20}\n";
  ui::result_raw(fmt::format(fmt::runtime(row), "n", ui::tr(Msg::memory_col_unfused_w),
                             ui::tr(Msg::memory_col_unfused_r), ui::tr(Msg::memory_col_fused),
                             ui::tr(Msg::memory_col_qkvo)));
  for (index_t n : ns) {
    const FusionBytes f = fusion_bytes(n, n, o.d, element_bytes(o.dtype), o.batch * o.heads);
    ui::result_raw(fmt::format(fmt::runtime(row), n, format_bytes(f.unfused_writes),
                               format_bytes(f.unfused_reads), format_bytes(f.fused),
                               format_bytes(f.qkvo)));
    rec.emit({{"event", "memory_fusion"},
              {"n", n},
              {"unfused_writes_bytes", f.unfused_writes},
              {"unfused_reads_bytes", f.unfused_reads},
              {"fused_bytes", f.fused},
              {"qkvo_bytes", f.qkvo}});
  }
}

// GFLOP with three significant digits or more.
std::string gflop(double flops) {
  const double g = flops / 1e9;
  return g < 10     ? fmt::format("{:.2f}", g)
         : g < 1000 ? fmt::format("{:.1f}", g)
                    : ui::grouped_fit(g, 11);
}

Flops flops_for(const MemoryOptions& o, double M, index_t n) {
  const TileSizes t = paper_tiles(M, o.d);
  return count_flops(Tiling{n, n, t.Br, t.Bc}, Mask{o.causal, CausalAlign::top_left, n, n}, o.d,
                     o.batch * o.heads);
}

void print_flops(const MemoryOptions& o, const std::vector<index_t>& ns, double M, Recording& rec) {
  ui::result_section(ui::tr(Msg::memory_flops_title));
  ui::say(Msg::memory_flops_intro);
  ui::result(Msg::memory_flops_unit);
  const std::string row = "  {:>10}{:>12}{:>11} |{:>12}{:>12}{:>13}{:>8}\n";
  const std::string standard = ui::tr(Msg::memory_col_standard),
                    flash = ui::tr(Msg::memory_col_flash);
  ui::result_raw(trimmed(fmt::format(fmt::runtime(row), "", ui::tr(Msg::memory_col_forward), "",
                                     ui::tr(Msg::memory_col_backward), "", "", "")));
  ui::result_raw(fmt::format(fmt::runtime(row), "n", standard, flash, standard,
                             ui::tr(Msg::memory_col_p_stored), ui::tr(Msg::memory_col_recomputed),
                             ui::tr(Msg::memory_col_cost)));
  for (index_t n : ns) {
    const Flops f = flops_for(o, M, n);
    ui::result_raw(
        fmt::format(fmt::runtime(row), n, gflop(f.standard_fwd), gflop(f.flash_fwd),
                    gflop(f.standard_bwd), gflop(f.flash_bwd_stored), gflop(f.flash_bwd),
                    fmt::format("+{:.0f}%", 100 * (f.flash_bwd / f.flash_bwd_stored - 1))));
    rec.emit({{"event", "memory_flops"},
              {"n", n},
              {"standard_fwd", f.standard_fwd},
              {"flash_fwd", f.flash_fwd},
              {"standard_bwd", f.standard_bwd},
              {"flash_bwd_stored", f.flash_bwd_stored},
              {"flash_bwd", f.flash_bwd},
              {"exp_standard", f.exp_standard},
              {"exp_flash", f.exp_flash}});
  }
}

// The lecture's own estimates and citations, each beside the figure counted here for the last n.
void print_remarks(const MemoryOptions& o, const std::vector<index_t>& ns, double M) {
  const index_t n = ns.back();
  const TileSizes t = paper_tiles(M, o.d);
  const Ledger g =
      count_traffic(Tiling{n, n, t.Br, t.Bc}, Mask{o.causal, CausalAlign::top_left, n, n}, o.d,
                    o.batch * o.heads);
  const MemoryFormula f =
      memory_formula(n, o.d, element_bytes(o.dtype), M, o.causal, o.batch * o.heads);
  const Flops fl = flops_for(o, M, n);
  ui::section(ui::tr(Msg::memory_remarks_title));
  ui::say(Msg::memory_remarks, f.flash_io / f.standard_io, n,
          g.fa2_fwd.total() / g.standard_fwd.total(), g.fa2_bwd.total() / g.standard_bwd.total(),
          format_bytes(f.standard_bytes), format_bytes(f.flash_bytes),
          fl.flash_fwd / fl.standard_fwd, fl.flash_bwd / fl.flash_bwd_stored);
}

}  // namespace

void run_memory(const MemoryOptions& o) {
  const std::vector<index_t> ns = parse_n_list(o.n_list);
  const double M = double(o.sram_kb) * 1024.0 / double(element_bytes(o.dtype));
  Recording rec(TraceFiles{}, "flashdemo memory");
  rec.emit({{"event", "problem"},
            {"subcommand", "memory"},
            {"d", o.d},
            {"dtype", type_name(o.dtype)},
            {"sram_kb", o.sram_kb},
            {"M", M},
            {"batch", o.batch},
            {"heads", o.heads},
            {"causal", o.causal}});
  if (o.parts.heading) ui::heading(ui::tr(Msg::memory_title), ui::tr(Msg::memory_source));
  ui::result(Msg::memory_setup, o.batch, o.heads, type_name(o.dtype), o.d, o.sram_kb,
             ui::grouped(M), type_name(o.dtype), o.causal ? ui::tr(Msg::memory_causal_suffix) : "");
  if (o.parts.results) print_formula_table(o, ns, M, rec);
  if (o.parts.extra) print_ledger(o, ns, M, rec);
  if (o.fusion) print_fusion(o, ns, rec);
  if (o.fusion) print_flops(o, ns, M, rec);
  if (o.fusion && o.parts.extra) print_remarks(o, ns, M);
  RunFiles none;
  rec.finish(none);
}

void setup_memory(CLI::App& app) {
  auto o = std::make_shared<MemoryOptions>();
  CLI::App* sub = app.add_subcommand("memory", ui::tr(Msg::memory_help));
  add_count(sub, "--d", o->d, ui::tr(Msg::opt_d), index_t(1) << 16);
  add_choice<MemType>(sub, "--dtype", o->dtype,
                      {{"bf16", MemType::bf16},
                       {"fp16", MemType::fp16},
                       {"fp32", MemType::fp32},
                       {"f32", MemType::fp32}},
                      ui::tr(Msg::memory_opt_dtype))
      ->default_str("bf16");
  add_count(sub, "--sram-kb", o->sram_kb, ui::tr(Msg::memory_opt_sram), index_t(1) << 20);
  sub->add_option("--n", o->n_list, ui::tr(Msg::memory_opt_n))->capture_default_str();
  add_count(sub, "--batch", o->batch, ui::tr(Msg::memory_opt_batch), index_t(1) << 20);
  add_count(sub, "--heads", o->heads, ui::tr(Msg::memory_opt_heads), index_t(1) << 20);
  sub->add_flag("--causal", o->causal, ui::tr(Msg::memory_opt_causal));
  sub->footer(ui::tr(Msg::memory_examples));
  sub->callback([o] { run_memory(*o); });
}

}  // namespace fd::demos
