// memory.cpp — `flashdemo memory`: parse, call the library, print. No formulas here.
#include "memory.hpp"

#include <fmt/core.h>

#include <memory>
#include <sstream>

#include "common.hpp"
#include "flashdemo/io_model.hpp"
#include "ui/format.hpp"

namespace fd::demos {
namespace {

enum class MemType { fp32, bf16, fp16 };

struct MemoryOptions {
  index_t d = 128;                // lecture: d = 128
  MemType dtype = MemType::bf16;  // lecture: BF16
  index_t sram_kb = 100;          // lecture: about 100 KB of SRAM
  std::string n_list = "1024,4096,16384,65536";
  index_t batch = 1, heads = 1;
  bool causal = false;
};

index_t element_bytes(MemType t) {
  return t == MemType::fp32 ? 4 : 2;
}
const char* type_name(MemType t) {
  return t == MemType::fp32 ? "fp32" : t == MemType::bf16 ? "bf16" : "fp16";
}

std::vector<index_t> parse_n_list(const std::string& text) {
  std::vector<index_t> ns;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE || v < 1 || v > (1LL << 24))
      throw Error(kUsage, fmt::format("--n: '{}' is not a length from 1 to 16777216", item));
    ns.push_back(v);
  }
  if (ns.empty()) throw Error(kUsage, "--n: give at least one length, e.g. --n 1024,4096");
  return ns;
}

void print_formula_table(const MemoryOptions& o, const std::vector<index_t>& ns, double M) {
  ui::section("The formula (the lecture's table)");
  fmt::print("  {:>10}{:>20}{:>18}{:>22}{:>20}\n", "n", "standard: S and P", "flash: extra (L)",
             "standard IO (M elem)", "flash IO (M elem)");
  for (index_t n : ns) {
    const MemoryFormula f =
        memory_formula(n, o.d, element_bytes(o.dtype), M, o.causal, o.batch * o.heads);
    fmt::print("  {:>10}{:>17.3f} GB{:>15.3f} MB{:>22}{:>20}\n", n, f.standard_bytes / 1e9,
               f.flash_bytes / 1e6, ui::grouped(f.standard_io / 1e6),
               ui::grouped(f.flash_io / 1e6));
  }
  fmt::print(R"(
  - Memory: standard attention keeps two n x n matrices per head (at n = 65536 in bf16 that is
    17 GB for one head); FlashAttention keeps one extra fp32 number per row, L. Training keeps
    no attention matrix either, which is where much of a transformer's activation memory went.
  - Traffic: standard attention writes and reads each n x n matrix once (about 4 n^2 elements);
    FlashAttention moves about n^2 d^2 / M, M being the elements SRAM holds ({}).
    This is the paper's asymptotic estimate; its constant factors are not exact (see below).
  - FLOPs do not go down (the backward even recomputes S and P), but attention is limited by
    memory traffic, not arithmetic: moving less data is what makes it fast.
)",
             fmt::format("d^2/M = {:.2f} here", double(o.d) * double(o.d) / M));
}

