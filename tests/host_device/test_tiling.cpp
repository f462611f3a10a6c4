// test_tiling.cpp — tile ranges, and the closed-form counts against tile-by-tile counting.
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>

#include "flashdemo/host_device/tiling.hpp"

using namespace fd;

TEST_CASE("tiles cover n and m; the last may be short; a tile may exceed n") {
  const Tiling t{100, 100, 16, 24};
  CHECK(t.Tr() == 7);
  CHECK(t.Tc() == 5);
  CHECK(t.rows(6).begin == 96);
  CHECK(t.rows(6).end == 100);
  CHECK(t.cols(4).size() == 4);
  const Tiling big{3, 5, 16, 16};
  CHECK(big.Tr() == 1);
  CHECK(big.Tc() == 1);
  CHECK(big.rows(0).size() == 3);
}

TEST_CASE("count_tiles equals counting tile by tile") {
  for (bool causal : {false, true}) {
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
      for (index_t n : {1, 7, 16, 33, 100}) {
        for (index_t m : {1, 9, 16, 40, 100}) {
          for (index_t Br : {1, 4, 16, 128}) {
            for (index_t Bc : {1, 5, 24}) {
              const Tiling t{n, m, Br, Bc};
              const Mask mask{causal, align, n, m};
              TileCounts expect;
              for (index_t i = 0; i < t.Tr(); ++i) {
                for (index_t j = 0; j < t.Tc(); ++j) {
                  const TileKind kind = t.classify(mask, i, j);
                  expect.full += kind == TileKind::full;
                  expect.partial += kind == TileKind::partial;
                  expect.skipped += kind == TileKind::skipped;
                  if (kind != TileKind::skipped)
                    expect.entries_computed += double(t.rows(i).size() * t.cols(j).size());
                }
              }
              for (index_t q = 0; q < n; ++q)
                for (index_t k = 0; k < m; ++k) expect.entries_visible += !mask.masked(q, k);
              const TileCounts c = count_tiles(t, mask);
              INFO("causal=" << causal << " "
                             << "n=" << n << " "
                             << "m=" << m << " "
                             << "Br=" << Br << " "
                             << "Bc=" << Bc);
              CHECK(c.total == t.Tr() * t.Tc());
              CHECK(c.full == expect.full);
              CHECK(c.partial == expect.partial);
              CHECK(c.skipped == expect.skipped);
              CHECK(c.entries_computed == expect.entries_computed);
              CHECK(c.entries_visible == expect.entries_visible);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("first_query_tile: the query tiles that see key tile j are exactly i0 .. Tr - 1") {
  for (bool causal : {false, true})
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right})
      for (index_t n : {1, 7, 100, 1000})
        for (index_t m : {1, 9, 100, 1100})
          for (index_t Br : {1, 16, 64, 128})
            for (index_t Bc : {1, 24, 128}) {
              const Tiling t{n, m, Br, Bc};
              const Mask mask{causal, align, n, m};
              INFO("causal " << causal << " n " << n << " m " << m << " Br " << Br << " Bc " << Bc);
              int wrong = 0;
              for (index_t j = 0; j < t.Tc(); ++j) {
                const index_t i0 = first_query_tile(t, mask, j);
                for (index_t i = 0; i < t.Tr(); ++i)
                  wrong += (t.classify(mask, i, j) != TileKind::skipped) != (i >= i0);
              }
              CHECK(wrong == 0);
            }
}

TEST_CASE("key_tiles_of_rows: the key tiles some of the rows sees, by entry; 0 past n") {
  int cases = 0;
  for (bool causal : {false, true})
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right})
      for (index_t n : {1, 7, 100, 300})
        for (index_t m : {1, 9, 100, 333})
          for (index_t Bc : {1, 24, 128})
            for (index_t rows : {1, 16, 64}) {
              const Tiling t{n, m, 3 * rows, Bc};
              const Mask mask{causal, align, n, m};
              INFO("causal " << causal << " n " << n << " m " << m << " rows " << rows << " Bc "
                             << Bc);
              for (index_t q0 = 0; q0 < n + 2 * rows; q0 += rows) {
                index_t expect = 0;  // one past the last tile with an entry some row sees
                for (index_t q = q0; q < q0 + rows && q < n; ++q)
                  for (index_t k = 0; k < m; ++k)
                    if (!mask.masked(q, k)) expect = std::max(expect, k / Bc + 1);
                CHECK(key_tiles_of_rows(t, mask, q0, q0 + rows) == expect);
                ++cases;
              }
            }
  CHECK(cases > 1000);
  // computed_key_tiles is its value on a query tile's rows
  const Tiling t{1000, 1000, 192, 128};
  const Mask mask{true, CausalAlign::top_left, 1000, 1000};
  for (index_t i = 0; i < t.Tr(); ++i)
    CHECK(computed_key_tiles(t, mask, i) == key_tiles_of_rows(t, mask, i * 192, i * 192 + 192));
}
