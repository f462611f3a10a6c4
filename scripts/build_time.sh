#!/usr/bin/env bash
# Build time: a clean configure and build of a CPU-only Release tree (-DFLASHDEMO_CUDA=OFF, every
# target `ninja` builds, the tests included) of each commit named, back to back, without ccache;
# prints for each the wall time and the CPU time (user + sys of the compiler and linker
# processes). On a shared machine the wall time is noisy; the CPU time is the figure to compare.
#   scripts/build_time.sh [COMMIT|DIR...]   (default: 3b34320, before the precompiled headers,
#   and HEAD; a directory is a source tree, e.g. an unpacked `git archive` where git is not)
# docs/performance.md, "Build time", has the figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
commits=("$@")
[ ${#commits[@]} -gt 0 ] || commits=(3b34320 HEAD)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CCACHE_DISABLE=1
unset CMAKE_CXX_COMPILER_LAUNCHER CMAKE_C_COMPILER_LAUNCHER CMAKE_CUDA_COMPILER_LAUNCHER
printf '%-10s %10s %10s %10s %10s\n' commit wall_s user_s sys_s cpu_s
for c in "${commits[@]}"; do
  src="$work/src"
  mkdir -p "$src"
  if [ -d "$c" ]; then
    cp -r "$c"/. "$src"
    rm -rf "$src/build"
    name=$(basename "$c")
  else
    git -C "$root" archive "$c" | tar -x -C "$src"
    name=$(git -C "$root" rev-parse --short "$c")
  fi
  /usr/bin/time -f '%e %U %S' -o "$work/time" bash -c \
    "cmake -S '$src' -B '$src/build' -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHDEMO_CUDA=OFF \
       >'$work/log' 2>&1 && ninja -C '$src/build' >>'$work/log' 2>&1" ||
    { tail -20 "$work/log"; exit 1; }
  awk -v c="$name" \
    '{ printf "%-10s %10.1f %10.1f %10.1f %10.1f\n", c, $1, $2, $3, $2 + $3 }' "$work/time"
  rm -rf "$src"
done
