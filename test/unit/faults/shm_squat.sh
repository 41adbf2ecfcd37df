#!/usr/bin/env bash
# shm_squat.sh OSHRUN NPES PROGRAM...
# Another local user creates, before the job starts, the /dev/shm files that
# libfabric's shm provider would name after the next pids
# (/dev/shm/<pid>:<uid>:<endpoint index>); the provider then refuses or
# crashes on them, and the job with it. Here the squatter is this script
# (the same user: the provider finds its name taken either way). The job,
# every peer over shm (USHMEM_IPC=0 FI_PROVIDER=shm), must still pass:
# ushmem names its region with a random part nobody can predict.
set -u

fail() { echo "shm_squat.sh: $*" >&2; exit 1; }
[ $# -ge 3 ] || fail "usage: shm_squat.sh OSHRUN NPES PROGRAM..."
oshrun=$1 npes=$2
shift 2

uid=$(id -u)
last=$(cat /proc/sys/kernel/ns_last_pid) || fail "cannot read /proc/sys/kernel/ns_last_pid"
max=$(cat /proc/sys/kernel/pid_max)
squatted=()
# Enough pids to cover what oshrun and the PEs fork on a busy machine.
for ((i = 1; i <= 4000; i++)); do
    pid=$(( (last + i) % max ))
    [ "$pid" -lt 300 ] && continue
    for index in 0 1; do
        f=/dev/shm/$pid:$uid:$index
        [ -e "$f" ] || squatted+=("$f")
    done
done
trap 'rm -f "${squatted[@]}"' EXIT
# A page of zeros: no region of the provider's version and no live owner.
truncate -s 4096 "${squatted[@]}" || fail "cannot create the squatting files"
echo "shm_squat.sh: squatting ${#squatted[@]} names after pids $((last + 1)) and up"

out=$(USHMEM_IPC=0 FI_PROVIDER=shm "$oshrun" --timeout 60 -n "$npes" "$@" 2>&1)
code=$?
printf '%s\n' "$out"
[ "$code" -eq 0 ] || fail "the job failed (exit status $code) with the pid names taken"
# oshrun's sweep of files named after its PEs' pids removes the squatted
# ones it finds: the names the PEs would have had were taken.
if ! printf '%s\n' "$out" | grep -Eq "^oshrun: removed /dev/shm/[0-9]+:$uid:0,"; then
    echo "shm_squat.sh: no PE's pid was among the squatted names; nothing was proved" >&2
    exit 77
fi
exit 0
