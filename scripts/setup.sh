#!/usr/bin/env bash
# Quick start, step 1: install what is missing, configure, build, and run a first demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/flashdemo walkthrough --no-pause
