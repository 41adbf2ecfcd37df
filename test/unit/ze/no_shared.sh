#!/usr/bin/env bash
# no_shared.sh -- command...
# Runs the command with the Level Zero test driver logging every
# zeMemAllocShared call (UZT_SHARED_LOG); passes when the command passes and
# nothing asked for shared (migrating) memory: ushmem polls only host
# allocations.
set -u
[ "${1:-}" = "--" ] && shift
log=$(mktemp "${TMPDIR:-/tmp}/ze-shared.XXXXXX") || exit 1
rm -f "$log"
trap 'rm -f "$log"' EXIT
UZT_SHARED_LOG=$log "$@"
code=$?
[ "$code" -eq 0 ] || exit "$code"
if [ -e "$log" ]; then
    echo "no_shared.sh: zeMemAllocShared was called:" >&2
    cat "$log" >&2
    exit 1
fi
echo "no_shared.sh: no shared allocation"
