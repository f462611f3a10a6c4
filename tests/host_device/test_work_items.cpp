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

namespace {

// The work of each block under a schedule (block_schedule's layout) or dealt round-robin.
std::vector<long long> loads(const std::vector<int>& schedule, const std::vector<int>& cost,
                             int blocks) {
  std::vector<long long> load(std::size_t(blocks), 0);
  for (int b = 0; b < blocks; ++b)
    for (int k = schedule[std::size_t(b)]; schedule[std::size_t(k)] >= 0; ++k)
      load[std::size_t(b)] += cost[std::size_t(schedule[std::size_t(k)])];
  return load;
}

std::vector<long long> round_robin_loads(const std::vector<int>& cost, int blocks) {
  std::vector<long long> load(std::size_t(blocks), 0);
  for (std::size_t w = 0; w < cost.size(); ++w) load[w % std::size_t(blocks)] += cost[w];
  return load;
}

double busiest_over_average(const std::vector<long long>& load) {
  long long sum = 0, most = 0;
  for (long long x : load) sum += x, most = std::max(most, x);
  return double(most) * double(load.size()) / double(sum);
}

// A causal forward's costs in persistent_item's order: query tile i = T - 1 - rank computes i + 1
// key tiles (n = m, Br = Bc), + 1 for the item's start.
std::vector<int> causal_costs(int T, int heads, int blocks) {
  std::vector<int> cost(std::size_t(T * heads));
  for (int w = 0; w < T * heads; ++w)
    cost[std::size_t(w)] = T - persistent_item(w, T, heads, blocks, true).rank + 1;
  return cost;
}

}  // namespace

TEST_CASE("block_schedule: every item once, each block's in order, none past the bound") {
  for (int items : {0, 1, 5, 131, 132, 133, 1000, 2048})
    for (int blocks : {1, 7, 132}) {
      INFO("items " << items << " blocks " << blocks);
      std::vector<int> cost(static_cast<std::size_t>(items));
      for (int w = 0; w < items; ++w) cost[std::size_t(w)] = 1 + (w * 7919) % 13;  // 1 .. 13
      const std::vector<int> s = block_schedule(cost, blocks);
      REQUIRE(s.size() == std::size_t(2 * blocks + items));
      CHECK(s[0] == blocks);
      std::vector<int> seen(std::size_t(items), 0);
      int out_of_order = 0, ends = 0, outside = 0;
      for (int b = 0; b < blocks; ++b) {
        int k = s[std::size_t(b)];
        for (; k < int(s.size()) && s[std::size_t(k)] >= 0; ++k) {
          if (s[std::size_t(k)] >= items)
            ++outside;
          else
            ++seen[std::size_t(s[std::size_t(k)])];
          if (k > s[std::size_t(b)] && s[std::size_t(k)] <= s[std::size_t(k) - 1]) ++out_of_order;
        }
        if (k < int(s.size())) ++ends;                              // the list's -1
        if (b + 1 < blocks) CHECK(s[std::size_t(b) + 1] == k + 1);  // the next list right after
      }
      CHECK(ends == blocks);
      CHECK(outside == 0);
      CHECK(std::count(seen.begin(), seen.end(), 1) == items);
      CHECK(out_of_order == 0);
      long long sum = 0;
      for (int c : cost) sum += c;
      for (long long load : loads(s, cost, blocks))
        CHECK(double(load) <= double(sum) / blocks + 13.0);
    }
}

TEST_CASE("block_schedule evens out causal items that round-robin leaves uneven") {
  // 132 SMs, T = 8 query tiles (n = 1024, Br = 128), 256 heads (b 16, h 16), causal.
  const int T = 8, heads = 256, blocks = 132;
  const std::vector<int> cost = causal_costs(T, heads, blocks);
  const double round_robin = busiest_over_average(round_robin_loads(cost, blocks));
  const double listed = busiest_over_average(loads(block_schedule(cost, blocks), cost, blocks));
  CHECK(round_robin == doctest::Approx(1.44).epsilon(0.01));
  CHECK(listed == doctest::Approx(1.08).epsilon(0.01));
}

TEST_CASE("block_schedule with fewer items than blocks: one item each, the rest idle") {
  const std::vector<int> cost{5, 1, 3};
  const std::vector<int> s = block_schedule(cost, 4);
  const std::vector<int> expected{4, 6, 8, 10, 0, -1, 1, -1, 2, -1, -1};
  CHECK(s == expected);
}

TEST_CASE("listed_items: each list entry decoded in place, every end and start left at tile -1") {
  const std::vector<int> cost{5, 1, 3, 2, 4};
  const int blocks = 3;
  const std::vector<int> s = block_schedule(cost, blocks);
  const std::vector<ListedItem> listed = listed_items(s, blocks, [](int w) {
    return ListedItem{10 + w, 20 + w, 30 + w, w};  // a decoding that names its w
  });
  REQUIRE(listed.size() == s.size());
  for (std::size_t k = 0; k < s.size(); ++k) {
    INFO("entry " << k);
    if (k < std::size_t(blocks) || s[k] < 0) {
      CHECK(listed[k].tile == -1);
    } else {
      CHECK(listed[k].tile == 10 + s[k]);
      CHECK(listed[k].head == 20 + s[k]);
      CHECK(listed[k].J == 30 + s[k]);
      CHECK(listed[k].F == s[k]);
    }
  }
  // A block walks its list from s[b] to the first tile -1: the items it was dealt, in order.
  for (int b = 0; b < blocks; ++b) {
    std::vector<int> walked;
    for (int k = s[std::size_t(b)]; listed[std::size_t(k)].tile >= 0; ++k)
      walked.push_back(listed[std::size_t(k)].F);
    std::vector<int> dealt;
    for (int k = s[std::size_t(b)]; s[std::size_t(k)] >= 0; ++k) dealt.push_back(s[std::size_t(k)]);
    CHECK(walked == dealt);
  }
}
