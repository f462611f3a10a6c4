// test_io_model.cpp — the memory formulas (the lecture's table), the paper's tile sizes, and the
// counted ledger against counts made by hand and by the forward's own trace.
#include <doctest/doctest.h>

#include <initializer_list>
#include <set>

#include "flashdemo/io/random.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "flashdemo/tools/io_model.hpp"

using namespace fd;

TEST_CASE("the lecture's table: bf16, d = 128, M = 100 KB / 2") {
  const double M = 100 * 1024 / 2;
  const MemoryFormula f = memory_formula(4096, 128, 2, M, false, 1);
  CHECK(f.standard_bytes == 2.0 * 4096 * 4096 * 2);                     // 0.067 GB
  CHECK(f.flash_bytes == 4096 * 4);                                     // 0.016 MB
  CHECK(f.standard_io == 4.0 * 4096 * 4096);                            // 67 M elements
  CHECK(f.flash_io == doctest::Approx(4096.0 * 4096 * 128 * 128 / M));  // 5 M elements
  const MemoryFormula big = memory_formula(65536, 128, 2, M, false, 1);
  CHECK(big.standard_bytes / 1e9 == doctest::Approx(17.180).epsilon(1e-4));
  CHECK(big.flash_io / 1e6 == doctest::Approx(1374.39).epsilon(1e-5));
  CHECK(memory_formula(65536, 128, 2, M, false, 6).standard_io == 6 * big.standard_io);
}

TEST_CASE("the paper's tile sizes: Bc = ceil(M / 4d), Br = min(Bc, d)") {
  CHECK(paper_tiles(51200, 128).Bc == 100);
  CHECK(paper_tiles(51200, 128).Br == 100);
  CHECK(paper_tiles(51200, 64).Bc == 200);
  CHECK(paper_tiles(51200, 64).Br == 64);
  CHECK(paper_tiles(1000, 64).Bc == 4);  // ceil(3.9)
}

TEST_CASE("ledger on a 4 x 4 case counted by hand") {
  // n = m = 4, d = 2, tiles 2 x 2: two query tiles, two key tiles.
  const Tiling t{4, 4, 2, 2};
  const Ledger full = count_traffic(t, Mask{false, CausalAlign::top_left, 4, 4}, 2, 1);
  // standard: read Q, K (8 + 8), S (16), P (16), V (8); write S, P (32), O (8)
  CHECK(full.standard_fwd.loads == 56);
  CHECK(full.standard_fwd.stores == 40);
  // FA-2: per query tile read Q_i (4) and K, V (16); write O_i and L_i (6)
  CHECK(full.fa2_fwd.loads == 40);
  CHECK(full.fa2_fwd.stores == 12);
  // FA-1: init O, l, m (16); K, V once (16); 4 tile pairs of 2 rows read Q, O, l, m (6 each)
  // and write O, l, m (4 each)
  CHECK(full.fa1_fwd.loads == 16 + 4 * 2 * 6);
  CHECK(full.fa1_fwd.stores == 16 + 4 * 2 * 4);
  // FA-2 backward: D reads O, dO (16), writes D (4) and dQ = 0 (8); K, V (16); pairs read
  // Q, dO, dQ, L, D (8 per row) and write dQ (2 per row); dK, dV written (16)
  CHECK(full.fa2_bwd.loads == 16 + 16 + 4 * 2 * 8);
  CHECK(full.fa2_bwd.stores == 4 + 8 + 4 * 2 * 2 + 16);
  // causal: tile (0, 1) is skipped, so one pair fewer and query tile 0 reads half of K and V
  const Ledger causal = count_traffic(t, Mask{true, CausalAlign::top_left, 4, 4}, 2, 1);
  CHECK(causal.fa2_fwd.loads == (4 + 8) + (4 + 16));
  CHECK(causal.fa1_fwd.loads == 16 + 3 * 2 * 6);
  CHECK(causal.standard_fwd.loads == full.standard_fwd.loads);
}

namespace {
class Loads : public TraceSink {
 public:
  explicit Loads(index_t d) : d_(d) {}
  void on(const TileEvent& e) override { kv += 2 * d_ * e.cols.size(); }
  void on(const BackwardTileEvent& e) override {
    bwd_row_pairs += e.rows.size();
    if (e.j != last_j) bwd_keys += e.cols.size(), last_j = e.j;  // K_j, V_j loaded once per j
  }
  index_t d_, kv = 0, bwd_row_pairs = 0, bwd_keys = 0, last_j = -1;
};
}  // namespace

TEST_CASE("ledger equals the tiles the forward and backward really load") {
  for (bool causal : {false, true}) {
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
      for (index_t n : {1, 7, 33}) {
        for (index_t m : {5, 33, 40}) {
          const index_t d = 3;
          const Tiling t{n, m, 4, 6};
          const AttnParams p{causal, align, {}};
          TorchGenerator gen(1);
          const Mat<double> Q = gen.randn_matrix<double>(n, d), K = gen.randn_matrix<double>(m, d),
                            V = gen.randn_matrix<double>(m, d);
          Loads loads(d);
          const auto fwd = flash_forward(Q, K, V, p, TileSizes{4, 6}, &loads);
          flash_backward<double>(Q, K, V, fwd, fwd.O, p, TileSizes{4, 6}, &loads);
          const Ledger g = count_traffic(t, p.mask_for(n, m), d, 1);
          INFO("n=" << n << " m=" << m << " causal=" << causal);
          CHECK(g.fa2_fwd.loads == double(n * d + loads.kv));  // Q once, K and V per tile
          // FA-2 backward: row pairs read Q, dO, dQ, L, D; K, V of tiles anyone computes
          CHECK(g.fa2_bwd.loads ==
                double(2 * n * d + 2 * d * loads.bwd_keys + loads.bwd_row_pairs * (3 * d + 2)));
          CHECK(g.fa1_bwd.stores ==
                double(n * d + 2 * m * d + loads.bwd_row_pairs * d + 2 * m * d));
        }
      }
    }
  }
}
