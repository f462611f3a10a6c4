// test_work_items.cpp — the persistent grid's order: every (rank, head) taken once, heads in
// groups of G, rank-major inside a group (the longest tiles first when causal).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "flashdemo/host_device/work_items.hpp"

using namespace fd;

TEST_CASE("persistent_item takes every (rank, head) once, for any tiles, heads and grid") {
  for (bool causal : {false, true})
    for (int T : {1, 2, 3, 8, 17, 128})
      for (int heads : {1, 3, 16, 17, 256})
        for (int blocks : {1, 7, 132}) {
          INFO("causal " << causal << " T " << T << " heads " << heads << " blocks " << blocks);
          std::vector<int> seen(std::size_t(T * heads), 0);
          int outside = 0;  // items off the (rank, head) grid
          for (int w = 0; w < T * heads; ++w) {
            const TileItem it = persistent_item(w, T, heads, blocks, causal);
            if (it.rank < 0 || it.rank >= T || it.head < 0 || it.head >= heads)
              ++outside;
            else
              ++seen[std::size_t(it.head * T + it.rank)];
          }
          CHECK(outside == 0);
          CHECK(std::count(seen.begin(), seen.end(), 1) == T * heads);
        }
}

TEST_CASE("not causal: a head's tiles together, in order (the ordinary grid's blockIdx.x)") {
  for (int w = 0; w < 8 * 5; ++w) {
    const TileItem it = persistent_item(w, 8, 5, 132, false);
    CHECK(it.rank == w % 8);
    CHECK(it.head == w / 8);
  }
}

TEST_CASE("causal: ceil(blocks / T) heads a group, ranks never falling inside a group") {
  const int T = 8, heads = 40, blocks = 132, G = 17;  // groups of 17, 17, 6 heads
  int last_rank = -1, last_group = 0;
  for (int w = 0; w < T * heads; ++w) {
    const TileItem it = persistent_item(w, T, heads, blocks, true);
    const int group = it.head / G;
    CHECK(group == w / (G * T));  // the group's G T items are consecutive
    if (group != last_group) last_rank = -1, last_group = group;
    CHECK(it.rank >= last_rank);  // rank 0 (the longest) first, rank T - 1 last
    last_rank = it.rank;
  }
  // The short last group (6 heads): its first items are rank 0 of each of its heads.
  for (int x = 0; x < 6; ++x) {
    const TileItem it = persistent_item(2 * G * T + x, T, heads, blocks, true);
    CHECK(it.rank == 0);
    CHECK(it.head == 2 * G + x);
  }
}
