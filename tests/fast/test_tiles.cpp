// test_tiles.cpp — fast::tiles_for (tiles.cpp): a step's working set in L2, Br halved until every
// thread has two query tiles, never larger than the problem.
#include <doctest/doctest.h>

#include "flashdemo/fast/fast_attention.hpp"

using namespace fd;

static bool same(TileSizes a, TileSizes b) {
  return a.Br == b.Br && a.Bc == b.Bc;
}

TEST_CASE("fast::tiles_for: the working set of a step in L2, enough tiles for the threads") {
  const index_t MiB = index_t(1) << 20;
  using fast::Pass;
  // The working set of one step, in bytes (d = d' at the d below; the backward's dQ partial rows
  // in double).
  auto bytes = [](Pass pass, TileSizes t, index_t d, index_t e) {
    return pass == Pass::fwd ? (2 * t.Bc * d + t.Br * t.Bc + 2 * t.Br * d) * e
                             : (5 * t.Bc * d + 2 * t.Br * t.Bc + 3 * t.Br * d) * e + t.Br * d * 8;
  };
  for (index_t l2 : {MiB, 2 * MiB})
    for (index_t d : {index_t(64), index_t(128), index_t(256)})
      for (index_t e : {index_t(4), index_t(8)}) {
        INFO("L2=" << l2 << " d=" << d << " bytes=" << e);
        const fast::Shape s{1, 1, 8192, 8192, d};
        const TileSizes f = fast::tiles_for(s, Pass::fwd, 1, e, l2),
                        b = fast::tiles_for(s, Pass::bwd, 1, e, l2);
        CHECK(f.Br == 128);
        CHECK(b.Br == 128);
        // The largest Bc of 512, 256, 128, 64 (the backward: of 128, 64) that fits L2, else 64.
        for (Pass pass : {Pass::fwd, Pass::bwd}) {
          const TileSizes t = pass == Pass::fwd ? f : b;
          const index_t most = pass == Pass::fwd ? 512 : 128;
          CHECK((t.Bc == most || t.Bc == 256 || t.Bc == 128 || t.Bc == 64));
          CHECK(t.Bc <= most);
          CHECK((t.Bc == 64 || bytes(pass, t, d, e) <= l2));
          CHECK((t.Bc == most || bytes(pass, TileSizes{t.Br, 2 * t.Bc}, d, e) > l2));
        }
        // The backward's tiles never depend on the threads: its sums are grouped by them.
        for (index_t threads : {2, 16, 64})
          CHECK(same(fast::tiles_for(s, Pass::bwd, threads, e, l2), b));
      }
  // d = 128 in fp32 on a 2 MiB L2: the forward keeps 512 keys a tile (917,504 bytes), the
  // backward 128; on a 1 MiB L2 the forward 512 at d = 64 (589,824 bytes) and 256 at d = 256,
  // the backward 128 at d = 128 (786,432 bytes) and 64 at d = 256.
  CHECK(same(fast::tiles_for({1, 1, 4096, 4096, 128}, Pass::fwd, 2, 4, 2 * MiB),
             TileSizes{128, 512}));
  CHECK(fast::tiles_for({1, 1, 4096, 4096, 64}, Pass::fwd, 2, 4, MiB).Bc == 512);
  CHECK(fast::tiles_for({1, 1, 4096, 4096, 256}, Pass::fwd, 2, 4, MiB).Bc == 256);
  CHECK(fast::tiles_for({1, 1, 4096, 4096, 128}, Pass::bwd, 2, 4, MiB).Bc == 128);
  CHECK(fast::tiles_for({1, 1, 4096, 4096, 256}, Pass::bwd, 2, 4, MiB).Bc == 64);
  CHECK(same(fast::tiles_for({1, 1, 4096, 4096, 128}, Pass::bwd, 2, 4, 2 * MiB),
             TileSizes{128, 128}));
  // The forward halves Br until every thread has two query tiles (32 rows at least).
  CHECK(fast::tiles_for({1, 1, 4096, 4096, 64}, Pass::fwd, 16, 4, MiB).Br == 128);
  CHECK(fast::tiles_for({1, 1, 2048, 2048, 64}, Pass::fwd, 16, 4, MiB).Br == 64);
  CHECK(fast::tiles_for({1, 2, 2048, 2048, 64}, Pass::fwd, 16, 4, MiB).Br == 128);
  CHECK(fast::tiles_for({1, 1, 100, 100, 64}, Pass::fwd, 16, 4, MiB).Br == 32);
  // Never larger than the problem; 0: an unknown L2, taken as 1 MiB.
  CHECK(same(fast::tiles_for({1, 1, 5, 7, 64}, Pass::fwd, 1, 4, MiB), TileSizes{5, 7}));
  CHECK(same(fast::tiles_for({1, 1, 4096, 4096, 64}, Pass::bwd, 1, 4, 0),
             fast::tiles_for({1, 1, 4096, 4096, 64}, Pass::bwd, 1, 4, MiB)));
}
