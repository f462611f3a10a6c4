// test_softmax.cpp — online and three-pass softmax of a vector; the block events.
#include <doctest/doctest.h>

#include <initializer_list>

#include <vector>

#include "flashdemo/teaching/softmax.hpp"

using namespace fd;

namespace {
class Blocks : public TraceSink {
 public:
  void on(const SoftmaxBlockEvent& e) override { events.push_back(e); }
  std::vector<SoftmaxBlockEvent> events;
};
}  // namespace

TEST_CASE_TEMPLATE("online softmax equals the three-pass softmax", T, float, double) {
  const std::vector<T> x{T(7.7), T(-1.47), T(-10.89), T(2.84), T(-5.42), T(-6.99), T(2.02)};
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-15;
  for (index_t block : {1, 2, 3, 7, 100}) {
    const RowState<T> s = online_softmax_stats(x, block);
    const std::vector<T> a = softmax_from_state(x, s), b = softmax_three_pass(x);
    for (std::size_t i = 0; i < x.size(); ++i)
      CHECK(double(a[i]) == doctest::Approx(double(b[i])).epsilon(tol));
    CHECK(double(s.finalize()) == doctest::Approx(double(logsumexp_direct(x))).epsilon(tol));
  }
}

TEST_CASE("one event per block, with the state it changed") {
  const std::vector<double> x{1, 5, 2, 0, 9, 3, 4};
  Blocks sink;
  const RowState<double> s = online_softmax_stats(x, 3, &sink);
  REQUIRE(sink.events.size() == 3);
  CHECK(sink.events[0].alpha == 0.0);  // nothing summed yet
  CHECK(sink.events[0].m_new == 5.0);
  CHECK(sink.events[1].m_old == 5.0);
  CHECK(sink.events[1].m_new == 9.0);
  CHECK(sink.events[1].alpha == doctest::Approx(std::exp(-4.0)));
  CHECK(sink.events[2].range.begin == 6);
  CHECK(sink.events[2].range.end == 7);
  CHECK(sink.events[2].l == s.l);
}
