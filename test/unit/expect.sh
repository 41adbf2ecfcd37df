#!/usr/bin/env bash
# expect.sh CODE PATTERN -- command...
# Runs the command; passes when it exits with CODE (not by a signal; 128+n
# would show a signal) and its combined output matches the extended regex PATTERN.
# A command that exits 77 (a program that cannot run here, say without a GPU)
# is a skip, unless 77 is the code wanted.
set -u
want_code=$1
pattern=$2
shift 2
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
if [ "$code" -eq 77 ] && [ "$want_code" -ne 77 ]; then
    exit 77
fi
if [ "$code" -ne "$want_code" ]; then
    echo "expect.sh: exit code $code, wanted $want_code" >&2
    exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    echo "expect.sh: output does not match /$pattern/" >&2
    exit 1
fi
exit 0
