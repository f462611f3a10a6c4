#!/usr/bin/env bash
# On a GPU machine: `flashdemo ring --device cuda` (docs/at-scale.md, section 8, "On GPUs").
#   1. the GPU ring's tests (flashdemo_gpu_tests -tc="ring*"), when DIR has the test binary;
#   2. one rank on one GPU: forward and backward, fp32 and bf16, causal and not (8 runs);
#   3. with one GPU only: mpirun -np 2 must refuse in one line, exit 5 (more ranks than GPUs);
#   4. with G >= 2 GPUs (nvidia-smi -L): mpirun -np G for G = 2, 4, 8 up to the GPUs there are, the
#      same 8 cases, NCCL between the GPUs (NCCL_NVLS_ENABLE=0: no NVLink multicast).
# Every run writes its --json lines (ring_rank, ring_step with per-step compute, wait, step and
# comm times and bytes, then result) to OUT/NAME.jsonl and its exit code to OUT/summary.txt; the
# bf16 causal backward also as text (the tables) to OUT/NAME.txt.
#   bash scripts/ring_gpu.sh DIR        DIR: flashdemo (and flashdemo_gpu_tests), built elsewhere
# Sizes: N1 (one GPU, default 4096), NG (the mpirun runs, default 8192), D (default 64 and 128).
set -u
dir=$(cd "${1:?usage: ring_gpu.sh DIR}" && pwd)
out=${OUT:-/tmp/ring_gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH=$dir:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
F=$dir/flashdemo
N1=${N1:-4096} NG=${NG:-8192} D1=${D1:-64} DG=${DG:-128}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
mpirun_flags=(--allow-run-as-root --oversubscribe)
summary=$out/summary.txt
: >"$summary"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | tee "$out/gpus.txt"
echo "GPUs: $gpus" | tee -a "$summary"

note() {  # note NAME EXIT: the exit code and whether the result passed
  local pass
  pass=$(grep -o '"pass":[a-z]*' "$out/$1.jsonl" 2>/dev/null | tail -1)
  echo "$1 exit $2 ${pass:-no result}" | tee -a "$summary"
}

if [ -x "$dir/flashdemo_gpu_tests" ]; then
  "$dir/flashdemo_gpu_tests" -tc="ring*" >"$out/gpu_tests.log" 2>&1
  echo "gpu_tests ring* exit $?: $(grep -E 'assertions:' "$out/gpu_tests.log")" | tee -a "$summary"
fi

# run NAME LAUNCH... -- ARGS...: one run, JSON to NAME.jsonl, stderr to NAME.err
run() {
  local name=$1
  shift
  local launch=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift
  timeout 600 "${launch[@]}" "$F" ring --device cuda "$@" --json >"$out/$name.jsonl" 2>"$out/$name.err"
  note "$name" $?
}

cases() {  # cases PREFIX N D LAUNCH...: the 8 cases
  local prefix=$1 n=$2 d=$3
  shift 3
  for dtype in fp32 bf16; do
    for mask in plain causal; do
      for pass in fwd bwd; do
        local extra=()
        [ $mask = causal ] && extra+=(--causal)
        run "${prefix}_${dtype}_${mask}_${pass}" "$@" -- --n "$n" --d "$d" --dtype $dtype \
          --pass $pass "${extra[@]}"
      done
    done
  done
  timeout 600 "$@" "$F" ring --device cuda --n "$n" --d "$d" --dtype bf16 --causal --pass bwd \
    >"$out/${prefix}_bf16_causal_bwd.txt" 2>&1
}

cases p1 "$N1" "$D1" env
if [ "$gpus" -lt 2 ]; then
  mpirun "${mpirun_flags[@]}" -np 2 "$F" ring --device cuda --n 64 --d 16 >/dev/null \
    2>"$out/refuse_np2.err"
  echo "refuse_np2 exit $? (5 wanted), $(grep -c 'flashdemo: error:' "$out/refuse_np2.err") error line(s): $(grep -m1 'flashdemo: error:' "$out/refuse_np2.err")" |
    tee -a "$summary"
fi
for G in 2 4 8; do
  [ "$gpus" -ge "$G" ] || break
  cases "np${G}" "$NG" "$DG" mpirun "${mpirun_flags[@]}" -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
    -np "$G"
done
echo "outputs in $out"
