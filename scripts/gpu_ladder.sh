#!/usr/bin/env bash
# On the GPU machine, one call: what the ladder's numbers in docs/gpu-ladder.md come from. The GPU
# tests of every rung, compute-sanitizer memcheck and racecheck on them, `flashdemo ladder` on the
# default case (d = 128) and at d = 64, causal and not, a forward of each rung through the command
# line graded by `check`, hopper's overlap steps each on and off, then scripts/torch_compare.py for
# hopper and mma (bf16, forward; mma's backward) and simt (fp32) when PyTorch is there. DIR holds flashdemo, flashdemo_gpu_tests and libfmt.so.9 (built elsewhere
# with static cudart, -DFLASHDEMO_MARCH for that CPU); logs go to OUT (default /tmp/gpu_ladder).
#   bash scripts/gpu_ladder.sh DIR
set -u
dir=$(cd "$1" && pwd) out=${OUT:-/tmp/gpu_ladder} here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH=$dir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=$dir/flashdemo
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$dir/flashdemo_gpu_tests" >"$out/tests.log" 2>&1
echo "tests exit $?: $(grep -m1 'assertions:' "$out/tests.log")"
for tool in memcheck racecheck synccheck; do
  timeout 240 compute-sanitizer --tool $tool "$dir/flashdemo_gpu_tests" -tc="the rungs*" \
    >"$out/$tool.log" 2>&1
  echo "$tool exit $?: $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log")"
done
for args in "" "--causal" "--d 64" "--d 64 --causal"; do
  echo "flashdemo ladder $args"
  timeout 300 "$F" ladder $args 2>&1 | tee "$out/ladder${args// /_}.txt" | tail -8
done
cd "$out" || exit 1
for rung in "simt --dtype fp32" "tc --dtype bf16" "mma --dtype bf16" "mma --dtype fp16" \
  "hopper --dtype bf16" "hopper --dtype fp16"; do
  set -- $rung
  "$F" forward --device cuda --impl $rung --n 1000 --m 1300 --d 128 --causal-align bottom-right \
    --save-q q.npy --save-k k.npy --save-v v.npy --save-o o.npy >/dev/null 2>"forward_$1.err"
  echo "forward --impl $rung: exit $?; check: $("$F" check --q q.npy --k k.npy --v v.npy --o o.npy \
    --causal-align bottom-right "$2" "$3" 2>&1 | tail -1)"
done
timeout 300 "$dir/flashdemo_gpu_tests" -tc="hopper steps speed*" --no-skip 2>&1 |
  grep -E "TFLOP" | sed -E 's/.*MESSAGE: //' | tee "$out/hopper_steps.txt"
timeout 300 "$dir/flashdemo_gpu_tests" -tc="rung backward speed*" --no-skip 2>&1 |
  grep -E "TFLOP" | sed -E 's/.*MESSAGE: //' | tee "$out/backward_speed.txt"
if python3 -c "import torch" 2>/dev/null; then
  timeout 900 python3 "$here/torch_compare.py" --flashdemo "$F" --impl hopper --dtype bf16 \
    --out "$out/torch_hopper_bf16.json" 2>"$out/torch_hopper.err"
  timeout 900 python3 "$here/torch_compare.py" --flashdemo "$F" --impl mma --dtype bf16 \
    --out "$out/torch_mma_bf16.json" 2>"$out/torch_mma.err"
  timeout 600 python3 "$here/torch_compare.py" --flashdemo "$F" --impl simt --dtype fp32 \
    --out "$out/torch_simt_fp32.json" 2>"$out/torch_simt.err"
  timeout 900 python3 "$here/torch_compare.py" --flashdemo "$F" --impl mma --dtype bf16 \
    --passes bwd --out "$out/torch_mma_bf16_bwd.json" 2>"$out/torch_mma_bwd.err"
fi
