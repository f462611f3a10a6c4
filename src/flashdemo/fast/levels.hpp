// levels.hpp — which build of the fast path's kernels runs on this CPU (kernels.hpp).
//
// The x86-64 levels (the psABI's microarchitecture levels), each one the one before and:
//   x86-64      SSE, SSE2                                             any x86-64
//   x86-64-v2   CMPXCHG16B, LAHF, POPCNT, SSE3, SSSE3, SSE4.1, SSE4.2
//   x86-64-v3   AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, XSAVE  (the OS saves YMM)
//   x86-64-v4   AVX-512 F, BW, CD, DQ, VL                              (the OS saves ZMM, k)
// The CPU's level is read from cpuid and xgetbv. The fast path runs the highest level built that
// the CPU has, or the one FLASHDEMO_FAST_LEVEL names (a test's or a curious student's choice;
// the command line refuses a name it does not know or a level this CPU lacks).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "flashdemo/fast/kernels.hpp"

namespace fd::fast {

struct Level {
  const char* name;  // "x86-64-v3"; a build of one level only: its -march ("native")
  int number;        // 1 to 4; 0: the build's own -march (runs wherever the binary does)
  const Kernels* kernels;
};

// Every level this binary was built with, lowest first; their names, ", " between.
std::span<const Level> built_levels();
std::string built_level_names();

// The name of level 1 to 4: "x86-64", "x86-64-v2", ...; "" for any other number.
std::string level_name(int number);

// This CPU's level: 1 to 4 (0 on a CPU that is not x86-64).
int cpu_level();
bool runs_here(const Level& level);

// The built levels this CPU runs, lowest first (never empty: CMake builds one that runs wherever
// the binary does).
std::vector<const Level*> levels_here();

// The level the fast path uses now (above), and an override for tests (nullptr: back to the
// automatic choice). The level must run here.
const Level& active_level();
void use_level(const Level* level);

// FLASHDEMO_FAST_LEVEL as the environment sets it: unset (or empty), a level that runs here, a
// name that is no built level, or a level this CPU lacks.
struct LevelSetting {
  enum class Problem { none, unknown_name, not_on_this_cpu } problem = Problem::none;
  std::string value;  // the variable's value as given
};
LevelSetting level_setting();

inline constexpr const char* kLevelVariable = "FLASHDEMO_FAST_LEVEL";

}  // namespace fd::fast
