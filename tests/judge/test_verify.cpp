// test_verify.cpp — sampled verification (verify.hpp): the 2x rule per array, max against max;
// a correct fast-path output passes, one wrong element in any array fails and is named.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/judge/verify.hpp"

using namespace fd;

namespace {

template <class T>
struct Run {
  index_t n = 300, m = 260, d = 16;
  std::vector<T> Q, K, V, dO, O, L, L_lo, dQ, dK, dV, D;
  AttnParams p{true, CausalAlign::bottom_right, {}};

  Run() {
    TorchGenerator gen(5);
    auto draw = [&](index_t count) {
      const auto x = gen.randn(count);
      return std::vector<T>(x.begin(), x.end());
    };
    Q = draw(n * d), K = draw(m * d), V = draw(m * d), dO = draw(n * d);
    O.resize(Q.size()), L.resize(std::size_t(n)), L_lo.resize(L.size()), dQ.resize(Q.size()),
        dK.resize(K.size()), dV.resize(K.size()), D.resize(L.size());
    const fast::Shape s{1, 1, n, m, d};
    const fast::Options o{2, {64, 128}};
    fast::forward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data());
    fast::backward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data(),
                   dO.data(), dQ.data(), dK.data(), dV.data(), D.data());
  }
  Verdict verify(bool backward) const {
    HeadArrays<T> h{n, m, d, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data()};
    if (backward) h.dO = dO.data(), h.dQ = dQ.data(), h.dK = dK.data(), h.dV = dV.data();
    return verify_sampled(h, p);
  }
};

}  // namespace

TEST_CASE_TEMPLATE("a correct output passes, forward and backward", T, float, double) {
  const Run<T> r;
  for (bool backward : {false, true}) {
    const Verdict v = r.verify(backward);
    CHECK(v.pass);
    CHECK(v.err <= v.bound);
    CHECK(!v.worst.empty());
  }
}

TEST_CASE_TEMPLATE("one wrong element fails and names its array", T, float, double) {
  // The last row and key row are always in the sample (row 0 is fully masked here: L = -inf);
  // 1e-3 is far above fp32's and fp64's bounds.
  struct Poke {
    std::vector<T> Run<T>::*array;
    const char* name;
  };
  for (const Poke& poke : {Poke{&Run<T>::O, "O"}, Poke{&Run<T>::L, "L"}, Poke{&Run<T>::dQ, "dQ"},
                           Poke{&Run<T>::dK, "dK"}, Poke{&Run<T>::dV, "dV"}}) {
    INFO(std::string(poke.name));
    Run<T> r;
    (r.*poke.array).back() += T(1e-3);
    const Verdict v = r.verify(true);
    CHECK_MESSAGE(!v.pass, std::string(poke.name));
    CHECK(v.worst == poke.name);
    CHECK(v.err > v.bound);
  }
}

TEST_CASE("the fp64 rule is 2x the naive fp64 error: 1e-9 off fails") {
  Run<double> r;
  r.dV[3] += 1e-9;
  const Verdict v = r.verify(true);
  CHECK(!v.pass);
  CHECK(v.worst == "dV");
}
