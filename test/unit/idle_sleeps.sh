#!/usr/bin/env bash
# idle_sleeps.sh zero|some|warm command...
# Runs a job with SHMEM_DEBUG=1 and reads each PE's proxy line at finalize
# ("proxy: ... N idle sleeps; M warm kernels"). zero: every PE's proxy ran
# and none slept (USHMEM_PROXY_IDLE=spin); some: some PE's proxy slept;
# warm: none slept and every PE's proxy launched warm kernels. Fails when the job
# fails or when no PE's proxy reported; a job that exits 77 is a skip.
set -u
want=$1
shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out" | grep -v '^\[.*DEBUG' || true
if [ $code -eq 77 ]; then
    exit 77 # the program cannot run here (a GPU test without a GPU): a skip
fi
if [ $code -ne 0 ]; then
    printf '%s\n' "$out" | tail -40
    echo "idle_sleeps.sh: the job exited $code" >&2
    exit 1
fi
counts=$(printf '%s\n' "$out" | sed -n 's/.*DEBUG: proxy: .*; \([0-9][0-9]*\) idle sleeps.*/\1/p')
n=$(printf '%s\n' "$counts" | grep -c .)
printf 'idle sleeps per PE: %s\n' "$(echo $counts)"
if [ "$n" -lt 1 ]; then
    echo "idle_sleeps.sh: no PE's proxy reported its sleeps" >&2
    exit 1
fi
warms=$(printf '%s\n' "$out" | sed -n 's/.*DEBUG: proxy: .*; \([0-9][0-9]*\) warm kernels.*/\1/p')
printf 'warm kernels per PE: %s\n' "$(echo $warms)"
case $want in
warm)
    if printf '%s\n' "$counts" | grep -qv '^0$'; then
        echo "idle_sleeps.sh: a proxy slept with USHMEM_PROXY_IDLE=spin" >&2
        exit 1
    fi
    if [ -z "$warms" ] || printf '%s\n' "$warms" | grep -q '^0$'; then
        echo "idle_sleeps.sh: a proxy launched no warm kernel" >&2
        exit 1
    fi ;;
zero)
    if printf '%s\n' "$counts" | grep -qv '^0$'; then
        echo "idle_sleeps.sh: a proxy slept with USHMEM_PROXY_IDLE=spin" >&2
        exit 1
    fi ;;
some)
    if ! printf '%s\n' "$counts" | grep -qv '^0$'; then
        echo "idle_sleeps.sh: no proxy slept" >&2
        exit 1
    fi ;;
*) echo "idle_sleeps.sh: zero, some or warm, not '$want'" >&2; exit 2 ;;
esac
exit 0
