// decode.hpp — `flashdemo decode`: split-KV attention ("flash-decoding") on the CPU, the merge of
// `flashdemo softmax` at scale: the plan, the splits, the merge, the verdict, the timing.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_decode(CLI::App& app);
}
