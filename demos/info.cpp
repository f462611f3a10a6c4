// info.cpp — `flashdemo info`.
#include "info.hpp"

#include <fmt/core.h>
#include <Eigen/Core>

#include <string>
#include <thread>

#include "common.hpp"
#include "cuda/host/cuda_api.hpp"
#include "device.hpp"
#include "flashdemo/fast/levels.hpp"
#include "recording.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return ui::tr(Msg::info_unknown_compiler);
#endif
}

// "x86-64-v4": the CPU's level (levels.hpp).
std::string cpu_level_name() {
  const std::string name = fast::level_name(fast::cpu_level());
  return name.empty() ? ui::tr(Msg::info_not_x86) : name;
}

// The fast path's line: which kernels run, and why those.
void say_fast_level() {
  const fast::Level& l = fast::active_level();
  const fast::Kernels& k = *l.kernels;
  const fast::LevelSetting set = fast::level_setting();
  const std::string built = fast::built_level_names();
  const std::string why =
      l.number == 0       ? ui::tr(Msg::info_fast_single, l.name)
      : set.value.empty() ? ui::tr(Msg::info_fast_auto, built)
                          : ui::tr(Msg::info_fast_forced, built, fast::kLevelVariable, set.value);
  ui::result(Msg::info_fast, l.name, k.isa, k.simd_bytes / 4, k.block_rows, k.block_vectors, why);
}

void run_info() {
  require_fast_level();  // it says which kernels run: not with a setting that cannot hold
  const cuda::GpuInfo g = cuda::gpu_info();
  const unsigned threads = std::thread::hardware_concurrency();
  Recording rec(TraceFiles{}, "flashdemo info");
  ui::result(Msg::info_build, FLASHDEMO_VERSION, compiler(), FLASHDEMO_BUILD_TYPE, __cplusplus);
  ui::result(Msg::info_simd, threads, cpu_level_name(), Eigen::SimdInstructionSetsInUse());
  say_fast_level();
  if (g.built)
    ui::result(Msg::info_cuda_on, g.runtime_version,
               g.driver_version.empty() ? ui::tr(Msg::info_driver_none) : g.driver_version,
               FLASHDEMO_CUDA_ARCHS);
  else
    ui::result(Msg::info_cuda_off);
  if (g.present)
    ui::result(Msg::info_gpu, g.name, g.cc_major, g.cc_minor, g.sms, g.smem_per_block / 1024,
               double(g.global_bytes) / 1e9);
  else
    ui::result(Msg::info_no_gpu, why_no_gpu(g));
  rec.emit({{"event", "info"},
            {"version", FLASHDEMO_VERSION},
            {"compiler", compiler()},
            {"simd", Eigen::SimdInstructionSetsInUse()},
            {"threads", threads},
            {"cpu_level", fast::cpu_level()},
            {"fast_level", fast::active_level().name},
            {"fast_isa", fast::active_level().kernels->isa},
            {"fast_levels_built", fast::built_level_names()},
            {"cuda", g.built},
            {"gpu", g.present ? g.name : ""},
            {"sms", g.sms},
            {"why", g.why}});
  RunFiles none;
  rec.finish(none);
}

}  // namespace

void setup_info(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("info", ui::tr(Msg::info_help));
  sub->footer(ui::tr(Msg::info_examples));  // its own: a subcommand inherits the app's footer
  sub->callback([] { run_info(); });
}

}  // namespace fd::demos
