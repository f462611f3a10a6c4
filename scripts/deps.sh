#!/usr/bin/env bash
# Installs, from Debian's packages, whatever flashdemo needs to build and test that is missing.
# Idempotent: when everything is present it installs nothing and needs no network.
set -euo pipefail
packages=(cmake ninja-build g++ libcli11-dev libfmt-dev libeigen3-dev doctest-dev nlohmann-json3-dev python3-numpy chromium zsh man-db openmpi-bin libopenmpi-dev
          clang libclang-rt-14-dev libomp-dev  # clang: the fuzz tree
          llvm  # llvm-mca: scripts/exp_mca.sh's printout (the exp_mca test)
          qemu-user)  # runs the binary as older x86-64 CPUs (the portable_levels test)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "flashdemo: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
