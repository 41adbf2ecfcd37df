#!/usr/bin/env bash
# landing_counts.sh NPES command...
# Runs a job whose heap is landed through messages with SHMEM_DEBUG=1 and
# reads each PE's landing line at finalize ("landing: N requests landed,
# A us each on the device (the slowest S); Q of them after 1 ms or more
# without one, B us each"): every one of the NPES PEs must report, each
# with N > 0 and Q <= N, once. Fails when the job fails. (Whether Q counts
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
lines=$(printf '%s\n' "$out" | grep 'DEBUG: landing: ')
printf '%s\n' "$lines"
re='.*DEBUG: landing: ([0-9]+) requests landed, [0-9.]+ us each on the device \(the slowest [0-9.]+\); ([0-9]+) of them after 1 ms or more without one, [0-9.]+ us each.*'
n=0
seen=
while read -r line; do
    [ -n "$line" ] || continue
    if ! [[ $line =~ $re ]]; then
        echo "landing_counts.sh: a landing line not as expected: $line" >&2
        exit 1
    fi
    landed=${BASH_REMATCH[1]} quiet=${BASH_REMATCH[2]}
    pe=$(sed -E 's/.*\[PE ([0-9]+)\].*/\1/' <<<"$line")
    case " $seen " in *" $pe "*)
        echo "landing_counts.sh: PE $pe reported twice" >&2
        exit 1 ;;
    esac
    seen="$seen $pe"
    if [ "$landed" -le 0 ] || [ "$quiet" -gt "$landed" ]; then
        echo "landing_counts.sh: $landed landed, $quiet after a quiet spell: $line" >&2
        exit 1
    fi
    n=$((n + 1))
done <<<"$lines"
if [ $n -ne "$npes" ]; then
    echo "landing_counts.sh: $n of $npes PEs reported their landings" >&2
    exit 1
fi
exit 0
