#!/usr/bin/env bash
# The 8-PE simulated-node tests beside a busy neighbour, as on a shared CI
# runner: first each test alone (its unloaded time), then RUNS rounds with
# another 8-PE job looping beside them and one `yes`. A round fails when a
# test fails or takes more than 3 times its unloaded time. Prints one line
# per test (unloaded, loaded min/median/max, failures) and exits 1 on any.
#
#   [FILTER=regex] scripts/loaded_simnodes.sh [BUILD_DIR] [RUNS]
#   (defaults: build, 20; FILTER keeps the tests whose names match)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
runs=${2:-20}
[ -x "$build/tools/oshrun" ] || { echo "loaded_simnodes.sh: build $build first" >&2; exit 2; }

mapfile -t tests < <(meson test -C "$build" --list --suite simnodes 2>/dev/null |
                     sed 's/.* \/ //' | grep -- '-n8$' | grep -E -- "${FILTER:-.}")
[ ${#tests[@]} -gt 0 ] || { echo "loaded_simnodes.sh: no 8-PE simnodes tests" >&2; exit 2; }

# one_run NAME: prints seconds, or FAIL
one_run() {
    local out
    out=$(meson test -C "$build" --no-rebuild "$1" 2>&1 | grep -E "^ *1/1 " || true)
    case $out in
    *" OK "*) awk '{ t = $NF; sub(/s$/, "", t); print t }' <<<"$out" ;;
    *) echo FAIL ;;
    esac
}

declare -A base
for t in "${tests[@]}"; do
    base[$t]=$(one_run "$t")
done

neighbours=()
cleanup() {
    for p in "${neighbours[@]}"; do
        kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT
setsid bash -c "while :; do USHMEM_SIM_NODES=2 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=64M \
    '$build/tools/oshrun' --timeout 100 -n 8 '$build/test/unit/mpe/mpe_amo' >/dev/null 2>&1; done" &
neighbours+=($!)
setsid yes >/dev/null &
neighbours+=($!)

declare -A times fails
for ((r = 0; r < runs; r++)); do
    for t in "${tests[@]}"; do
        s=$(one_run "$t")
        if [ "$s" = FAIL ] || [ "${base[$t]}" = FAIL ] ||
           awk -v s="$s" -v b="${base[$t]}" 'BEGIN { exit !(s > 3 * b) }'; then
            fails[$t]=$(( ${fails[$t]:-0} + 1 ))
        fi
        times[$t]="${times[$t]:-} $s"
    done
done

status=0
printf '%-40s %9s %28s %6s\n' test unloaded "loaded min/median/max (s)" fails
for t in "${tests[@]}"; do
    stats=$(tr ' ' '\n' <<<"${times[$t]}" | grep -v '^$' | grep -v FAIL | sort -g |
            awk '{ a[NR] = $1 } END { if (NR) printf "%s / %s / %s", a[1], a[int((NR + 1) / 2)], a[NR] }')
    printf '%-40s %9s %28s %6s\n' "$t" "${base[$t]}" "$stats" "${fails[$t]:-0}"
    [ "${fails[$t]:-0}" = 0 ] || status=1
done
echo "$runs loaded rounds of ${#tests[@]} tests: $([ $status = 0 ] && echo all passed within 3x || echo FAILURES)"
exit $status