void print_ledger(const MemoryOptions& o, const std::vector<index_t>& ns, double M) {
  const TileSizes t = paper_tiles(M, o.d);
  ui::section("Counted: every element loaded from or stored to HBM, summed over tiles");
  fmt::print(
      "  tiles from M as the paper chooses them: Bc = ceil(M / 4d) = {}, Br = min(Bc, d) = {}"
      "\n  millions of elements{}\n\n",
      t.Bc, t.Br, o.causal ? "; causal: wholly masked tiles are skipped" : "");
  fmt::print("  {:>10}{:>10} |{:>10}{:>10}{:>10} |{:>10}{:>10}{:>10}\n", "", "formula",
             "forward:", "", "", "backward:", "", "");
  fmt::print("  {:>10}{:>10} |{:>10}{:>10}{:>10} |{:>10}{:>10}{:>10}\n", "n", "n²d²/M", "standard",
             "FA-1", "FA-2", "standard", "FA-1", "FA-2");
  for (index_t n : ns) {
    const Ledger g =
        count_traffic(Tiling{n, n, t.Br, t.Bc}, Mask{o.causal, CausalAlign::top_left, n, n}, o.d,
                      o.batch * o.heads);
    const MemoryFormula f =
        memory_formula(n, o.d, element_bytes(o.dtype), M, o.causal, o.batch * o.heads);
    auto mil = [](double v) { return ui::grouped(v / 1e6); };
    fmt::print("  {:>10}{:>10} |{:>10}{:>10}{:>10} |{:>10}{:>10}{:>10}\n", n, mil(f.flash_io),
               mil(g.standard_fwd.total()), mil(g.fa1_fwd.total()), mil(g.fa2_fwd.total()),
               mil(g.standard_bwd.total()), mil(g.fa1_bwd.total()), mil(g.fa2_bwd.total()));
  }
  const index_t n_last = ns.back();
  const Ledger last =
      count_traffic(Tiling{n_last, n_last, t.Br, t.Bc},
                    Mask{o.causal, CausalAlign::top_left, n_last, n_last}, o.d, o.batch * o.heads);
  fmt::print(R"(
  Why counted and formula differ: the formula keeps only the order of growth. FA-2 reads K and
  V once per query tile, 2 n m d / Br elements; with Br = M / 4d that is 8 n m d^2 / M, eight
  times the formula (2: K and V both; 4: SRAM is shared by the tiles Q_i, K_j, V_j, O_i). FA-1
  instead reads Q_i and reads and writes O_i, l_i, m_i once per key tile, about 3 n m d / Bc,
  so which loop order moves less depends on Br and Bc. At n = {} FA-2's forward moves {:.2f}x
  the traffic of standard attention. A smaller d or a larger SRAM lowers that only until
  Br = d: from then on K and V are read n / d times, 2 n m elements, half of standard's 4 n m,
  whatever M is. What no tile size changes: the flash algorithms never store an n x n matrix.
)",
             n_last, last.fa2_fwd.total() / last.standard_fwd.total());
}

void run_memory(const MemoryOptions& o) {
  const std::vector<index_t> ns = parse_n_list(o.n_list);
  const double M = double(o.sram_kb) * 1024.0 / double(element_bytes(o.dtype));
  ui::heading("flashdemo memory · how much memory and HBM traffic FlashAttention saves",
              "lecture 5, demo 4 (05_flash_attention.py: demo_memory)");
  fmt::print("\n  batch {} x heads {}, {}, d = {}, SRAM {} KB = M = {} {} elements{}\n", o.batch,
             o.heads, type_name(o.dtype), o.d, o.sram_kb, ui::grouped(M), type_name(o.dtype),
             o.causal ? ", causal" : "");
  print_formula_table(o, ns, M);
  print_ledger(o, ns, M);
}

}  // namespace

void setup_memory(CLI::App& app) {
  auto o = std::make_shared<MemoryOptions>();
  CLI::App* sub = app.add_subcommand(
      "memory",
      "Memory and HBM traffic: standard attention's n x n matrices against O(n) (demo 4)");
  add_count(sub, "--d", o->d, "Head dimension", index_t(1) << 16);
  add_choice<MemType>(sub, "--dtype", o->dtype,
                      {{"bf16", MemType::bf16},
                       {"fp16", MemType::fp16},
                       {"fp32", MemType::fp32},
                       {"f32", MemType::fp32}},
                      "Element type of S, P and the tiles: bf16, fp16 or fp32")
      ->default_str("bf16");
  add_count(sub, "--sram-kb", o->sram_kb, "SRAM per thread block, in KB (1024 bytes)",
            index_t(1) << 20);
  sub->add_option("--n", o->n_list, "Sequence lengths, comma-separated")->capture_default_str();
  add_count(sub, "--batch", o->batch, "Batch size", index_t(1) << 20);
  add_count(sub, "--heads", o->heads, "Attention heads", index_t(1) << 20);
  sub->add_flag("--causal", o->causal, "Causal mask: flash skips the masked tiles");
  sub->callback([o] { run_memory(*o); });
}

}  // namespace fd::demos
