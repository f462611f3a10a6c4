// test_levels.cpp — the CPU's x86-64 level and the choice of the kernels' build (levels.hpp):
// the level agrees with the compiler's own reading of cpuid; every level built has the vector
// width and block its ISA implies; the automatic choice is the highest level that runs here;
// FLASHDEMO_FAST_LEVEL is read, refused by name, or refused for this CPU.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "flashdemo/fast/levels.hpp"

using namespace fd;

TEST_CASE("the CPU's level is what cpuid says, as the compiler reads it") {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool v2 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt") &&
                  __builtin_cpu_supports("ssse3");
  const bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  CHECK(fast::cpu_level() == (v4 ? 4 : v3 ? 3 : v2 ? 2 : 1));
#else
  CHECK(fast::cpu_level() == 0);
#endif
  CHECK(fast::level_name(1) == "x86-64");
  CHECK(fast::level_name(4) == "x86-64-v4");
  CHECK(fast::level_name(0).empty());
}

TEST_CASE("every build of the kernels: its vector width and register block") {
  REQUIRE(!fast::built_levels().empty());
  int previous = -1;
  for (const fast::Level& l : fast::built_levels()) {
    INFO(l.name);
    CHECK(l.number > previous);  // lowest first
    previous = l.number;
    const fast::Kernels& k = *l.kernels;
    if (l.number == 4) CHECK(k.simd_bytes == 64);
    if (l.number == 3) CHECK(k.simd_bytes == 32);
    if (l.number == 1 || l.number == 2) CHECK(k.simd_bytes == 16);
    CHECK(k.block_rows * k.block_vectors <= (k.simd_bytes == 64 ? 32 : 16));  // registers
    CHECK(bool(k.f32.forward));
    CHECK(bool(k.f64.backward));
    CHECK(bool(k.f32.gemm));
    CHECK(fast::built_level_names().find(l.name) != std::string::npos);
  }
}

TEST_CASE("FLASHDEMO_FAST_LEVEL: unset, a level that runs here, an unknown name, too high") {
  const char* saved = std::getenv(fast::kLevelVariable);
  const std::string before = saved ? saved : "";
  ::unsetenv(fast::kLevelVariable);
  CHECK(fast::level_setting().problem == fast::LevelSetting::Problem::none);
  CHECK(fast::level_setting().value.empty());
  // The automatic choice: the highest level built that runs here.
  const fast::Level* best = nullptr;
  for (const fast::Level& l : fast::built_levels())
    if (fast::runs_here(l)) best = &l;
  REQUIRE(best != nullptr);
  if (before.empty()) CHECK(&fast::active_level() == best);
  for (const fast::Level& l : fast::built_levels()) {
    ::setenv(fast::kLevelVariable, l.name, 1);
    CHECK(fast::level_setting().problem == (fast::runs_here(l)
                                                ? fast::LevelSetting::Problem::none
                                                : fast::LevelSetting::Problem::not_on_this_cpu));
    CHECK(fast::level_setting().value == l.name);
  }
  ::setenv(fast::kLevelVariable, "x86-64-v5", 1);
  CHECK(fast::level_setting().problem == fast::LevelSetting::Problem::unknown_name);
  ::setenv(fast::kLevelVariable, "", 1);  // empty: as unset
  CHECK(fast::level_setting().problem == fast::LevelSetting::Problem::none);
  if (before.empty())
    ::unsetenv(fast::kLevelVariable);
  else
    ::setenv(fast::kLevelVariable, before.c_str(), 1);
}

TEST_CASE("use_level: a test's choice of kernels, then back to the automatic one") {
  const fast::Level& automatic = fast::active_level();
  const fast::Level& lowest = fast::built_levels().front();
  fast::use_level(&lowest);
  CHECK(&fast::active_level() == &lowest);
  fast::use_level(nullptr);
  CHECK(&fast::active_level() == &automatic);
}
