#!/usr/bin/env bash
# uid_test.sh CASE PROG [STRANGER]
#
# Starts a job the way a plain shell script does, without oshrun or mpirun:
# one process per PE, PE 0's unique id passed to the others through a file
# in a private directory (mktemp -d, removed at the end). PROG is uid_job
# (uid_job.c says what each mode does), STRANGER uid_stranger. Each case
# checks every PE's exit code and message, and that the job ends in time
# (a PE still running at its deadline is a hang: killed, and the case fails).
set -u
case_=$1
prog=$2
stranger=${3:-}

dir=$(mktemp -d) || exit 99
pids=()
extra_pids=()
# Kills only processes not yet reaped (a reaped pid may belong to another
# process by now): the PEs finish did not wait for, and the helpers.
cleanup() {
    for r in "${!pids[@]}"; do
        [ -z "${codes[$r]:-}" ] && kill -9 "${pids[$r]}" 2>/dev/null
    done
    for p in "${extra_pids[@]}"; do
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT
idfile=$dir/id
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-16M}
failed=0

fail() {
    echo "uid_test.sh $case_: FAIL: $*" >&2
    failed=1
}

# start RANK NPES [MODE] [VAR=VALUE...]
start() {
    local rank=$1 npes=$2 mode=${3:-work}
    shift 3 2>/dev/null || shift $#
    env "$@" "$prog" "$rank" "$npes" "$idfile" "$mode" >"$dir/out.$rank" 2>&1 &
    pids[$rank]=$!
}

# Waits for every PE, at most LIMIT seconds in all; fills codes[rank].
finish() {
    local limit=$1 start_s=$SECONDS
    while :; do
        local running=0
        for r in "${!pids[@]}"; do
            [ -n "${codes[$r]:-}" ] && continue
            # Ended: gone, or a zombie that only wait reaps.
            local state
            state=$(awk '{print $3}' "/proc/${pids[$r]}/stat" 2>/dev/null)
            if [ -z "$state" ] || [ "$state" = Z ]; then
                wait "${pids[$r]}"
                codes[$r]=$?
            else
                running=1
            fi
        done
        [ $running -eq 0 ] && break
        if [ $((SECONDS - start_s)) -ge "$limit" ]; then
            for r in "${!pids[@]}"; do
                if [ -z "${codes[$r]:-}" ]; then
                    fail "PE $r still running after $limit s: a hang"
                    kill -9 "${pids[$r]}" 2>/dev/null
                    wait "${pids[$r]}" 2>/dev/null
                    codes[$r]=hung
                fi
            done
            break
        fi
        sleep 0.05
    done
    for r in "${!pids[@]}"; do
        echo "--- PE $r (exit ${codes[$r]}):"
        cat "$dir/out.$r"
    done
}

expect_code() { # RANK CODE
    [ "${codes[$1]}" = "$2" ] || fail "PE $1 exited ${codes[$1]}, not $2"
}

expect_out() { # RANK REGEX
    grep -Eq -- "$2" "$dir/out.$1" || fail "PE $1's output does not match /$2/"
}

expect_elapsed_below() { # SECONDS START
    local took=$((SECONDS - $2))
    [ "$took" -lt "$1" ] || fail "took $took s, not under $1 s"
}

wait_for_id() {
    for _ in $(seq 1 600); do
        [ -s "$idfile" ] && return 0
        sleep 0.05
    done
    fail "PE 0 wrote no id"
    return 1
}

# A job of N PEs, PE 0 first as a script would start it.
job() { # NPES MODE
    local n=$1 mode=$2
    start 0 "$n" "$mode"
    for r in $(seq 1 $((n - 1))); do
        start "$r" "$n" "$mode"
    done
}

call='ushmemx_init_uniqueid'
case $case_ in
job-*)
    n=${case_#job-}
    job "$n" work
    finish 45
    for r in $(seq 0 $((n - 1))); do
        expect_code "$r" 0
        expect_out "$r" "uid_job: PE $r of $n passed \\(work\\)"
    done
    ;;
simnodes)
    # Two simulated hosts (USHMEM_SIM_NODES): the PEs of the other one are
    # reached over libfabric (tcp), whose addresses cross the bootstrap;
    # and every way of initialising again, a new id included.
    export USHMEM_SIM_NODES=2 FI_PROVIDER=tcp
    job 4 reinit
    finish 45
    for r in 0 1 2 3; do
        expect_code "$r" 0
        expect_out "$r" "uid_job: PE $r of 4 passed \\(reinit\\)"
    done
    ;;
