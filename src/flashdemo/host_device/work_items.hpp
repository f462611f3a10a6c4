// work_items.hpp — the order in which a persistent grid (one block an SM, each looping over work
// items) takes the (tile, head) items of `heads` heads of T tiles each:
//
//   item w = 0 .. T heads - 1  ->  (rank, head),  rank 0 .. T - 1 the tile's place in its head
//   G = 1 (not causal) or ceil(blocks / T) (causal): heads in groups of G, the last maybe short
//   group g = w / (G T) holds heads g G .. g G + G' - 1 (G' = min(G, heads - g G));
//   inside it, w' = w - g G T is rank-major:  rank = w' / G',  head = g G + w' mod G'
//
// Not causal, a head's tiles go together (as the ordinary grid's blockIdx.x), so that the blocks
// of a round read one head's K, V (forward) or Q, dO (backward) from L2. Causal, a round holds G
// heads' tiles of every length, the group's longest first (the kernels map rank 0 to the longest:
// query tile Tr - 1 in the forward, key tile 0 in the backward). hopper's backward kernel calls it,
// and the forward's launcher, which hands its kernel the items decoded (listed_items, below);
// tests/host_device/test_work_items.cpp checks that every item is taken once.
//
// Which block takes which item (block_schedule, on the host): in that order, each item to the
// block with the least work so far, work counted as cost[w] = the item's tiles + 1 (its start):
//   load(b) <= sum(cost) / blocks + max(cost)   (list scheduling's bound)
// what blocks taking the next item when free would do. Dealt round-robin instead (block b takes
// w = b, b + blocks, ...), a block's load depends on where its items fall: 132 blocks over 256
// causal heads of T = 8 tiles put the busiest at 1.44x the average, list scheduling at 1.08x.
#pragma once

#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "flashdemo/host_device/base.hpp"

namespace fd {

struct TileItem {
  int rank, head;  // (32 bits, as the arithmetic below, not ceil_div's 64: fewer registers live
                   // across a kernel's steps; with ceil_div the d = 64 backward spills more)
};

FD_HOST_DEVICE TileItem persistent_item(int w, int T, int heads, int blocks, bool causal) {
  const int G = causal ? (blocks + T - 1) / T : 1;
  const int group = w / (G * T), first_head = group * G;
  const int in_group = heads - first_head < G ? heads - first_head : G;
  const int r = w - group * G * T;
  return {r / in_group, first_head + r % in_group};
}

// The persistent grid's schedule of items w = 0 .. cost.size() - 1 over `blocks` blocks (list
// scheduling, above; a tie to the lowest block). One array, as the kernels read it:
//   [b] for b = 0 .. blocks - 1:  where block b's list begins
//   [blocks ..]:                   block 0's items in increasing w, then -1; block 1's, -1; ...
// (A block walks its list to the -1: one index live across its items, not a begin and an end.)
inline std::vector<int> block_schedule(const std::vector<int>& cost, int blocks) {
  using Load = std::pair<long long, int>;  // (work so far, block)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (int b = 0; b < blocks; ++b) least.push({0, b});
  std::vector<int> owner(cost.size()), count(static_cast<std::size_t>(blocks), 0);
  for (std::size_t w = 0; w < cost.size(); ++w) {
    const Load next = least.top();
    least.pop();
    owner[w] = next.second, ++count[std::size_t(next.second)];
    least.push({next.first + cost[w], next.second});
  }
  std::vector<int> schedule(std::size_t(2 * blocks) + cost.size(), -1);
  int at = blocks;
  for (int b = 0; b < blocks; ++b) schedule[std::size_t(b)] = at, at += count[std::size_t(b)] + 1;
  std::vector<int> next(schedule.begin(), schedule.begin() + blocks);
  for (std::size_t w = 0; w < cost.size(); ++w)
    schedule[std::size_t(next[std::size_t(owner[w])]++)] = int(w);
  return schedule;
}

// An item as the forward's persistent kernel reads it from its list (listed_items, below): query
// tile i (`tile`), its head, its J_i computed and F_i full key tiles (tiling.hpp), worked out on
// the host. Decoded in the kernel, every warp worked out persistent_item's 32-bit divisions and
// the tile counts' 64-bit ones at each item; listed, 1.07x to 1.09x at (16, 32, 1024, 64) causal
// on an H100 (docs/gpu-ladder.md, session 37). 16 bytes, one load. A list's end: tile = -1.
struct alignas(16) ListedItem {
  int tile = -1, head = 0, J = 0, F = 0;
};

// block_schedule's lists with each item w decoded as decode(w) (a ListedItem); entry k of the
// result is entry k of the schedule's (the ends, and the starts [0, blocks), stay tile = -1).
template <class Decode>
std::vector<ListedItem> listed_items(const std::vector<int>& schedule, int blocks, Decode decode) {
  std::vector<ListedItem> out(schedule.size());
  for (std::size_t k = std::size_t(blocks); k < schedule.size(); ++k)
    if (schedule[k] >= 0) out[k] = decode(schedule[k]);
  return out;
}

}  // namespace fd
