#!/usr/bin/env bash
# Runs the SYCL tests (suite `sycl`): builds AdaptiveCpp into PREFIX first if
# PREFIX/bin/acpp is missing (scripts/build-adaptivecpp.sh, with its Debian
# packages), then ushmem with -Dsycl=PREFIX/bin/acpp in BUILD_DIR. CI does
# not run this (docs/guide/sycl.md). The last line is a plain summary.
#
# Usage: scripts/test-sycl.sh [PREFIX]   (default: $HOME/.local/ushmem-adaptivecpp)
#   BUILD_DIR   the build directory (default: build-sycl)
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-${HOME:-/tmp}/.local/ushmem-adaptivecpp}
build=${BUILD_DIR:-build-sycl}
if [ ! -x "$prefix/bin/acpp" ]; then
    ACPP_DEPS=1 bash scripts/build-adaptivecpp.sh "$prefix" || exit 1
fi
if [ ! -d "$build" ]; then
    meson setup "$build" --buildtype=debugoptimized --werror -Dsycl="$prefix/bin/acpp" || exit 1
else
    meson configure "$build" -Dsycl="$prefix/bin/acpp" || exit 1
fi
ninja -C "$build" || exit 1
meson test -C "$build" --suite sycl --print-errorlogs --num-processes 1 2>&1 |
    tee "$build/test-sycl-output.txt"
rc=${PIPESTATUS[0]}
# shellcheck source=scripts/meson_summary.sh
. scripts/meson_summary.sh
meson_summary "$build/test-sycl-output.txt" "$rc"
