// fuzz_npy.cpp — libFuzzer target for the .npy reader: any bytes either parse into an array
// whose size matches its shape, or raise NpyError. Never a crash, a hang or a sanitizer report.
// Build: cmake -DFLASHDEMO_FUZZ=ON with clang; run: build/fuzz/fuzz_npy tests/fuzz/corpus/npy
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "flashdemo/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/flashdemo_fuzz_" + std::to_string(getpid()) + ".npy";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    const fd::NpyArray a = fd::read_npy(path);
    fd::index_t count = 1;
    for (fd::index_t s : a.shape) count *= s;
    if (count != fd::index_t(a.data.size())) __builtin_trap();  // the shape must fit the data
    fd::require_finite(a, path);
  } catch (const fd::NpyError&) {
  }
  return 0;
}
