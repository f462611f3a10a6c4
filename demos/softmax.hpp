// softmax.hpp — `flashdemo softmax`: online softmax of one vector (lecture demo 1).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "common.hpp"
#include "recording.hpp"

namespace fd::demos {

struct SoftmaxOptions {
  index_t n = 10;     // lecture: torch.randn(10) * 5
  index_t block = 3;  // lecture: online_softmax_stats(x, block=3)
  std::uint32_t seed = 0;
  std::optional<double> scale;
  std::string values;
  std::string input;          // a .npy vector
  DType dtype = DType::fp32;  // the lecture's x is float32
  TraceFiles files;
  Parts parts;
  bool map_title = true;  // the blocks table's title (the walkthrough's second vector goes without)
};

void setup_softmax(CLI::App& app);
void run_softmax(const SoftmaxOptions& o);

}  // namespace fd::demos
