#!/usr/bin/env bash
# heap_grow_refused.sh PATTERN -- command...
# Runs mpe_heap_grow --refuse or --fault under a launcher: passes when the
# job exits 0 and its output holds exactly one ERROR line, matching the
# extended regex PATTERN (the growth refused on one PE, or a peer's chunk
# that one PE could not take, is one line for the whole job).
set -u
pattern=$1
shift
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
if [ "$code" -ne 0 ]; then
    echo "heap_grow_refused.sh: exit code $code, wanted 0" >&2
    exit 1
fi
errors=$(printf '%s\n' "$out" | grep -c 'ERROR')
if [ "$errors" -ne 1 ]; then
    echo "heap_grow_refused.sh: $errors ERROR lines, wanted exactly 1" >&2
    exit 1
fi
if ! printf '%s\n' "$out" | grep 'ERROR' | grep -Eq -- "$pattern"; then
    echo "heap_grow_refused.sh: the ERROR line does not match /$pattern/" >&2
    exit 1
fi
exit 0
