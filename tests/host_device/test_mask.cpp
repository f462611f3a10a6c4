// test_mask.cpp — the causal mask: both alignments and the tile classification.
#include <doctest/doctest.h>

#include <initializer_list>

#include "flashdemo/host_device/mask.hpp"

using fd::CausalAlign;
using fd::index_t;
using fd::Mask;
using fd::TileKind;

TEST_CASE("top-left: query q sees keys k <= q") {
  const Mask mask{true, CausalAlign::top_left, 4, 6};
  CHECK_FALSE(mask.masked(0, 0));
  CHECK(mask.masked(0, 1));
  CHECK_FALSE(mask.masked(3, 3));
  CHECK(mask.masked(3, 4));
  CHECK(mask.visible_keys(0) == 1);
  CHECK(mask.visible_keys(3) == 4);
}

TEST_CASE("bottom-right: query q sees keys k <= q + m - n") {
  const Mask wide{true, CausalAlign::bottom_right, 2, 5};  // offset 3
  CHECK(wide.visible_keys(0) == 4);
  CHECK(wide.visible_keys(1) == 5);
  const Mask tall{true, CausalAlign::bottom_right, 5, 2};  // offset -3: rows 0..2 see nothing
  CHECK(tall.visible_keys(0) == 0);
  CHECK(tall.visible_keys(2) == 0);
  CHECK(tall.visible_keys(3) == 1);
  CHECK(tall.visible_keys(4) == 2);
}

TEST_CASE("alignments agree when n == m; no mask sees everything") {
  const Mask tl{true, CausalAlign::top_left, 7, 7}, br{true, CausalAlign::bottom_right, 7, 7};
  const Mask none{false, CausalAlign::bottom_right, 7, 3};
  for (index_t q = 0; q < 7; ++q) {
    for (index_t k = 0; k < 7; ++k) CHECK(tl.masked(q, k) == br.masked(q, k));
    CHECK(none.visible_keys(q) == 3);
  }
}

TEST_CASE("classify agrees with the mask entry by entry") {
  for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
    for (index_t n : {1, 5, 9}) {
      for (index_t m : {1, 4, 9, 13}) {
        const Mask mask{true, align, n, m};
        for (index_t q0 = 0; q0 < n; ++q0) {
          for (index_t q1 = q0 + 1; q1 <= n; ++q1) {
            for (index_t k0 = 0; k0 < m; ++k0) {
              for (index_t k1 = k0 + 1; k1 <= m; ++k1) {
                index_t masked = 0;
                for (index_t q = q0; q < q1; ++q)
                  for (index_t k = k0; k < k1; ++k) masked += mask.masked(q, k);
                const index_t area = (q1 - q0) * (k1 - k0);
                const TileKind expected = masked == 0      ? TileKind::full
                                          : masked == area ? TileKind::skipped
                                                           : TileKind::partial;
                CHECK(mask.classify(q0, q1, k0, k1) == expected);
              }
            }
          }
        }
      }
    }
  }
}