addr-*)
    # USHMEM_BOOTSTRAP_UID_ADDR as an interface and as an address.
    export USHMEM_BOOTSTRAP_UID_ADDR=${case_#addr-}
    job 2 work
    finish 45
    for r in 0 1; do expect_code "$r" 0; done
    ;;
reinit)
    job 3 reinit
    finish 45
    for r in 0 1 2; do
        expect_code "$r" 0
        expect_out "$r" "uid_job: PE $r of 3 passed \\(reinit\\)"
    done
    ;;
stranger)
    # Another user connects to PE 0's port during the rendezvous: silent,
    # garbage, a wrong secret, half a hello, a flood. The job starts at
    # once all the same (the silent ones are dropped only after 5 s).
    t0=$SECONDS
    start 0 4 work
    wait_for_id || exit 1
    family=$(od -An -tu1 -j8 -N1 "$idfile" | tr -d ' ')
    read -r p1 p2 < <(od -An -tu1 -j10 -N2 "$idfile")
    addr=$(od -An -tu1 -j12 -N4 "$idfile" | awk '{print $1"."$2"."$3"."$4}')
    [ "$family" = 4 ] || { echo "uid_test.sh: PE 0 listens on IPv6; skipped"; exit 77; }
    "$stranger" "$addr" $((p1 * 256 + p2)) >"$dir/stranger" 2>&1 &
    extra_pids+=($!)
    for _ in $(seq 1 200); do
        grep -q ready "$dir/stranger" && break
        sleep 0.05
    done
    cat "$dir/stranger"
    grep -q ready "$dir/stranger" || fail "the stranger did not get ready"
    for r in 1 2 3; do start "$r" 4 work; done
    finish 30
    for r in 0 1 2 3; do
        expect_code "$r" 0
        expect_out "$r" "uid_job: PE $r of 4 passed"
    done
    expect_out 0 "WARN: $call: refused a connection from [0-9.]+:[0-9]+ to the bootstrap's port"
    expect_elapsed_below 5 "$t0"
    ;;
global-exit-*)
    # A PE calls shmem_global_exit(3) while the others wait in a barrier.
    victim=${case_#global-exit-}
    t0=$SECONDS
    job 4 "global-exit-$victim"
    finish 20
    for r in 0 1 2 3; do
        expect_code "$r" 3
        [ "$r" = "$victim" ] ||
            expect_out "$r" "ERROR: PE $victim ended the job: shmem_global_exit \\(exit code 3\\); ending this PE"
    done
    expect_elapsed_below 6 "$t0"
    ;;
kill-*)
    # A PE dies (SIGKILL) while the others wait for it in a barrier.
    victim=${case_#kill-}
    t0=$SECONDS
    job 4 "kill-$victim"
    finish 20
    for r in 0 1 2 3; do
        if [ "$r" = "$victim" ]; then
            expect_code "$r" 137
        else
            expect_code "$r" 1
            if [ "$victim" = 0 ]; then
                expect_out "$r" "ERROR: PE 0 \\(the bootstrap's root, at [^)]*\\) ended without shmem_finalize: the connection to it (closed|failed \\(.*\\)); ending this PE"
            else
                expect_out "$r" "ERROR: PE $victim \\(pid [0-9]+ on [^)]*\\) ended without shmem_finalize: its connection to PE 0 (closed|failed \\(.*\\)) \\(exit code 1\\); ending this PE"
            fi
        fi
    done
    expect_elapsed_below 6 "$t0"
    ;;
exit-early)
    # A PE exits with an error without shmem_finalize.
    job 3 exit-1
    finish 20
    expect_code 1 5
    for r in 0 2; do
        expect_code "$r" 1
        expect_out "$r" "PE 1 \\(pid [0-9]+ on [^)]*\\) ended without shmem_finalize"
    done
    ;;
bad-rank)
    "$prog" 4 4 "$idfile" make >"$dir/out.0" 2>&1 &
    pids[0]=$!
    finish 10
    expect_code 0 2
    expect_out 0 "ERROR: $call: rank 4 is out of range: npes is 4, so ranks are 0 to 3$"
    ;;
bad-npes)
    "$prog" 0 0 "$idfile" >"$dir/out.0" 2>&1 &
    pids[0]=$!
    finish 10
    expect_code 0 2
    expect_out 0 "ERROR: $call: PE 0 passed npes 0: a job has at least one PE$"
    ;;
null-id)
    start 0 1 null-id
    finish 10
    expect_code 0 2
    expect_out 0 "\\[PE 0\\] ERROR: $call: PE 0 passed a NULL unique id$"
    ;;
empty-id)
    start 1 2 empty-id
    finish 10
    expect_code 1 2
    expect_out 1 "\\[PE 1\\] ERROR: $call: PE 1 passed an empty unique id: it was initialised but never filled by ushmemx_get_uniqueid"
    ;;
