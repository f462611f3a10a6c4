#!/bin/sh
# fast_ab.sh — the fast CPU path of a commit (A) against the working tree's (B), in one process,
# alternated rep by rep (fast_ab.cpp), one line per case: on a shared machine the ratio of two
# commands run one after the other moves by more than a step's effect; a pair of reps does not.
#
# Usage: scripts/fast_ab.sh BASE "CASE" ["CASE" ...]   CASE: fast_ab.cpp's options
#   scripts/fast_ab.sh 7c779af "--d 64" "--d 128 --bwd" "--h 16 --d 64 --threads 2 --reps 6"
#   scripts/fast_ab.sh HEAD "--d 64 --threads 2 --Br-b 256"     (one tiling against another)
# A's other code (the headers outside src/flashdemo/fast) must not differ from B's where both
# use it: the two objects link against one library, and an inline function defined twice
# differently is one of them. Needs a configured build for the library (FLASHDEMO_BUILD, default build/release, its
# libflashdemo_core.a built) and g++; MARCH (default native) is the kernels' -march. With
# FAST_AB_OUT=FILE the program is also kept there, to run on another machine (no CASE needed;
# set MARCH to what that machine runs, x86-64-v4 for an AVX-512 Xeon, and FLASHDEMO_BUILD to a
# build made for it).
set -eu
if [ $# -lt 1 ] || { [ $# -lt 2 ] && [ -z "${FAST_AB_OUT:-}" ]; }; then
  echo "usage: scripts/fast_ab.sh BASE \"CASE\" [\"CASE\" ...]" >&2
  exit 2
fi
base=$1
shift
root=$(git rev-parse --show-toplevel)
lib=${FLASHDEMO_BUILD:-$root/build/release}/libflashdemo_core.a
if [ ! -f "$lib" ]; then
  echo "fast_ab.sh: $lib not found: build the library first (cmake --build build/release)" >&2
  exit 2
fi
# The two builds are called through one table type: it must be the same in both.
if ! git -C "$root" diff --quiet "$base" -- src/flashdemo/fast/kernels.hpp; then
  echo "fast_ab.sh: kernels.hpp differs between $base and the working tree" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$root" archive "$base" src | tar -x -C "$work"
flags="-isystem /usr/include/eigen3 -O3 -DNDEBUG -march=${MARCH:-native} -ffp-contract=fast -fopenmp -std=c++20"
g++ $flags -DFD_FAST_LEVEL=level_a -I"$work/src" -c "$work/src/flashdemo/fast/fast_attention.cpp" -o "$work/a.o"
g++ $flags -DFD_FAST_LEVEL=level_b -I"$root/src" -c "$root/src/flashdemo/fast/fast_attention.cpp" -o "$work/b.o"
g++ -O2 -std=c++20 -fopenmp -I"$root/src" "$root/scripts/fast_ab.cpp" "$work/a.o" "$work/b.o" "$lib" -o "$work/fast_ab"
if [ -n "${FAST_AB_OUT:-}" ]; then cp "$work/fast_ab" "$FAST_AB_OUT"; fi
echo "# A = $(git -C "$root" rev-parse --short "$base"), B = the working tree ($(git -C "$root" rev-parse --short HEAD) + changes); $(date -u +%F)"
for case in "$@"; do
  # shellcheck disable=SC2086  # a case is several options
  "$work/fast_ab" $case
done
