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
ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$build/test-output.txt" | tail -n 1)
expfail=$(sed -n 's/^Expected Fail: *\([0-9]*\).*/\1/p' "$build/test-output.txt" | tail -n 1)
fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$build/test-output.txt" | tail -n 1)
unexpass=$(sed -n 's/^Unexpected Pass: *\([0-9]*\).*/\1/p' "$build/test-output.txt" | tail -n 1)
skipped=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$build/test-output.txt" | tail -n 1)
timeout=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$build/test-output.txt" | tail -n 1)
passed=$(( ${ok:-0} + ${expfail:-0} ))
failed=$(( ${fail:-0} + ${unexpass:-0} + ${timeout:-0} ))
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
fi
echo "${passed} passed, ${failed} failed, ${skipped:-0} skipped"
exit "$rc"
