#!/usr/bin/env bash
# link_warm.sh PES PEERS MIN_ROUNDS command...
# Runs a job with SHMEM_DEBUG=1 and reads each PE's link keeper lines
# (src/host/link_warm.c): PES PEs must report a keeper that wrote into PEERS
# peers in at least MIN_ROUNDS rounds with none failed; PES 0: no PE may
# start one. Fails when the job fails.
set -u
pes=$1 peers=$2 min_rounds=$3
shift 3
out=$(SHMEM_DEBUG=1 "$@" 2>&1)
code=$?
printf '%s\n' "$out" | grep -v 'DEBUG' || true
printf '%s\n' "$out" | grep 'link keeper' || true
if [ $code -ne 0 ]; then
    printf '%s\n' "$out" | tail -40
    echo "link_warm.sh: the job exited $code" >&2
    exit 1
fi
started=$(printf '%s\n' "$out" | grep -c 'link keeper on PE [0-9]*: writes 8 bytes into')
stops=$(printf '%s\n' "$out" | sed -n 's/.*link keeper on PE \([0-9]*\): \([0-9]*\) rounds of writes to \([0-9]*\) peers, \([0-9]*\) failed.*/\1 \2 \3 \4/p')
if [ "$pes" -eq 0 ]; then
    if [ "$started" -ne 0 ] || [ -n "$stops" ]; then
        echo "link_warm.sh: a link keeper ran where none should" >&2
        exit 1
    fi
    exit 0
fi
if [ "$started" -ne "$pes" ] || [ "$(printf '%s\n' "$stops" | grep -c .)" -ne "$pes" ]; then
    echo "link_warm.sh: $started PEs started a keeper and $(printf '%s\n' "$stops" | grep -c .) reported one; wanted $pes" >&2
    exit 1
fi
bad=0
while read -r pe rounds n failed; do
    if [ "$n" -ne "$peers" ] || [ "$rounds" -lt "$min_rounds" ] || [ "$failed" -ne 0 ]; then
        echo "link_warm.sh: PE $pe: $rounds rounds to $n peers, $failed failed; wanted at least $min_rounds to $peers, none failed" >&2
        bad=1
    fi
done <<<"$stops"
exit $bad
