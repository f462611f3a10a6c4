#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite (the command CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
