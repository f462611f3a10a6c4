#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite (the command CI runs): once in Release
# (with CUDA where nvcc is found: every kernel compiled, the GPU tests skipped without a GPU), once
# under AddressSanitizer and UndefinedBehaviorSanitizer (any report fails the run). ctest runs the tests in parallel: most of
# them wait on child processes (the binary, mpirun, Python, Chromium) more than they compute.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(($(nproc) + 2))
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release -j "$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan -j "$jobs"
