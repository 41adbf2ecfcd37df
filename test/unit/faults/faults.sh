#!/usr/bin/env bash
# Faults, checked from outside the job.
#
# faults.sh kill CASE NPES OSHRUN MPE_FAULTS [VAR=value...]
#   The last PE dies by SIGKILL while the others wait in a barrier or a
#   wait_until (CASE kill-barrier or kill-wait, see mpe/mpe_faults.c). The
#   job must end within seconds with oshrun's status 137 and a line naming
#   the PE and the signal, no PE may outlive it, and it must leave nothing
#   in TMPDIR or in /dev/shm (libfabric's shm provider names its files after
#   the pid: oshrun removes a killed PE's).
#
# faults.sh lines N CODE PATTERN NPES OSHRUN MPE_FAULTS CASE [VAR=value...]
#   Runs CASE of mpe/mpe_faults.c (a job that hangs is ended by oshrun's
#   --timeout 8, status 124): the job must exit CODE, and exactly N lines
#   of its output match the extended regex PATTERN (one for a message that
#   the job says once, whatever the PE count; 0 for one it must not say).
#
# faults.sh fd-refused OSHRUN USHMEM_INFO MPE_MATRIX NOPIDFD_SO
#   pidfd_getfd fails with EPERM in every PE (nopidfd.c, preloaded): the
#   default fd passing falls back to the socket and the job works; with
#   USHMEM_FD_PASSING=pidfd init fails and says what to set. Where pidfd
#   works, the default opens no fd server (its debug line says when one
#   listens).
set -u

fail() { echo "faults.sh: $*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/faults.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp" "$work/pids"

# Runs "$@" with output in $out, status in $code, duration in $elapsed_ms.
run()
{
    local start
    start=$(date +%s%N)
    out=$("$@" 2>&1)
    code=$?
    elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    printf '%s\n' "$out"
    echo "faults.sh: exit status $code after $elapsed_ms ms"
}

case ${1:-} in
kill)
    [ $# -ge 5 ] || fail "usage: faults.sh kill CASE NPES OSHRUN MPE_FAULTS [VAR=value...]"
    what=$2 npes=$3 oshrun=$4 prog=$5
    shift 5
    run env TMPDIR="$work/tmp" MPE_PIDDIR="$work/pids" SHMEM_SYMMETRIC_SIZE=16M "$@" \
        "$oshrun" --timeout 30 -n "$npes" "$prog" "$what"
    last=$((npes - 1))
    [ "$code" -eq 137 ] || fail "exit status $code, wanted 137 (SIGKILL)"
    printf '%s\n' "$out" | grep -Eq "^oshrun: PE $last \(pid [0-9]+\) was killed by signal 9" ||
        fail "oshrun did not name PE $last and signal 9"
    [ "$elapsed_ms" -lt 6000 ] || fail "the job took $elapsed_ms ms to end"
    pids=$(cat "$work"/pids/pe* 2>/dev/null)
    [ "$(echo "$pids" | wc -w)" -eq "$npes" ] || fail "only $(echo $pids) of $npes PEs started"
    for pid in $pids; do
        if kill -0 "$pid" 2>/dev/null && grep -q mpe_faults "/proc/$pid/cmdline" 2>/dev/null; then
            fail "PE process $pid outlived the job"
        fi
        left=$(ls -A /dev/shm | grep -E "(^|[^0-9])$pid([^0-9]|$)")
        [ -z "$left" ] || fail "/dev/shm still holds $left of PE process $pid"
    done
    left=$(ls -A "$work/tmp")
    [ -z "$left" ] || fail "the job left files in TMPDIR: $left"
    ;;
lines)
    [ $# -ge 8 ] ||
        fail "usage: faults.sh lines N CODE PATTERN NPES OSHRUN MPE_FAULTS CASE [VAR=value...]"
    lines=$2 want=$3 pattern=$4 npes=$5 oshrun=$6 prog=$7 what=$8
    shift 8
    run env TMPDIR="$work/tmp" SHMEM_SYMMETRIC_SIZE=16M "$@" \
        "$oshrun" --timeout 8 -n "$npes" "$prog" "$what"
    [ "$code" -eq "$want" ] || fail "exit status $code, wanted $want"
    seen=$(printf '%s\n' "$out" | grep -cE -- "$pattern")
    [ "$seen" -eq "$lines" ] || fail "$seen lines match /$pattern/, wanted $lines"
    left=$(ls -A "$work/tmp")
    [ -z "$left" ] || fail "the job left files in TMPDIR: $left"
    ;;
fd-refused)
    [ $# -eq 5 ] || fail "usage: faults.sh fd-refused OSHRUN USHMEM_INFO MPE_MATRIX NOPIDFD_SO"
    oshrun=$2 info=$3 matrix=$4 so=$5
    base=(env TMPDIR="$work/tmp" SHMEM_SYMMETRIC_SIZE=16M)
    # Without the filter pidfd_getfd works here, or this test proves nothing.
    listening="DEBUG: fd server of rank [0-9]+: listening on '@ushmem-[0-9a-f]{32}'"
    run "${base[@]}" USHMEM_LOG_LEVEL=debug "$oshrun" --timeout 30 -n 2 "$info" --topology
    [ "$code" -eq 0 ] || fail "ushmem_info --topology: exit status $code"
    printf '%s\n' "$out" | grep -q "heap mapped through an fd taken with pidfd_getfd" ||
        fail "pidfd_getfd is not used on this machine even without the filter"
    ! printf '%s\n' "$out" | grep -Eq "$listening" ||
        fail "auto mode opened an fd server although pidfd_getfd works"
    run "${base[@]}" USHMEM_LOG_LEVEL=debug LD_PRELOAD="$so" "$oshrun" --timeout 30 -n 2 "$info" \
        --topology
    [ "$code" -eq 0 ] || fail "ushmem_info --topology with pidfd_getfd refused: exit status $code"
    printf '%s\n' "$out" | grep -q "heap mapped through an fd passed over a socket" ||
        fail "the heap was not passed over the socket"
    ! printf '%s\n' "$out" | grep -q "taken with pidfd_getfd" || fail "pidfd_getfd still used"
    printf '%s\n' "$out" | grep -Eq "$listening" ||
        fail "no fd server said it was listening in auto's fallback (has its debug line changed?)"
    run "${base[@]}" LD_PRELOAD="$so" "$oshrun" --timeout 30 -n 3 "$matrix" \
        rma=sd amo=sd signal=sd sync=sd
    [ "$code" -eq 0 ] || fail "the workload failed with pidfd_getfd refused: exit status $code"
    run "${base[@]}" LD_PRELOAD="$so" USHMEM_FD_PASSING=pidfd "$oshrun" --timeout 30 -n 2 \
        "$matrix"
    [ "$code" -eq 1 ] || fail "USHMEM_FD_PASSING=pidfd with pidfd_getfd refused: exit status $code"
    printf '%s\n' "$out" | grep -Eq "^ushmem\[PE [01]\] ERROR: ushmemi_ipc_connect: PE [01] cannot take PE [01]'s heap fd [0-9]+ \(pid [0-9]+\) with pidfd_getfd: Operation not permitted .*USHMEM_FD_PASSING=socket may work" ||
        fail "no message saying that pidfd_getfd was refused and what to set"
    left=$(ls -A "$work/tmp")
    [ -z "$left" ] || fail "the jobs left files in TMPDIR: $left"
    ;;
*)
    fail "usage: faults.sh kill ... | faults.sh lines ... | faults.sh fd-refused ..."
    ;;
esac
exit 0
