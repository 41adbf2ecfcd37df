#!/usr/bin/env bash
# Builds ushmem with AddressSanitizer and UndefinedBehaviorSanitizer into
# ${BUILD_DIR:-build-sanitize} and runs every test there. Any report of
# either ends the process that made it with a non-zero status, so the test
# fails. Leaks in third-party libraries are suppressed by
# scripts/sanitize.supp (see docs/testing.md, "Sanitizers"). Arguments go to
# meson test (a suite, test names). The last line is a plain summary:
# "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD_DIR:-build-sanitize}
# Everything runs about two to four times slower than in the normal build.
multiplier=${SANITIZE_TIMEOUT_MULTIPLIER:-4}

if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --werror --buildtype=debug \
        -Db_sanitize=address,undefined -Db_lundef=false || exit 1
fi
ninja -C "$build" || exit 1

# detect_leaks: at every exit of every process, PEs and oshrun included.
# fast_unwind_on_malloc=0: full stacks through libraries built without
# frame pointers, which the suppressions match on (about 10% slower).
# abort_on_error=0 and exitcode: a report is an exit status of 1 (not a
# signal, which the launchers would report as a crash of the PE).
# verify_asan_link_order=0: the fault tests preload an interposer of their
# own (libnopidfd.so), which comes before the runtime in the library list;
# the runtime still comes before libc, so its interceptors hold.
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0:exitcode=1:verify_asan_link_order=0:strict_string_checks=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# The tests' own oshrun --timeout values stretch as meson's do.
export OSHRUN_TIMEOUT_SCALE=$multiplier
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

log="$build/sanitize-output.txt"
meson test -C "$build" --print-errorlogs --num-processes 2 -t "$multiplier" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# shellcheck source=scripts/meson_summary.sh
. scripts/meson_summary.sh
meson_summary "$log" "$rc"

