#!/usr/bin/env bash
# cpu_scaling.sh — two flashdemo builds side by side against PyTorch's CPU attention, at 16 and 2
# threads, in one call on the GPU machine's host CPU (16 cores, AVX-512, PyTorch in python3):
#   1. the FMA peak: fma_peak (scripts/fma_peak.cpp, built beside the new binary) at 16, 2 and 1
#      threads, and flashdemo's own GEMM ceiling (`bench --impl gemm`) at 16 threads;
#   2. scripts/cpu_compare.py (a copy beside this script) over n = 4096, 8192; d = 64, 128;
#      causal and not; fwd and bwd; b*h = 1 head, and 16 heads at n = 4096 only (PyTorch's math
#      backward at n = 8192 with 16 heads alone would take minutes); old and new binary per case.
# It stops starting new cases after BUDGET seconds (default 300) and lists what it skipped.
#
#   LD_LIBRARY_PATH=$PWD/device/new bash device/cpu_scaling.sh device/old device/new
# DIR_OLD and DIR_NEW each hold a `flashdemo` (and libfmt.so.9); results go to $OUT (default .).
set -euo pipefail
old=${1:?usage: cpu_scaling.sh DIR_OLD DIR_NEW}
new=${2:?usage: cpu_scaling.sh DIR_OLD DIR_NEW}
out=${OUT:-.}
here=$(cd "$(dirname "$0")" && pwd)
compare=$here/cpu_compare.py
[[ -f $compare ]] || compare=$here/../scripts/cpu_compare.py
mkdir -p "$out"
{
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|L1d|L2|L3|Flags' | cut -c1-200 || true
  for t in 16 2 1; do
    [[ -x $new/fma_peak ]] && "$new/fma_peak" "$t" 1
  done
  "$new/flashdemo" bench --device cpu --impl gemm --threads 16 --n 4096 \
    --d 128 --json || true
} 2>&1 | tee "$out/peak.txt"
echo "peak: $(grep -h '"fma_peak"\|"gemm"' "$out/peak.txt" | tr -d '\n' | cut -c1-600)"
python3 "$compare" --flashdemo "old=$old/flashdemo" --flashdemo "new=$new/flashdemo" \
  --threads 16,2 --heads 1,16 --heads-max-n 4096 --n 4096,8192 --hd 64,128 --causal 0,1 \
  --passes fwd,bwd --reps "${REPS:-3}" --heads-reps "${HEADS_REPS:-2}" --budget "${BUDGET:-300}" \
  --out "$out/cpu_scaling.json" 2> "$out/cpu_compare.err" | tee "$out/cpu_scaling.txt"