bad-version)
    start 0 1 bad-version
    finish 10
    expect_code 0 2
    expect_out 0 "ERROR: $call: PE 0 passed a unique id of version 77, not 1: it was not made by this library's ushmemx_get_uniqueid"
    ;;
bad-bytes)
    start 0 1 bad-bytes
    finish 10
    expect_code 0 2
    expect_out 0 "ERROR: $call: PE 0 passed a unique id whose check bytes do not match"
    ;;
bad-addr)
    start 0 1 work USHMEM_BOOTSTRAP_UID_ADDR=nosuchif0
    finish 10
    expect_code 0 2
    expect_out 0 "ERROR: ushmemx_get_uniqueid: USHMEM_BOOTSTRAP_UID_ADDR=nosuchif0 is neither an IP address nor a network interface of this host"
    ;;
npes-differ)
    # PE 2 says 4 PEs, the others 3: every PE fails, promptly.
    t0=$SECONDS
    start 0 3 work
    start 1 3 work
    start 2 4 work
    finish 20
    for r in 0 1 2; do expect_code "$r" 2; done
    expect_out 0 "\\[PE 0\\] ERROR: $call: PE 2 \\(pid [0-9]+ on [^)]*\\) passed npes 4, but PE 0 passed 3: every PE must pass the same number of PEs"
    expect_out 2 "\\[PE 2\\] ERROR: $call: PE 2: the job did not start: PE 2 \\(pid [0-9]+ on [^)]*\\) passed npes 4, but PE 0 passed 3"
    expect_out 1 "\\[PE 1\\] ERROR: $call: PE 1(: the job did not start: PE 2 .* passed npes 4| cannot reach PE 0 at .*: nothing listens there)"
    expect_elapsed_below 10 "$t0"
    ;;
rank-twice)
    # Two processes pass rank 1; PE 2 comes last, so the job cannot have
    # started before the second one.
    start 0 3 work
    start 1 3 work
    "$prog" 1 3 "$idfile" work >"$dir/out.3" 2>&1 &
    pids[3]=$!
    sleep 0.5
    start 2 3 work
    finish 20
    for r in 0 1 2 3; do expect_code "$r" 2; done
    expect_out 0 "ERROR: $call: two processes passed rank 1: pid [0-9]+ on .* and pid [0-9]+ on"
    ;;
rank0-not-maker)
    # A second process passes rank 0 without having made the id: it fails at
    # once; PE 0 waits USHMEM_BOOTSTRAP_TIMEOUT for PE 1, then names it.
    export USHMEM_BOOTSTRAP_TIMEOUT=1
    start 0 2 work
    wait_for_id
    "$prog" 0 2 "$idfile" read >"$dir/out.1" 2>&1 &
    pids[1]=$!
    finish 20
    expect_code 0 2
    expect_code 1 2
    expect_out 1 "ERROR: $call: PE 0: rank 0 belongs to the process that made the unique id with ushmemx_get_uniqueid \\(pid [0-9]+ on [^)]*\\), but this process \\(pid [0-9]+\\) did not make it"
    expect_out 0 "ERROR: $call: PE 0 waited 1 s \\(USHMEM_BOOTSTRAP_TIMEOUT\\) at [^ ]+ for the job's 2 PEs, but only 1 joined: PE 1 never came"
    ;;
maker-not-rank0)
    start 1 2 make
    wait_for_id
    start 0 2 read
    finish 20
    expect_code 0 2
    expect_code 1 2
    expect_out 1 "ERROR: $call: PE 1: this process made the unique id with ushmemx_get_uniqueid, so it is PE 0 and must pass rank 0, not 1"
    ;;
root-silent)
    # PE 0 made the id but never calls ushmemx_init_uniqueid: PE 1 names
    # what it waited for after USHMEM_BOOTSTRAP_TIMEOUT (and 2 s of grace).
    export USHMEM_BOOTSTRAP_TIMEOUT=1
    "$prog" 0 2 "$idfile" make-only >"$dir/maker" 2>&1 &
    extra_pids+=($!)
    wait_for_id
    start 1 2 work
    finish 20
    expect_code 1 2
    expect_out 1 "ERROR: $call: PE 1 waited 1 s \\(USHMEM_BOOTSTRAP_TIMEOUT\\) for the job to start: it reached PE 0 at [^ ]+, which did not answer"
    ;;
*)
    echo "uid_test.sh: unknown case $case_" >&2
    exit 99
    ;;
esac
[ $failed -eq 0 ] && echo "uid_test.sh $case_: ok"
exit $failed
