#!/bin/sh
# exp_mca.sh — what one vector of the fast forward's P = exp(scale S - m) costs on a core's ports,
# by llvm-mca's model of that core: the main loop of exp_row (src/flashdemo/fast/exp_row.hpp:
# load S, times scale, minus m, exp_vector, store P, add to the row sum), compiled as the fast
# path compiles it (g++ -O2, -ffp-contract=fast), its steady state per iteration (16 floats on
# AVX-512).
# Beside a row of S at head dimension d the tile kernel issues 2 d FMAs a vector (d for
# S = Q K^T, d for O += P V), on the same two 512-bit ports (0 and 5) on Intel's AVX-512 cores:
# the loop's uops on those ports against 2 d gives the softmax's share of a forward at best.
#
# Usage: scripts/exp_mca.sh [CPU ...]   (llvm-mca -mcpu names; default icelake-server, the
#   newest Intel AVX-512 core LLVM 14 models; Sapphire Rapids keeps its ports 0 and 5 for 512-bit
#   arithmetic)
# Needs g++, Eigen (its double exp) and llvm-mca (Debian's llvm-14). MARCH (default x86-64-v4) is the -march.
# Exit 2, with one line on stderr, where llvm-mca is missing or refuses a CPU name.
set -eu
command -v llvm-mca >/dev/null || { echo "exp_mca: llvm-mca not found (Debian's llvm package)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/exp_loop.cpp" <<'CPP'
#include "flashdemo/fast/exp_row.hpp"
// the forward's call (fast_attention.cpp's softmax_row): no lo, nothing done with each vector
float exp_loop(float* S, long keep, long cols, float scale, float shift) {
  return fd::fast::exp_row<false>(S, keep, cols, scale, shift, 0.0f, [](long, auto) {});
}
CPP
g++ -O2 -march="${MARCH:-x86-64-v4}" -ffp-contract=fast -std=c++20 -I"$root/src" -I/usr/include/eigen3 -S \
  -o "$tmp/exp_loop.s" "$tmp/exp_loop.cpp"
# the loop: from the first label whose block ends in a branch back to it
awk '/^\.L[0-9]+:/{label=substr($1,1,length($1)-1); n=0; delete body; inside=1; next}
     inside{body[++n]=$0; if ($1 ~ /^j/ && $2 == label) {for (i=1;i<=n;i++) print body[i]; exit}}' \
  "$tmp/exp_loop.s" >"$tmp/loop.s"
[ -s "$tmp/loop.s" ] || { echo "exp_mca: no loop found in the compiled code" >&2; exit 1; }
echo "# exp_row's loop, g++ -O2 -march=${MARCH:-x86-64-v4} -ffp-contract=fast ($(grep -c . "$tmp/loop.s") instructions):"
sed 's/^/#   /' "$tmp/loop.s"
for cpu in "${@:-icelake-server}"; do
  echo "## llvm-mca -mcpu=$cpu -iterations=1000"
  llvm-mca -mcpu="$cpu" -iterations=1000 "$tmp/loop.s" >"$tmp/mca.txt" 2>&1 ||
    { echo "exp_mca: llvm-mca -mcpu=$cpu failed: $(head -1 "$tmp/mca.txt")" >&2; exit 2; }
  sed -n '/^Iterations:/,/^Block RThroughput/p; /^Resources:/,/^$/p; /^Resource pressure per iteration:/,/^$/p' "$tmp/mca.txt"
done
