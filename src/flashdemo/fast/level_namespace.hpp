// level_namespace.hpp — the inline namespace of one build of the fast path's kernels.
//
// CMake compiles fast_attention.cpp once per x86-64 level with FD_FAST_LEVEL set (level_v1 to
// level_v4, kernels.hpp): every name it defines in fd::fast, and those of the headers it includes
// from here (tile_product.hpp, vector_exp.hpp), then differ between the builds, so that two
// builds' inline functions never meet at link time. Any other file that includes these headers (the
// tests of the tile product and of exp) gets the build's own level, level_build.
#pragma once

#ifndef FD_FAST_LEVEL
#define FD_FAST_LEVEL level_build
#endif
