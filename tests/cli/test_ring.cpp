// test_ring.cpp — flashdemo ring: ring attention over P ranks (threads here); options, refusals,
// the schedule, JSON.
#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner.hpp"

using namespace cli;

// flashdemo ring: ring attention over P ranks (threads here: ctest does not run under mpirun;
// the ring_mpi_* tests run it as MPI processes). Options checked, more ranks than rows refused;
// --device cuda: several ranks without mpirun, fp64, and bf16 on the CPU refused in one line
// (exit 2), and without a GPU one line, exit 5; a run prints the blocks, the schedule, the times
// and the verdicts; --json one ring_rank per rank and pass, one ring_step per step, a result.
TEST_CASE("ring: options checked, ranks beyond the rows refused, --device cuda's refusals, JSON") {
  const Run help = run("ring --help");
  REQUIRE(help.code == 0);
  for (const char* option : {"--n", "--m", "--d", "--ranks", "--dtype", "--causal",
                             "--causal-align", "--layout", "--pass", "--device", "--seed"})
    CHECK(has(help.out, option));
  CHECK(has(run("--help").out, "ring"));
  CHECK(has(run("manpage").out, ".SS ring"));
  struct Bad {
    std::string args, names;
    int code;
  };
  const Bad bad[] = {
      {"ring --n 0", "--n", 2},
      {"ring --n -5", "--n", 2},
      {"ring --m 99999", "--m", 2},
      {"ring --d 257", "--d", 2},
      {"ring --ranks 0", "--ranks", 2},
      {"ring --ranks=-3", "--ranks", 2},
      {"ring --ranks 65", "--ranks", 2},
      {"ring --n 5 --ranks 6", "6 ranks for n = 5 rows", 2},
      {"ring --n 50 --m 3 --ranks 4", "4 ranks for n = 50 rows and m = 3 keys", 2},
      {"ring --pass both", "--pass", 2},
      {"ring --layout stripes", "--layout", 2},
      {"ring --device cuda --ranks 2", "--ranks 2 in one process would put 2 ranks on one GPU", 2},
      {"ring --device cuda --ranks 3 --pass bwd --json",
       "mpirun -np 3 flashdemo ring --device cuda", 2},
      {"ring --device cuda --dtype fp64", "reads bf16, fp16 or fp32, not --dtype fp64", 2},
      {"ring --dtype bf16", "--dtype bf16 runs on the GPU only (--device cuda)", 2},
      {"ring --dtype fp16 --ranks 2", "--dtype fp16 runs on the GPU only", 2},
      {"ring --device cuda --dtype int8", "--dtype", 2},
      {"ring --device tpu", "--device", 2},
      {"ring --n 16384 --d 256 --dtype fp64 --pass bwd", "memory", 3},
  };
  // The memory row needs about 40 GB: a machine that has them (the H200 host) would run it.
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  for (const Bad& b : bad) {
    if (b.code == 3 && memory > 32e9) continue;
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }

  CHECK(has(run("ring --device cuda --ranks 2 --lang zh").err, "共用一块 GPU"));
  if (!gpu_here())  // below a GPU: the tests of the GPU ring are in test_gpu.cpp
    for (const char* args :
         {"ring --device cuda", "ring --device cuda --ranks 1 --dtype bf16",
          "ring --device cuda --causal --pass bwd --json", "ring --device cuda --lang zh"}) {
      const Run r = run(args);
      INFO(args << " | " << r.err);
      CHECK(r.code == 5);
      CHECK(r.out.empty());
      CHECK(lines(r.err).size() == 1);
      CHECK(has(r.err, "--device cuda"));
    }

  const Run text = run("ring --n 16 --d 8 --ranks 4 --causal --pass bwd");
  INFO(text.out << text.err);
  REQUIRE(text.code == 0);
  CHECK(has(text.out, "ranks: 4 simulated in this process"));
  CHECK(has(text.out, "layout: zigzag: 8 chunks"));
  CHECK(has(text.out,
            "0      0-1, 14-15               0-1, 14-15                       9         7"));
  CHECK(has(text.out, "  0              K0 3/4     K3 2/4     K2 2/4     K1 2/4"));
  CHECK(has(text.out, "  sent bwd       2.0 KB     2.0 KB     2.0 KB     1.0 KB"));
  for (const char* name : {"O", "L", "dQ", "dK", "dV"})
    CHECK(has(text.out, std::string("max |") + name + " - " + name + "_ref| = "));
  CHECK(has(text.out, "the slowest rank: steps"));
  const Run skip = run("ring --n 16 --d 8 --ranks 4 --causal --layout contiguous");
  CHECK(skip.code == 0);
  CHECK(has(skip.out, "  0              K0 1/1    K3 skip    K2 skip    K1 skip"));
  CHECK(has(run("ring --n 16 --d 8 --ranks 2 --lang zh").out, "调度"));

  const Run j =
      run("ring --n 13 --m 9 --d 4 --ranks 3 --causal-align bottom-right --pass bwd --json");
  REQUIRE(j.code == 0);
  const std::vector<std::string> ls = lines(j.out);
  REQUIRE(ls.size() == 2 * (3 + 9) + 1);
  CHECK(nlohmann::json::parse(ls[0])["event"] == "ring_rank");
  CHECK(nlohmann::json::parse(ls[1])["event"] == "ring_step");
  CHECK(nlohmann::json::parse(ls[12])["pass"] == "bwd");
  const auto res = nlohmann::json::parse(ls.back());
  CHECK(res["subcommand"] == "ring");
  CHECK(res["transport"] == "threads");
  CHECK(res["device"] == "cpu");
  CHECK(res["layout"] == "zigzag");
  CHECK(res["backward"] == true);
  for (const char* name : {"O", "L", "dQ", "dK", "dV"})
    CHECK(res[std::string("verdict_") + name] == "pass");
  CHECK(res["pass"] == true);
}

// Under Open MPI's mpirun every rank's stdout is a pseudo-terminal, whatever mpirun's own stdout
// is: colour follows mpirun's (ui/output.hpp), so a run redirected to a file holds no escape codes,
// while --color always still colours it. Skipped without mpirun, and under the sanitizers (they
// take Open MPI's own allocations for leaks, as the ring_mpi_* tests say).
TEST_CASE("ring under mpirun, redirected to a file: no colour codes") {
  if (kSanitized) return;
  const std::string dir = std::filesystem::current_path().string();
  const Run r = in_dir(dir,
                       "command -v mpirun >/dev/null || exit 77; "
                       "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                       "OMPI_MCA_rmaps_base_oversubscribe=1 TERM=xterm; unset NO_COLOR; "
                       "timeout 120 mpirun -np 2 $FD ring --n 16 --d 8 > ring_auto.txt || exit 1; "
                       "timeout 120 mpirun -np 2 $FD ring --n 16 --d 8 --color always "
                       "> ring_always.txt");
  if (r.code == 77) {
    MESSAGE("mpirun not found: ring's colour under mpirun is not checked");
    return;
  }
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string automatic = slurp(dir + "/ring_auto.txt"),
                    always = slurp(dir + "/ring_always.txt");
  CHECK(has(automatic, "pass"));
  CHECK_FALSE(has(automatic, "\033"));
  CHECK(has(always, "\033["));  // the run is one that colours, when asked to
}
