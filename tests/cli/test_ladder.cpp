// test_ladder.cpp — flashdemo ladder: every GPU rung on one case; its options, its refusals.
#include <doctest/doctest.h>

#include <string>

#include "runner.hpp"

using namespace cli;

// flashdemo ladder: every GPU rung on one case. Its options are checked as bench's are; on the CPU
// it refuses; without a GPU it says so in one line (exit 5), in JSON mode too, never a crash.
TEST_CASE("ladder: its options checked, --device cpu refused, and without a GPU one line, exit 5") {
  const Run help = run("ladder --help");
  REQUIRE(help.code == 0);
  for (const char* option :
       {"--b", "--h", "--n", "--m", "--d", "--causal", "--reps", "--warmup", "--seed",
        "--dtype TEXT:{bf16, fp16}=bf16", "--device", "--pass TEXT:{fwd, bwd}=fwd", "--steps"})
    CHECK(has(help.out, option));
  CHECK(has(help.out, "--n INT:INT>=1=4096"));
  CHECK(has(help.out, "--d INT:INT>=1=128"));
  CHECK(has(run("--help").out, "ladder"));
  CHECK(has(run("manpage").out, ".SS ladder"));
  CHECK(has(run("completion bash").out, "ladder"));
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"ladder --device cpu", "flashdemo ladder runs GPU kernels: --device cuda only"},
      {"ladder --dtype fp32", "--dtype"},
      {"ladder --dtype fp64", "--dtype"},
      {"ladder --n -3", "--n"},
      {"ladder --n 0", "--n"},
      {"ladder --d 1.5", "--d"},
      {"ladder --d 257", "--d"},
      {"ladder --reps 0", "--reps"},
      {"ladder --warmup=-1", "--warmup"},
      {"ladder --seed -1", "--seed"},
      {"ladder --b 99999999999999999999", "--b"},
      {"ladder --impl mma", "--impl"},
      {"ladder --pass xyz", "--pass"},
      {"ladder --pass", "--pass"},
      {"ladder --steps=maybe", "--steps"},
  };
  for (const Bad& b : bad) {
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
  CHECK(has(run("ladder --device cpu --lang zh").err, "只能用 --device cuda"));
  if (gpu_here()) return;
  for (const char* args :
       {"ladder", "ladder --json", "ladder --dtype fp16 --d 64 --causal",
        "ladder --n 1024 --reps 50 --json --lang zh", "ladder --quiet", "ladder --pass bwd",
        "ladder --pass bwd --d 64 --causal --json", "ladder --pass fwd --lang zh", "ladder --steps",
        "ladder --pass bwd --d 64 --steps --json"}) {
    const Run r = run(args);
    INFO(args << " | " << r.err);
    CHECK(r.code == 5);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "--device cuda"));
  }
}
