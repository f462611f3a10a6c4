// test_memory.cpp — flashdemo memory: the lecture's demo-4 table, and its options.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runner.hpp"

using namespace cli;

TEST_CASE("memory with no options prints the lecture's table exactly") {
  const Run r = run("memory");
  REQUIRE(r.code == 0);
  // The rows of the lecture's printed demo-4 table: n, S and P, flash extra, standard IO, flash IO.
  const std::vector<std::vector<std::string>> lecture = {
      {"1024", "0.004", "GB", "0.004", "MB", "4", "0"},
      {"4096", "0.067", "GB", "0.016", "MB", "67", "5"},
      {"16384", "1.074", "GB", "0.066", "MB", "1,074", "86"},
      {"65536", "17.180", "GB", "0.262", "MB", "17,180", "1,374"}};
  std::vector<std::vector<std::string>> table;
  for (const auto& line : lines(r.out)) {
    const auto w = words(line);
    if (w.size() == 7 && w[2] == "GB") table.push_back(w);
  }
  CHECK(table == lecture);
  CHECK(has(r.out, "Bc = ceil(M / 4d) = 100, Br = min(Bc, d) = 100"));
  CHECK(has(r.out, "65536     1,374 |    17,213    16,706    11,023 |"));
  for (const auto& line : lines(r.out)) CHECK(columns(line) <= 100);
}

TEST_CASE("memory options change the table") {
  const Run r =
      run("memory --d 64 --dtype fp32 --sram-kb 200 --n 2048 --batch 2 --heads 3 --causal");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "batch 2 x heads 3, fp32, d = 64, SRAM 200 KB = M = 51,200 fp32 elements"));
  CHECK(has(r.out, "causal"));
  // S and P: 6 heads x 2 x 2048^2 x 4 bytes = 0.201 GB
  CHECK(has(r.out, "0.201 GB"));
}

TEST_CASE("memory's notes follow the sizes asked for; --quiet keeps what the table is for") {
  // The memory note names the largest n, the type and one head's S and P (not the lecture's 17 GB).
  const Run lecture = run("memory");
  CHECK(has(lecture.out, "(at n = 65536 in bf16 that is\n    17.2 GB for one head)"));
  const Run own = run("memory --n 4096,1024 --dtype fp32 --heads 8");
  REQUIRE(own.code == 0);
  CHECK(has(own.out, "(at n = 4096 in fp32 that is\n    134.2 MB for one head)"));
  CHECK_FALSE(has(own.out, "17 GB"));
  CHECK(has(run("memory --n 8192 --lang zh").out, "（n = 8192、bf16 时一个头就要 268.4 MB）"));
  // --quiet keeps the tables, and the line that says what they were computed for.
  const Run quiet = run("memory --quiet --d 64 --n 2048");
  REQUIRE(quiet.code == 0);
  CHECK(has(quiet.out, "batch 1 x heads 1, bf16, d = 64, SRAM 100 KB = M = 51,200 bf16 elements"));
  CHECK_FALSE(has(quiet.out, "- Memory:"));
  // The GB and MB columns group their digits as the columns beside them do.
  const Run big = run("memory --n 1048576 --heads 512");
  REQUIRE(big.code == 0);
  CHECK(has(big.out, "   1048576    2,251,799.814 GB      2,147.484 MB         2,251,799,814"));
  for (const auto& line : lines(big.out)) CHECK(columns(line) <= 100);
}

TEST_CASE("memory says, in one line, why FA-2's forward can move more than FA-1's") {
  // The paper's rule caps Br at d while Bc grows with the SRAM: FA-2 re-reads K and V every d
  // query rows. The line comes where that happens, and only there.
  const Run r = run("memory --d 64 --sram-kb 228");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "65536       151 |    17,197     1,862     8,598 |"));
  const std::string line =
      "  FA-2's forward moves up to 4.6x FA-1's only because the rule caps Br at d = 64 while "
      "Bc = 456.";
  CHECK(has(r.out, "\n" + line + "\n"));
  CHECK(columns(line) <= 100);
  CHECK(has(
      run("memory --d 64 --sram-kb 228 --lang zh").out,
      "FA-2 前向的搬运量最多是 FA-1 的 4.6 倍，只是因为规则把 Br 限制为 d = 64，而 Bc = 456。"));
  for (const char* args : {"memory", "memory --causal", "memory --dtype fp32"}) {
    INFO(args);
    CHECK_FALSE(has(run(args).out, "FA-2's forward moves up to"));
  }
  CHECK_FALSE(has(run("memory --d 64 --sram-kb 228 --quiet").out, "FA-2's forward moves up to"));
}

TEST_CASE("memory and backward, piped, are written whole: no pause, no page hint") {
  // On a terminal they are paged (tests/terminal_test.py); here stdout is a file.
  for (const char* args : {"memory", "backward"}) {
    const Run r = run(std::string(args) + " < /dev/null");
    INFO(args);
    CHECK(r.code == 0);
    CHECK_FALSE(has(r.out, "[Enter]"));
    CHECK_FALSE(has(r.out, "\033"));
  }
  CHECK(lines(run("memory").out).size() > 30);
}
