#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite (the command CI runs): once in Release,
# once under AddressSanitizer and UndefinedBehaviorSanitizer (any report fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan
