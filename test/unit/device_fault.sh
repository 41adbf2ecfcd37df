#!/usr/bin/env bash
# device_fault.sh MODE NPES command...
# Runs mpe_device_fault MODE (the command ends with the program; MODE is
# passed to it) and checks what the library said of the fault record that
# the last PE wrote: exactly one line from that PE naming the call and the
# team (two in mode finalize, which writes it again after a second init),
# and none from any other; before the library's own fatal error in mode
# fatal; no line at all in mode none. Modes finalize and none must
# exit 0 and print their "done"; the others end the job, non-zero.
set -u
mode=$1 npes=$2
shift 2
out=$("$@" "$mode" 2>&1)
code=$?
printf '%s\n' "$out" | tail -30
last=$((npes - 1))
fail() { echo "device_fault.sh ($mode, $npes PEs): $*" >&2; exit 1; }
sentence='nvshmemx_int_sum_reduce_block on the device with team 77, which is not a team of this PE \(destroyed, never made, NVSHMEM_TEAM_INVALID, or a team ushmem does not have\): the kernel was ended there'
said=$(printf '%s\n' "$out" | grep -E "on the device with team|on the device ended the kernel")
n=$(printf '%s\n' "$said" | grep -c .)
case $mode in
finalize|none)
    [ $code -eq 0 ] || fail "exit code $code, wanted 0"
    printf '%s\n' "$out" | grep -q "device_fault $mode: done" || fail "no 'done' line" ;;
*)
    [ $code -ne 0 ] || fail "exit code 0: the job should have ended"
    [ $code -lt 128 ] || fail "exit code $code: a signal" ;;
esac
if [ "$mode" = none ]; then
    [ "$n" -eq 0 ] || fail "a fault was reported without one: $said"
    exit 0
fi
want=1
[ "$mode" = finalize ] && want=2
[ "$n" -eq $want ] || fail "$n fault lines, wanted $want: $said"
named=$(printf '%s\n' "$said" | grep -cE "ushmem\[PE $last\] ERROR: $sentence")
[ "$named" -eq $want ] || fail "not every line names PE $last, the call and the team: $said"
if [ "$mode" = fatal ]; then
    at=$(printf '%s\n' "$out" | grep -nE "on the device with team" | head -n1 | cut -d: -f1)
    fatal=$(printf '%s\n' "$out" | grep -nE "shmem_putmem: PE $((npes + 5)) is out of range" |
        head -n1 | cut -d: -f1)
    [ -n "$fatal" ] || fail "no fatal error for PE $((npes + 5))"
    [ "$at" -lt "$fatal" ] || fail "the fault came after the fatal error (lines $at, $fatal)"
fi
exit 0
