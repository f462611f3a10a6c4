#!/bin/bash
# One binary for any x86-64: flashdemo runs under emulated CPUs of the levels below x86-64-v4
# (qemu's user-mode emulator has no AVX-512) and picks the kernels each one has:
#   qemu64  -> x86-64 (SSE2),  Nehalem -> x86-64-v2 (SSE4.2),  Haswell -> x86-64-v3 (AVX2, FMA)
# and on each, `info` names that level and the fast forward and backward pass the rule. An
# instruction the CPU lacks, anywhere in the binary, ends the run with SIGILL (exit 132).
#
# usage: portable_levels.sh QEMU FLASHDEMO
set -u
unset FLASHDEMO_FAST_LEVEL  # the choice each emulated CPU makes itself, not one forced from outside
qemu=$1 fd=$2
status=0
for pair in qemu64:x86-64 Nehalem:x86-64-v2 Haswell:x86-64-v3; do
  cpu=${pair%%:*} want=${pair#*:}
  run() { "$qemu" -cpu "$cpu" "$fd" "$@" 2>/dev/null; }
  got=$(run info --json | sed -n 's/.*"fast_level":"\([^"]*\)".*/\1/p')
  if [ "$got" != "$want" ]; then
    echo "FAIL: -cpu $cpu: the fast path's kernels are '$got', not $want"
    status=1
    continue
  fi
  for pass in forward backward; do
    out=$(run $pass --impl fast --dtype fp32 --n 150 --m 97 --d 40 --causal \
          --causal-align bottom-right --json)
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q '"pass":true' <<<"$out"; then
      echo "FAIL: -cpu $cpu: $pass --impl fast exits $rc (132: an illegal instruction)"
      status=1
    else
      echo "ok: -cpu $cpu: $want kernels, $pass passes"
    fi
  done
done
exit $status
