#!/usr/bin/env bash
# landing_counts.sh NPES command...
# Runs a job whose heap is landed through messages with SHMEM_DEBUG=1 and
# reads each PE's landing line at finalize ("landing: N requests landed,
# A us each on the device (the slowest S); Q of them after 1 ms or more
# without one, B us each"), and the round trips of the requests it sent
# ("landing: N requests answered, R us each from send to reply: T at the
# target, F on the fabric both ways (each end's wait to read its queue
# included)"): every one of the NPES PEs must
# report each, once, with N > 0 and Q <= N, and T <= R (the target's time
# is part of the round trip). Fails when the job fails. (Whether Q counts
# only landings after a quiet spell is not checked: the job's spells are
# the scheduler's.)
set -u
npes=$1
shift
out=$(SHMEM_DEBUG=1 "$@" 2>&1)
code=$?
if [ $code -ne 0 ]; then
    printf '%s\n' "$out" | tail -40
    echo "landing_counts.sh: the job exited $code" >&2
    exit 1
fi
fail() { echo "landing_counts.sh: $*" >&2; exit 1; }

# check WHAT GREP RE CHECK: every PE prints one line that GREP finds and RE
# matches (its groups in BASH_REMATCH), and for which the function CHECK
# succeeds.
check() {
    local what=$1 lines line pe n=0 seen=
    lines=$(printf '%s\n' "$out" | grep "$2")
    printf '%s\n' "$lines"
    while read -r line; do
        [ -n "$line" ] || continue
        [[ $line =~ $3 ]] || fail "a line of $what not as expected: $line"
        pe=$(sed -E 's/.*\[PE ([0-9]+)\].*/\1/' <<<"$line")
        case " $seen " in *" $pe "*) fail "PE $pe reported its $what twice" ;; esac
        seen="$seen $pe"
        "$4" || fail "$what: $line"
        n=$((n + 1))
    done <<<"$lines"
    [ $n -eq "$npes" ] || fail "$n of $npes PEs reported their $what"
}
# N landed > 0, and Q of them after a quiet spell <= N.
landings_ok() { [ "${BASH_REMATCH[1]}" -gt 0 ] && [ "${BASH_REMATCH[2]}" -le "${BASH_REMATCH[1]}" ]; }
# N answered > 0, and the time at the target, which every reply carries
# under SHMEM_DEBUG, more than 0 and within the trip.
trips_ok() {
    [ "${BASH_REMATCH[1]}" -gt 0 ] &&
        awk -v a="${BASH_REMATCH[3]}" -v r="${BASH_REMATCH[2]}" 'BEGIN { exit !(a > 0 && a <= r) }'
}
check landings 'DEBUG: landing: [0-9]* requests landed' \
    '.*DEBUG: landing: ([0-9]+) requests landed, [0-9.]+ us each on the device \(the slowest [0-9.]+\); ([0-9]+) of them after 1 ms or more without one, [0-9.]+ us each.*' \
    landings_ok
check "round trips" 'DEBUG: landing: [0-9]* requests answered' \
    '.*DEBUG: landing: ([0-9]+) requests answered, ([0-9.]+) us each from send to reply: ([0-9.]+) at the target, (-?[0-9.]+) on the fabric both ways \(each end.s wait to read its queue included\).*' \
    trips_ok
exit 0
