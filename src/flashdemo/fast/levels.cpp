// levels.cpp — the CPU's x86-64 level (cpuid, xgetbv) and the choice of the kernels' build
// (levels.hpp). Compiled with the build's -march, as the rest of the binary: it must run on any
// CPU the binary starts on, to say which kernels can.
#include "flashdemo/fast/levels.hpp"

#include <atomic>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace fd::fast {

// One `kernels` table a level, in the level's namespace (fast_attention.cpp); the list is written
// by CMake from FLASHDEMO_FAST_LEVELS: FD_LEVEL(namespace, number, name) a line.
#define FD_LEVEL(ns, number, name) \
  namespace ns {                   \
  extern const Kernels kernels;    \
  }
#include "flashdemo/fast/levels_built.inc"
#undef FD_LEVEL

namespace {

constexpr Level kBuilt[] = {
#define FD_LEVEL(ns, number, name) {name, number, &ns::kernels},
#include "flashdemo/fast/levels_built.inc"
#undef FD_LEVEL
};

#if defined(__x86_64__)
bool bit(unsigned word, int k) {
  return (word >> k) & 1u;
}

// The OS's saved register state (XCR0), where the CPU has xgetbv.
unsigned long long xcr0() {
  unsigned a, d;
  __asm__ volatile("xgetbv" : "=a"(a), "=d"(d) : "c"(0));
  return (static_cast<unsigned long long>(d) << 32) | a;
}

int read_cpu_level() {
  unsigned a = 0, b = 0, c1 = 0, d = 0, b7 = 0, c7 = 0, cx = 0;
  if (!__get_cpuid(1, &a, &b, &c1, &d)) return 1;
  if (__get_cpuid_max(0, nullptr) >= 7) __cpuid_count(7, 0, a, b7, c7, d);
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000001u) __cpuid(0x80000001u, a, b, cx, d);
  const bool v2 = bit(c1, 0) && bit(c1, 9) && bit(c1, 13) && bit(c1, 19) && bit(c1, 20) &&
                  bit(c1, 23) && bit(cx, 0);  // SSE3 SSSE3 CX16 SSE4.1 SSE4.2 POPCNT LAHF
  if (!v2) return 1;
  const bool osxsave = bit(c1, 27);
  const unsigned long long xcr = osxsave ? xcr0() : 0;
  const bool v3 = bit(c1, 12) && bit(c1, 22) && bit(c1, 26) && bit(c1, 28) && bit(c1, 29) &&
                  bit(b7, 3) && bit(b7, 5) && bit(b7, 8) && bit(cx, 5) &&  // FMA MOVBE XSAVE AVX
                  osxsave && (xcr & 0x6) == 0x6;  // F16C BMI1 AVX2 BMI2 LZCNT; XMM, YMM saved
  if (!v3) return 2;
  const bool v4 = bit(b7, 16) && bit(b7, 17) && bit(b7, 28) && bit(b7, 30) && bit(b7, 31) &&
                  (xcr & 0xe6) == 0xe6;  // AVX-512 F DQ CD BW VL; opmask, ZMM saved
  return v4 ? 4 : 3;
}
#else
int read_cpu_level() {
  return 0;
}
#endif

const Level* find_level(std::string_view name) {
  for (const Level& l : kBuilt)
    if (name == l.name) return &l;
  return nullptr;
}

const char* setting_value() {
  const char* v = std::getenv(kLevelVariable);
  return v && *v ? v : nullptr;
}

// The automatic choice: FLASHDEMO_FAST_LEVEL when it is fine, else the highest that runs here.
const Level& chosen_level() {
  if (level_setting().problem == LevelSetting::Problem::none)
    if (const char* v = setting_value()) return *find_level(v);
  return *levels_here().back();
}

std::atomic<const Level*> forced{nullptr};

}  // namespace

std::span<const Level> built_levels() {
  return kBuilt;
}

std::string built_level_names() {
  std::string out;
  for (const Level& l : kBuilt) out += (out.empty() ? "" : ", ") + std::string(l.name);
  return out;
}

std::string level_name(int number) {
  if (number < 1 || number > 4) return "";
  return number == 1 ? "x86-64" : "x86-64-v" + std::to_string(number);
}

int cpu_level() {
  static const int level = read_cpu_level();
  return level;
}

bool runs_here(const Level& level) {
  return level.number <= cpu_level();
}

std::vector<const Level*> levels_here() {
  std::vector<const Level*> out;
  for (const Level& l : kBuilt)
    if (runs_here(l)) out.push_back(&l);
  if (out.empty()) out.push_back(&kBuilt[0]);  // (only if CMake's check of the lowest was bypassed)
  return out;
}

const Level& active_level() {
  if (const Level* l = forced.load(std::memory_order_relaxed)) return *l;
  static const Level& chosen = chosen_level();
  return chosen;
}

void use_level(const Level* level) {
  forced.store(level, std::memory_order_relaxed);
}

LevelSetting level_setting() {
  const char* v = setting_value();
  if (!v) return {};
  const Level* l = find_level(v);
  if (!l) return {LevelSetting::Problem::unknown_name, v};
  if (!runs_here(*l)) return {LevelSetting::Problem::not_on_this_cpu, v};
  return {LevelSetting::Problem::none, v};
}

// The public entry points of fast_attention.hpp: the active level's kernels.
template <class T>
void forward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
             const T* V, T* O, T* L, T* L_lo) {
  active_level().kernels->of<T>().forward(s, p, o, Q, K, V, O, L, L_lo);
}

template <class T>
void backward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
              const T* V, const T* O, const T* L, const T* L_lo, const T* dO, T* dQ, T* dK, T* dV,
              T* D) {
  active_level().kernels->of<T>().backward(s, p, o, Q, K, V, O, L, L_lo, dO, dQ, dK, dV, D);
}

template <class T>
void gemm(index_t rows, index_t inner, index_t cols, const T* A, const T* B, T* C,
          index_t threads) {
  active_level().kernels->of<T>().gemm(rows, inner, cols, A, B, C, threads);
}

#define FD_INSTANTIATE(T)                                                                     \
  template void forward(const Shape&, const AttnParams&, const Options&, const T*, const T*,  \
                        const T*, T*, T*, T*);                                                \
  template void backward(const Shape&, const AttnParams&, const Options&, const T*, const T*, \
                         const T*, const T*, const T*, const T*, const T*, T*, T*, T*, T*);   \
  template void gemm(index_t, index_t, index_t, const T*, const T*, T*, index_t);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::fast
