#!/usr/bin/env bash
# Installs the dependencies, builds and runs every test. The last line is a
# plain summary: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
bash scripts/build.sh || exit 1
build=${BUILD_DIR:-build}
meson test -C "$build" --print-errorlogs --num-processes 2 "$@" 2>&1 | tee "$build/test-output.txt"
rc=${PIPESTATUS[0]}
# shellcheck source=scripts/meson_summary.sh
. scripts/meson_summary.sh
meson_summary "$build/test-output.txt" "$rc"

