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
// query tile Tr - 1 in the forward, key tile 0 in the backward). hopper.cuh's kernels call it;
// tests/host_device/test_work_items.cpp checks that every item is taken once.
#pragma once

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

}  // namespace fd
