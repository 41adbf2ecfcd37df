#!/usr/bin/env bash
# Configures (warnings are errors) and builds ushmem into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --werror --buildtype=debugoptimized
fi
ninja -C "$build"
