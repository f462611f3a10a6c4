#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite (the command CI runs): once in Release
# (with CUDA where nvcc is found: every kernel compiled, the GPU tests skipped without a GPU), once
# under AddressSanitizer and UndefinedBehaviorSanitizer (any report fails the run). ctest runs the
# tests in parallel: most of them wait on child processes (the binary, mpirun, Python, Chromium)
# more than they compute, so the Release suite runs while the sanitizer tree is built, its report
# printed when both are done.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
stage() { echo "test.sh: $1 at ${SECONDS} s"; }
scripts/deps.sh
jobs=$(($(nproc) + 2))
cmake --preset release >/dev/null
cmake --build --preset release
stage "Release tree built"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ctest --preset release -j "$jobs" >"$log" 2>&1 &
release=$!
cmake --preset asan >/dev/null
built=0
cmake --build --preset asan || built=$?
status=0
stage "sanitizer tree built"
wait "$release" || status=$?
stage "Release suite done"
cat "$log"
[ "$status" -eq 0 ] || { echo "test.sh: the Release suite failed" >&2; exit "$status"; }
[ "$built" -eq 0 ] || { echo "test.sh: the sanitizer build failed" >&2; exit "$built"; }
ctest --preset asan -j "$jobs"
stage "sanitizer suite done"
