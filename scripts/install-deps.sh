#!/usr/bin/env bash
# Installs what ushmem needs to build, test and benchmark on Debian 12.
set -euo pipefail
packages=(build-essential meson ninja-build pkg-config check libpmix-dev
          openmpi-bin libopenmpi-dev libfabric-dev libfabric-bin libze-dev libze1
          clang-15 llvm-spirv-15 spirv-tools
          scdoc man-db) # the man pages, and the check that man renders them
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
