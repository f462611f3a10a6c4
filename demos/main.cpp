// main.cpp — the flashdemo command: one subcommand per lecture demo.
//
// Errors the user can fix end as one line on stderr ("flashdemo: error: ...") and a non-zero
// exit code (README, "Exit codes"); --help and --version print and exit 0.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <new>
#include <string>

#include "backward.hpp"
#include "check.hpp"
#include "common.hpp"
#include "flashdemo/npy.hpp"
#include "forward.hpp"
#include "memory.hpp"
#include "softmax.hpp"

int main(int argc, char** argv) {
  CLI::App app{"flashdemo: FlashAttention, step by step (lecture 5, 05_flash_attention.py)",
               "flashdemo"};
  app.set_version_flag("--version", std::string("flashdemo ") + FLASHDEMO_VERSION);
  app.require_subcommand(1);
  fd::demos::setup_softmax(app);
  fd::demos::setup_forward(app);
  fd::demos::setup_backward(app);
  fd::demos::setup_memory(app);
  fd::demos::setup_check(app);
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->check_name(argv[1]));
  }
  if (argc < 2) {
    fmt::print(stderr,
               "flashdemo: error: missing subcommand: choose one of {} (flashdemo --help)\n",
               names);
    return fd::demos::kUsage;
  }
  if (argv[1][0] != '-' && !known) {
    fmt::print(stderr, "flashdemo: error: unknown subcommand '{}': choose one of {}\n", argv[1],
               names);
    return fd::demos::kUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "flashdemo: error: {}\n", e.what());
    return fd::demos::kUsage;
  } catch (const fd::demos::Error& e) {
    fmt::print(stderr, "flashdemo: error: {}\n", e.what());
    return e.code;
  } catch (const fd::NpyError& e) {
    fmt::print(stderr, "flashdemo: error: {}\n", e.what());
    return fd::demos::kFile;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "flashdemo: error: out of memory; choose smaller sizes\n");
    return fd::demos::kTooLarge;
  }
  return fd::demos::kOk;
}
