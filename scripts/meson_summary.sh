# Sourced by scripts/test.sh and scripts/sanitize.sh.
# meson_summary LOG RC: prints the summary that `meson test` wrote at the end
# of LOG as one plain line, "N passed, N failed, N skipped" (expected
# failures pass; unexpected passes and timeouts fail; a non-zero RC with
# nothing counted as failed counts as one failure), and returns RC.
meson_summary() {
    local log=$1 rc=$2 ok expfail fail unexpass skipped timeout passed failed
    count() { sed -n "s/^$1: *\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
    ok=$(count 'Ok')
    expfail=$(count 'Expected Fail')
    fail=$(count 'Fail')
    unexpass=$(count 'Unexpected Pass')
    skipped=$(count 'Skipped')
    timeout=$(count 'Timeout')
    passed=$((${ok:-0} + ${expfail:-0}))
    failed=$((${fail:-0} + ${unexpass:-0} + ${timeout:-0}))
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        failed=1
    fi
    echo "${passed} passed, ${failed} failed, ${skipped:-0} skipped"
    return "$rc"
}
