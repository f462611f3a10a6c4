// test_portable_math.cpp — exp, log, sin and cos from the basic operations (portable_math.hpp):
// accurate, and the same bits on every machine. The golden hashes below were computed on an AMD
// EPYC (AVX-512) and must come out identical on an Intel Xeon and on a build for plain x86-64.
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "flashdemo/host_device/portable_math.hpp"
#include "flashdemo/io/random.hpp"

using namespace fd;

namespace {

// xorshift64: a fixed stream of inputs.
struct Inputs {
  std::uint64_t s = 88172645463325252ull;
  double next(double lo, double hi) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return lo + (hi - lo) * double(s >> 11) * 0x1p-53;
  }
};

std::uint64_t mix(std::uint64_t h, std::uint64_t bits) {
  return (h ^ bits) * 0x100000001B3ull;  // FNV-1a step over 64-bit words
}

std::uint64_t bits_of(long double x) {  // the 64-bit significand and the exponent of x87's format
  const auto raw = std::bit_cast<std::array<std::uint16_t, 8>>(x);
  std::uint64_t h = 0;
  for (int k = 0; k < 5; ++k) h = h << 13 ^ raw[std::size_t(k)];
  return h;
}

std::string hex(std::uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

double ulps(double got, long double ref) {  // |got - ref| in units of the last place of ref
  const double r = double(ref);
  return double(std::abs((long double)got - ref)) /
         (std::nextafter(std::abs(r), INFINITY) - std::abs(r));
}

}  // namespace

TEST_CASE(
    "portable exp and log: exact where the value is exact, near the correctly rounded value") {
  CHECK(portable::exp(0.0) == 1.0);
  CHECK(portable::log(1.0) == 0.0);
  CHECK(portable::exp(0.0L) == 1.0L);
  CHECK(portable::log(1.0L) == 0.0L);
  CHECK(portable::exp(-INFINITY) == 0.0);
  CHECK(portable::exp(INFINITY) == INFINITY);
  CHECK(portable::exp(1000.0) == INFINITY);
  CHECK(portable::log(0.0) == -INFINITY);
  CHECK(std::isnan(portable::log(-1.0)));
  CHECK(std::isnan(portable::exp(NAN)));
  CHECK(portable::log(2.0) == 0x1.62E42FEFA39EFp-1);  // ln 2, correctly rounded
  CHECK(portable::exp(1.0) == 0x1.5BF0A8B145769p1);   // e, correctly rounded
  CHECK(std::abs(portable::log(2.0L) - 0xB.17217F7D1CF79ACp-4L) <= 0x1p-63L);
  Inputs in;
  double worst_exp = 0, worst_log = 0, worst_ld = 0;
  for (int i = 0; i < 20000; ++i) {
    const double x = in.next(-700, 700), y = portable::exp(in.next(-690, 690));
    const long double E = portable::exp((long double)x), Lg = portable::log((long double)y);
    worst_exp = std::max(worst_exp, ulps(portable::exp(x), E));
    worst_log = std::max(worst_log, ulps(portable::log(y), Lg));
    // long double: exp(log(y)) = y to a few units of 2^-64 times |log y| (the argument's rounding)
    const long double back = portable::exp(portable::log((long double)y));
    worst_ld = std::max(worst_ld, double(std::abs(back - y) / y));
  }
  CHECK(worst_exp < 1.0);  // measured 0.62
  CHECK(worst_log < 2.0);  // measured 1.7
  CHECK(worst_ld < 1e-16);
}

TEST_CASE("portable sin and cos on the generator's angles") {
  Inputs in;
  for (int i = 0; i < 20000; ++i) {
    const double t = in.next(0, 6.283185307179586);
    const portable::SinCos sc = portable::sincos(t);
    CHECK(std::abs(sc.sin - std::sin(t)) <= 0x1p-51);
    CHECK(std::abs(sc.cos - std::cos(t)) <= 0x1p-51);
  }
}

TEST_CASE("the same bits on every machine: golden hashes of exp, log, sin, cos and randn") {
  Inputs in;
  std::uint64_t h_exp = 0, h_log = 0, h_ld = 0, h_f = 0, h_trig = 0;
  for (int i = 0; i < 4096; ++i) {
    const double x = in.next(-745, 709), y = portable::exp(in.next(-740, 709));
    h_exp = mix(h_exp, std::bit_cast<std::uint64_t>(portable::exp(x)));
    h_log = mix(h_log, std::bit_cast<std::uint64_t>(portable::log(y)));
    h_ld = mix(mix(h_ld, bits_of(portable::exp((long double)x / 3))),
               bits_of(portable::log((long double)y * 1.5L)));
    h_f = mix(h_f, std::bit_cast<std::uint32_t>(portable::exp(float(x / 8))));
    const portable::SinCos sc = portable::sincos(in.next(0, 6.283185307179586));
    h_trig = mix(mix(h_trig, std::bit_cast<std::uint64_t>(sc.sin)),
                 std::bit_cast<std::uint64_t>(sc.cos));
  }
  std::uint64_t h_randn = 0;
  for (double v : TorchGenerator(0).randn(100))
    h_randn = mix(h_randn, std::bit_cast<std::uint64_t>(v));
  for (double v : TorchGenerator(7).randn(5))
    h_randn = mix(h_randn, std::bit_cast<std::uint64_t>(v));
  MESSAGE(hex(h_exp), " ", hex(h_log), " ", hex(h_ld), " ", hex(h_f), " ", hex(h_trig), " ",
          hex(h_randn));
  CHECK(h_exp == 0xaa4090f80f7fae15ull);
  CHECK(h_log == 0x97b15dd9d1bf0037ull);
  CHECK(h_ld == 0xda56fc9e1b469b55ull);
  CHECK(h_f == 0xdae03a870e4ee476ull);
  CHECK(h_trig == 0xf86ba3d3822cc33dull);
  CHECK(h_randn == 0x7be2edbfbfab2230ull);
}
