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
