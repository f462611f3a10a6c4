// memory.hpp — `flashdemo memory`: the memory and IO table, formula and counted (demo 4).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common.hpp"

namespace fd::demos {

enum class MemType { fp32, bf16, fp16 };

struct MemoryOptions {
  index_t d = 128;                // lecture: d = 128
  MemType dtype = MemType::bf16;  // lecture: BF16
  index_t sram_kb = 100;          // lecture: about 100 KB of SRAM
  std::string n_list = "1024,4096,16384,65536";
  index_t batch = 1, heads = 1;
  bool causal = false;
  Parts parts;         // results: the formula table; extra: the counted ledger
  bool fusion = true;  // the fusion and FLOPs tables, and the lecture's figures beside them
};

void setup_memory(CLI::App& app);
void run_memory(const MemoryOptions& o);

}  // namespace fd::demos
