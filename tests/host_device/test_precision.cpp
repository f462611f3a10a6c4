// test_precision.cpp — bf16 and fp16 rounding, ties to even, overflow and subnormals.
#include <doctest/doctest.h>

#include <cmath>

#include "flashdemo/host_device/precision.hpp"

using namespace fd;

TEST_CASE("bf16 keeps 8 significant bits, ties to even") {
  CHECK(round_bf16(1.0f) == 1.0f);
  CHECK(round_bf16(1.0f + std::ldexp(1.0f, -8)) == 1.0f);  // tie: to even (1.0)
  CHECK(round_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));  // tie up
  CHECK(round_bf16(1.0f / 3) == 0.333984375f);
  CHECK(round_bf16(-1.0f / 3) == -0.333984375f);
  CHECK(std::isnan(round_bf16(NAN)));
  CHECK(round_bf16(INFINITY) == INFINITY);
}

TEST_CASE("fp16 keeps 11 significant bits, max 65504, subnormals to 2^-24") {
  CHECK(round_fp16(1.0f / 3) == 0.333251953125f);
  CHECK(round_fp16(65504.0f) == 65504.0f);
  CHECK(round_fp16(65519.0f) == 65504.0f);
  CHECK(round_fp16(65520.0f) == INFINITY);  // the tie rounds to 65536: overflow
  CHECK(round_fp16(-1e6f) == -INFINITY);
  CHECK(round_fp16(1e-7f) == std::ldexp(1.0f, -23));        // 1.68 * 2^-24 -> 2 * 2^-24
  CHECK(round_fp16(std::ldexp(1.0f, -25)) == 0.0f);         // exactly half of 2^-24: tie to 0
  CHECK(round_fp16(1.0f + std::ldexp(1.0f, -11)) == 1.0f);  // tie: to even
}

TEST_CASE("round_to leaves fp32 and fp64 alone") {
  CHECK(round_to(Precision::fp32, 0.1) == 0.1);
  CHECK(round_to(Precision::fp64, 1.0f / 3) == 1.0f / 3);
  CHECK(round_to(Precision::bf16, 1.0 / 3) == double(0.333984375f));
}
