#!/usr/bin/env bash
# On the GPU machine, one call: the GPU tests (the correctness grid through the kernels), then
# compute-sanitizer memcheck and racecheck on subsets of the grid, then a few runs through the
# command line. DIR holds flashdemo, flashdemo_gpu_tests and libfmt.so.9 (built elsewhere with
# static cudart); logs go to OUT (default /tmp/gpu_grid).
#   bash scripts/gpu_grid.sh DIR
set -u
dir=$(cd "$1" && pwd) out=${OUT:-/tmp/gpu_grid}
mkdir -p "$out"
export LD_LIBRARY_PATH=$dir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
(time "$dir/flashdemo_gpu_tests") >"$out/tests.log" 2>&1
echo "tests exit $?"; grep -E "test cases|assertions|real" "$out/tests.log"
for tool in memcheck racecheck; do
  grid=quick; [ $tool = racecheck ] && grid=tiny  # racecheck is the slowest: the smallest grid
  FLASHDEMO_GRID=$grid timeout 240 compute-sanitizer --tool $tool "$dir/flashdemo_gpu_tests" \
    >"$out/$tool.log" 2>&1
  echo "$tool exit $?: $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log")"
  grep -m1 "assertions:" "$out/$tool.log"
done
cd "$out" || exit 1
F=$dir/flashdemo
$F forward --device cuda --causal --trace none | tail -3
$F backward --device cuda --causal --trace none | grep -A5 "Against the ref"
$F backward --device cuda --n 513 --d 128 --causal --dtype fp32 --trace none | grep -A5 "Against the ref"
