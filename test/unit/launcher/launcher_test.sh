#!/usr/bin/env bash
# launcher_test.sh CASE OSHRUN LAUNCHER_PE [ARGS...]
# One behaviour of oshrun that users rely on: exit codes, ending a failed or
# hung job without leftover processes or files, signal forwarding, argument
# passing, usage errors, the mpirun hand-off and the compiler wrappers.
# Exit 0: pass, 1: fail, 77: skip.
set -u
case_name=$1
oshrun=$2
pe=$3
shift 3

scratch=$(mktemp -d "${TMPDIR:-/tmp}/launcher-test.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
# oshrun keeps its PMIx files under $TMPDIR: point it here to see what is left.
export TMPDIR=$scratch/tmp
export LAUNCHER_TEST_DIR=$scratch
mkdir "$TMPDIR"
# These cases time oshrun's own timeouts: a scale set for slow runs (the
# sanitizer run's) applies only where a case sets it.
unset OSHRUN_TIMEOUT_SCALE

fail() {
    echo "FAIL ($case_name): $*" >&2
    [ -f "$scratch/err" ] && sed 's/^/  stderr: /' "$scratch/err" >&2
    exit 1
}

now_ms() { date +%s%3N; }

# run ARGS...: runs oshrun in the foreground; sets code and elapsed (ms).
run() {
    local start
    start=$(now_ms)
    "$oshrun" "$@" >"$scratch/out" 2>"$scratch/err"
    code=$?
    elapsed=$(($(now_ms) - start))
}

expect_code() {
    [ "$code" -eq "$1" ] || fail "exit code $code, wanted $1"
}

expect_err() {
    grep -Eq -- "$1" "$scratch/err" || fail "stderr does not match /$1/"
}

expect_faster_than() {
    [ "$elapsed" -lt "$1" ] || fail "took $elapsed ms, wanted under $1 ms"
}

# Every PE that wrote its pid must be gone, and oshrun's PMIx directory too.
expect_no_leftovers() {
    local f p
    for f in "$scratch"/pid.*; do
        [ -e "$f" ] || continue
        p=$(cat "$f")
        if kill -0 "$p" 2>/dev/null; then
            kill -9 "$p" 2>/dev/null
            fail "PE ${f##*.} (pid $p) still runs after oshrun exited"
        fi
    done
    [ -z "$(ls -A "$TMPDIR")" ] || fail "left in TMPDIR: $(ls -A "$TMPDIR")"
}

expect_pes_started() {
    local n
    n=$(ls "$scratch" | grep -c '^pid\.')
    [ "$n" -eq "$1" ] || fail "$n PEs started, wanted $1"
}

# start_bg N ARGS...: starts oshrun in the background and waits until all N
# PEs are ready; sets bg. Job control is on so that the background oshrun does
# not inherit SIGINT ignored, as a non-interactive shell would arrange.
start_bg() {
    local n=$1 i
    shift
    set -m
    "$oshrun" "$@" >"$scratch/out" 2>"$scratch/err" &
    bg=$!
    set +m
    for i in $(seq 200); do
        [ "$(ls "$scratch" | grep -c '^ready\.')" -eq "$n" ] && return 0
        sleep 0.05
    done
    kill -9 "$bg"
    fail "PEs not ready after 10 s"
}

# wait_bg: waits up to 10 s for the background oshrun; sets code.
wait_bg() {
    local i
    for i in $(seq 200); do
        kill -0 "$bg" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$bg" 2>/dev/null; then
        kill -9 "$bg"
        fail "oshrun still runs 10 s later"
    fi
    wait "$bg"
    code=$?
}

# listen_port PID: the TCP port process PID listens on (oshrun's PMIx server).
listen_port() {
    local ino l st inode
    for ino in $(find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n'); do
        while read -r _ l _ st _ _ _ _ _ inode _; do
            [ "$st" = 0A ] && [ "$inode" = "$ino" ] && echo $((16#${l#*:}))
        done </proc/net/tcp
    done
}

# pe_nspace: the PMIx namespace PE 0 was given, from its environment.
pe_nspace() {
    tr '\0' '\n' <"/proc/$(cat "$scratch/pid.0")/environ" | sed -n 's/^PMIX_NAMESPACE=//p'
}

# stranger_run ARGS...: runs pmix_stranger (the case's first argument) in the
# background against the background oshrun and waits until it has made its
# attempts to join the job (and holds its silent connection, if asked to).
stranger_run() {
    local i
    timeout 150 "$stranger" "$@" "$bg" "$port" >"$scratch/stranger" 2>"$scratch/stranger.err" &
    st=$!
    for i in $(seq 2400); do
        grep -q '^holding\|^silent connection failed' "$scratch/stranger" && return 0
        kill -0 "$st" 2>/dev/null || return 0
        sleep 0.05
    done
    fail "pmix_stranger still tries after 120 s"
}

case $case_name in
check) # check N: a job of N PEs sees the right size, ranks and data
    n=$1
    run -n "$n" "$pe" check "$n"
    expect_code 0
    expect_pes_started "$n"
    expect_no_leftovers
    ;;
exit-code) # one PE exits 3: the others are ended and oshrun exits 3
    run -n 4 "$pe" exit 1 3
    expect_code 3
    expect_err '^oshrun: PE 1 .*exited with status 3'
    [ "$(grep -c '^oshrun:' "$scratch/err")" -eq 1 ] || fail "more than one line from oshrun"
    expect_faster_than 2000
    expect_no_leftovers
    ;;
stubborn) # PEs that ignore SIGTERM are killed 3 s later (KILL_GRACE_MS)
    run -n 3 "$pe" stubborn 0 5
    expect_code 5
    expect_err '^oshrun: PE 0 .*exited with status 5'
    [ "$elapsed" -ge 2900 ] || fail "took $elapsed ms: no grace period before SIGKILL"
    expect_faster_than 6000
    expect_no_leftovers
    ;;
stuck) # once the job is ending, PEs that ignore SIGTERM and spin, or block
    # it and wait in a fence that never completes, are killed within seconds
    for mode in spin fence; do
        rm -f "$scratch"/pid.* "$scratch"/ready.*
        run -n 3 "$pe" "$mode" 0 1
        expect_code 1
        expect_err '^oshrun: PE 0 .*exited with status 1; ending the job'
        expect_faster_than 10000
        expect_no_leftovers
    done
    ;;
traced) # a PE that SIGKILL cannot end at once (held under ptrace, as by a
    # debugger) must not keep oshrun: it gives up on it and exits 1
    run -n 3 "$pe" traced 0 1
    for f in "$scratch"/tracer.*; do
        [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
    done
    compgen -G "$scratch/untraceable.*" >/dev/null && exit 77
    expect_code 1
    expect_faster_than 10000
    expect_err '^oshrun: PE 0 .*exited with status 1; ending the job'
    expect_err '^oshrun: PE [12] \(pid [0-9]+\) has not exited [0-9]+ ms after SIGKILL'
    # With their tracers gone the PEs are released; a zombie is not running.
    sleep 0.5
    for f in "$scratch"/pid.*; do
        p=$(cat "$f")
        state=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
        [ -z "$state" ] || [ "$state" = Z ] || fail "PE ${f##*.} (pid $p) still runs ($state)"
    done
    [ -z "$(ls -A "$TMPDIR")" ] || fail "left in TMPDIR: $(ls -A "$TMPDIR")"
    ;;
bind) # each PE is bound to its own CPU of oshrun's mask, round robin;
    # --bind-to none and OSHRUN_BIND=none leave them oshrun's whole mask
    unset OSHRUN_BIND
    # cpus_of R: the CPU list PE R printed ("0,1"), from the last run
    cpus_of() { sed -n "s/^$1://p" "$scratch/out"; }
    OSHRUN_BIND=none run -n 1 "$pe" affinity
    expect_code 0
    mask=$(cpus_of 0)
    IFS=, read -r -a allowed <<<"$mask"
    [ "${#allowed[@]}" -ge 1 ] || fail "no CPU in oshrun's mask: $(cat "$scratch/out")"
    # bind_run ENV OPTIONS N: OSHRUN_BIND=ENV oshrun OPTIONS -n N PE affinity
    bind_run() {
        # shellcheck disable=SC2086 # OPTIONS split on purpose
        OSHRUN_BIND=$1 run $2 -n "$3" "$pe" affinity
        expect_code 0
    }
    for n in 2 3; do
        for how in ":" ":--bind-to core" "core:" "none:--bind-to core"; do
            bind_run "${how%%:*}" "${how#*:}" "$n"
            seen=" "
            for r in $(seq 0 $((n - 1))); do
                want=${allowed[$((r % ${#allowed[@]}))]}
                [ "$(cpus_of "$r")" = "$want" ] ||
                    fail "'$how' -n $n: PE $r may run on CPUs '$(cpus_of "$r")', wanted $want only"
                case $seen in
                *" $want "*) [ "$n" -gt "${#allowed[@]}" ] || fail "'$how': two PEs on CPU $want" ;;
                esac
                seen="$seen$want "
            done
        done
        for how in ":--bind-to none" ":--bind-to=none" "none:" "core:--bind-to none"; do
            bind_run "${how%%:*}" "${how#*:}" "$n"
            for r in $(seq 0 $((n - 1))); do
                [ "$(cpus_of "$r")" = "$mask" ] ||
                    fail "'$how' -n $n: PE $r may run on CPUs '$(cpus_of "$r")', wanted $mask"
            done
        done
    done
    # oshrun's own mask, not the machine's, is what the PEs share.
    if command -v taskset >/dev/null && [ "${#allowed[@]}" -ge 2 ]; then
        last=${allowed[$((${#allowed[@]} - 1))]}
        taskset -c "$last" "$oshrun" -n 2 "$pe" affinity >"$scratch/out" 2>"$scratch/err"
        [ "$(cpus_of 0),$(cpus_of 1)" = "$last,$last" ] ||
            fail "under taskset -c $last: $(cat "$scratch/out")"
        # Bound PEs are told the CPUs oshrun was given, where their helper
        # threads stay; a value the user set is kept.
        taskset -c "$last" "$oshrun" -n 1 sh -c 'echo "given:$USHMEM_HELPER_CPUS"' \
            >"$scratch/out" 2>"$scratch/err"
        [ "$(cpus_of given)" = "$last" ] ||
            fail "USHMEM_HELPER_CPUS under taskset -c $last: $(cat "$scratch/out")"
        USHMEM_HELPER_CPUS=7-9 "$oshrun" -n 1 sh -c 'echo "given:$USHMEM_HELPER_CPUS"' \
            >"$scratch/out" 2>"$scratch/err"
        [ "$(cpus_of given)" = "7-9" ] || fail "USHMEM_HELPER_CPUS=7-9 not kept: $(cat "$scratch/out")"
    fi
    OSHRUN_BIND=none "$oshrun" -n 1 sh -c 'echo "given:${USHMEM_HELPER_CPUS-unset}"' \
        >"$scratch/out" 2>"$scratch/err"
    [ "$(cpus_of given)" = "unset" ] || fail "unbound PEs were told CPUs: $(cat "$scratch/out")"
    rm -f "$scratch"/pid.* "$scratch"/ready.*
    run --bind-to socket -n 2 "$pe" affinity
    expect_code 2
    OSHRUN_BIND=bogus run -n 2 "$pe" affinity
    expect_code 2
    expect_pes_started 0
    ;;
signal) # a PE killed by a signal: 128 + signal
    run -n 4 "$pe" signal 2 9
    expect_code 137
    expect_err '^oshrun: PE 2 .*signal 9'
    expect_faster_than 2000
    expect_no_leftovers
    ;;
abort) # PMIx_Abort ends the job with its status and message
    run -n 4 "$pe" abort 3 6
    expect_code 6
    expect_err '^oshrun: PE 3 called abort with status 6: launcher test abort'
    expect_faster_than 2000
    expect_no_leftovers
    ;;
early-exit) # a PE that exits 0 without finalizing ends the job: its peers would wait forever
    run -n 3 "$pe" early 1
    expect_code 1
    expect_err '^oshrun: PE 1 \(pid [0-9]+\) exited with status 0 without calling shmem_finalize'
    expect_faster_than 2000
    expect_no_leftovers
    ;;
noinit) # a PE that exits 0 before joining the job (a program that returns
    # before shmem_init on some ranks) while the others wait in shmem_init
    # ends the job, whether it leaves before or after they join; where no PE
    # joins (no OpenSHMEM program) every PE may exit 0
    for delay in 0 300 1000; do
        case_name="noinit, PE 1 leaving after $delay ms"
        rm -f "$scratch"/pid.* "$scratch"/ready.*
        run --timeout 20 -n 3 "$pe" noinit 1 "$delay"
        expect_code 1
        expect_err '^oshrun: PE 1 \(pid [0-9]+\) exited with status 0 before calling shmem_init, while PE [02] waits in it; its peers would wait for it forever'
        [ "$(grep -c '^oshrun:' "$scratch/err")" -eq 1 ] || fail "more than one line from oshrun"
        expect_faster_than $((delay + 3000))
        expect_no_leftovers
    done
    case_name=noinit
    run --timeout 20 -n 3 true
    expect_code 0
    [ ! -s "$scratch/err" ] || fail "a job of PEs that never join said something"
    ;;
timeout) # --timeout ends a hung job, naming the PEs still running
    run --timeout 1 -n 4 "$pe" hang 2
    expect_code 124
    expect_err '^oshrun: timeout after 1 s; PEs still running: 0,1,3'
    [ "$elapsed" -ge 1000 ] || fail "ended after $elapsed ms, before the timeout"
    expect_faster_than 4000
    expect_no_leftovers
    ;;
timeout-scale) # OSHRUN_TIMEOUT_SCALE multiplies --timeout; a bad factor is refused
    OSHRUN_TIMEOUT_SCALE=2.5 run --timeout 1 -n 2 "$pe" hang 1
    expect_code 124
    expect_err '^oshrun: timeout after 2.5 s; PEs still running: 0'
    [ "$elapsed" -ge 2500 ] || fail "ended after $elapsed ms, before the scaled timeout"
    expect_faster_than 6000
    expect_no_leftovers
    for bad in 0 -1 abc 2x 1e9; do
        OSHRUN_TIMEOUT_SCALE=$bad run --timeout 1 -n 1 "$pe" exit 0
        expect_code 2
        expect_err "^oshrun: invalid OSHRUN_TIMEOUT_SCALE '$bad'"
    done
    ;;
unknown-var) # an OSHRUN_ variable oshrun does not read (a typo) is said, with
    # the name it nearly spells; the known ones and other prefixes are not
    OSHRUN_TIMEOUT_SCAL=2 OSHRUN_BIND=none OSHRUN_DEBUG=0 OSHRUN_TIMEOUT_SCALE=1 OSHRUNX=1 \
        run -n 2 "$pe" check 2
    expect_code 0
    expect_err '^oshrun: warning: unknown variable OSHRUN_TIMEOUT_SCAL is ignored; did you mean OSHRUN_TIMEOUT_SCALE\? \(oshrun --help lists the known ones\)$'
    [ "$(grep -c '^oshrun:' "$scratch/err")" -eq 1 ] || fail "not one line from oshrun"
    OSHRUN_NO_SUCH_THING=1 run --launcher mpirun -n 1 "$pe" check 1
    expect_err '^oshrun: warning: unknown variable OSHRUN_NO_SUCH_THING is ignored \(oshrun --help lists the known ones\)$'
    ;;
fence-teardown) # fence-teardown [N]: the job ends (--timeout) while 3 of 4 PEs
    # wait in a PMIx fence that PE 1 never joins; libpmix 4.2 then often
    # hangs in PMIx_server_finalize, or crashes there. oshrun still exits 124
    # within seconds and leaves nothing behind, N times in a row (default 8)
    n=${1:-8}
    reached=0
    # oshrun's own crash handler is under test here: in a build with
    # AddressSanitizer, oshrun leaves SIGSEGV and SIGBUS to it unless it
    # is told not to handle them, and a crash in libpmix would be its report.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0"
    for i in $(seq "$n"); do
        case_name="fence-teardown, run $i of $n"
        rm -f "$scratch"/pid.* "$scratch"/ready.*
        start=$(now_ms)
        # A hung oshrun is killed (137) rather than holding the test.
        timeout -s KILL 30 "$oshrun" --timeout 2 -n 4 "$pe" fencewait 1 \
            >"$scratch/out" 2>"$scratch/err"
        code=$?
        elapsed=$(($(now_ms) - start))
        expect_code 124
        expect_err '^oshrun: timeout after 2 s'
        expect_faster_than 12000
        expect_no_leftovers
        # Every PE passed the first fence: the others were in the second.
        [ "$(ls "$scratch" | grep -c '^ready\.')" -eq 4 ] && reached=$((reached + 1))
    done
    case_name=fence-teardown
    # A machine too busy to start the PEs within 2 s tests nothing here.
    [ "$reached" -ge $(((n + 1) / 2)) ] ||
        fail "only $reached of $n jobs got their PEs into the fence before the timeout"
    ;;
pmix-stranger) # pmix-stranger STRANGER: another user (uid 65534) connects to
    # oshrun's PMIx server claiming oshrun's uid, names the job's namespace
    # (as if it had leaked) and those it could derive, to join the job and
    # abort it, then holds a connection that never speaks; the job still
    # finishes with 0 once the PEs go on, and oshrun exits at once
    stranger=$1
    [ "$(id -u)" -eq 0 ] || exit 77 # a second uid needs root; pmix-guess runs anywhere
    start_bg 2 --timeout 60 -n 2 "$pe" waitgo
    port=$(listen_port "$bg")
    [ -n "$port" ] || fail "no listening TCP socket of oshrun (pid $bg) in /proc/net/tcp"
    stranger_run --uid 65534 --claim-uid "$(id -u):$(id -g)" --nspace "$(pe_nspace)" --silent 60
    touch "$scratch/go"
    wait_bg
    kill "$st" 2>/dev/null
    wait "$st" 2>/dev/null
    ! grep '^joined' "$scratch/stranger" || fail "the stranger joined the job"
    grep -q '^holding' "$scratch/stranger" || fail "the stranger did not get to connect"
    expect_code 0
    expect_err '^oshrun: refused a connection to the PMIx server from uid 65534'
    expect_no_leftovers
    ;;
pmix-guess) # pmix-guess STRANGER: a process that knows only what every user
    # sees (oshrun's pid and start time) and claims the job's uid, as PMIx
    # over TCP lets anyone do, cannot name the job's namespace: it is a
    # random token. Run as oshrun's own user, so only the name protects the
    # job (another uid is refused before any name is read: pmix-stranger)
    stranger=$1
    start_bg 2 --timeout 60 -n 2 "$pe" waitgo
    port=$(listen_port "$bg")
    [ -n "$port" ] || fail "no listening TCP socket of oshrun (pid $bg) in /proc/net/tcp"
    ns=$(pe_nspace)
    stranger_run
    touch "$scratch/go"
    wait_bg
    ! grep '^joined' "$scratch/stranger" || fail "the stranger joined the job"
    grep -Eqx 'oshrun\.[0-9a-f]{32}' <<<"$ns" || fail "namespace '$ns' is no random token"
    [ "$(grep -c '^refused' "$scratch/stranger")" -ge 10 ] ||
        fail "the stranger made too few attempts: $(cat "$scratch/stranger")"
    expect_code 0
    expect_no_leftovers
    ;;
sigterm-forward) # SIGTERM reaches every PE; PEs that exit 0 on it: exit 0
    start_bg 4 -n 4 "$pe" term
    kill -TERM "$bg"
    wait_bg
    expect_code 0
    [ "$(ls "$scratch" | grep -c '^term\.')" -eq 4 ] || fail "not every PE got SIGTERM"
    expect_no_leftovers
    ;;
sigterm) # PEs that die of a forwarded SIGTERM: exit 143
    start_bg 3 -n 3 "$pe" hang
    kill -TERM "$bg"
    wait_bg
    expect_code 143
    expect_err 'signal 15'
    expect_no_leftovers
    ;;
sigint) # Ctrl-C: exit 130
    start_bg 2 -n 2 "$pe" hang
    kill -INT "$bg"
    wait_bg
    expect_code 130
    expect_no_leftovers
    ;;
args) # arguments reach every PE unchanged, options after the program too
    run -n 2 "$pe" args 'a b' '' 'c$d*' -n 5 --timeout
    expect_code 0
    want='[a b][][c$d*][-n][5][--timeout]'
    [ "$(grep -cxF "0:$want" "$scratch/out")" -eq 1 ] || fail "PE 0 printed: $(cat "$scratch/out")"
    [ "$(grep -cxF "1:$want" "$scratch/out")" -eq 1 ] || fail "PE 1 printed: $(cat "$scratch/out")"
    ;;
identity) # identity USHMEM_INFO: oshrun and ushmem_info say they are ushmem's
    # (Open MPI installs an oshrun, oshcc, oshc++ and oshcxx of its own), and
    # oshcxx is installed beside oshc++
    run --version
    expect_code 0
    grep -Eqx 'oshrun \(ushmem\) [0-9][0-9.]*' "$scratch/out" || fail "oshrun --version: $(cat "$scratch/out")"
    run -V
    grep -Eqx 'oshrun \(ushmem\) [0-9][0-9.]*' "$scratch/out" || fail "oshrun -V: $(cat "$scratch/out")"
    "$1" >"$scratch/out" 2>&1 || fail "ushmem_info failed"
    grep -q '^Commands: oshcc, oshc++, oshcxx, oshnvcc and oshrun in .*naming ushmem' "$scratch/out" ||
        fail "ushmem_info does not say which commands are ushmem's"
    for w in oshcc oshc++ oshcxx; do
        [ -x "$(dirname "$oshrun")/$w" ] || fail "no $w beside oshrun"
    done
    ;;
usage) # bad usage: one line on stderr, exit 2, nothing started
    for bad in "" "-n" "-n 0" "-n abc" "-n -3" "-np 2x" "--timeout 0" "--timeout x" \
        "--bogus" "--launcher nosuch"; do
        # shellcheck disable=SC2086 # the cases are meant to split
        if [ -n "$bad" ]; then run $bad "$pe" check 1; else run; fi
        expect_code 2
        [ "$(wc -l <"$scratch/err")" -eq 1 ] || fail "'$bad': not one line of error"
        expect_pes_started 0
    done
    run --help
    expect_code 0
    grep -q '^usage: oshrun' "$scratch/out" || fail "--help prints no usage"
    expect_no_leftovers
    ;;
not-found) # a program that does not exist: 127, named in the message
    run -n 2 "$scratch/no-such-program"
    expect_code 127
    expect_err "no-such-program: No such file"
    run -n 2 no-such-program-in-path
    expect_code 127
    expect_err "no-such-program-in-path: command not found"
    expect_no_leftovers
    ;;
directory) # a directory: 126, and the message says so (exec says EACCES)
    mkdir "$scratch/a-directory"
    run -n 2 "$scratch/a-directory"
    expect_code 126
    expect_err "^oshrun: cannot run $scratch/a-directory: Is a directory\$"
    expect_no_leftovers
    ;;
bad-interpreter) # a script whose #! interpreter is missing: 127, naming both
    printf '#!/no/such/interpreter -e\necho never\n' >"$scratch/script"
    chmod +x "$scratch/script"
    run -n 2 "$scratch/script"
    expect_code 127
    expect_err "^oshrun: cannot run $scratch/script: the file exists, but its interpreter /no/such/interpreter \(its #! line\) was not found\$"
    expect_no_leftovers
    ;;
mpirun) # the hand-off to mpirun runs the same job under Open MPI
    command -v mpirun >/dev/null || exit 77
    export LAUNCHER_TEST_VAR=passed
    run --launcher mpirun -x LAUNCHER_TEST_VAR -n 2 --bind-to none "$pe" check 2
    expect_code 0
    expect_pes_started 2
    run --launcher mpirun -n 2 "$pe" exit 1 3
    [ "$code" -ne 0 ] || fail "a failing PE under mpirun gave exit 0"
    ;;
oshcc) # oshcc WRAPPER LIBRARY SOURCE INCDIR: build and run a program
    wrapper=$1
    # oshnvcc needs the CUDA toolkit; it builds the same C program.
    case $wrapper in */oshnvcc) command -v "${NVCC:-nvcc}" >/dev/null || exit 77 ;; esac
    export OSHCC_LIBDIR
    OSHCC_LIBDIR=$(dirname "$2")
    export OSHCC_INCDIR=$4
    [ "$("$wrapper" --showme -o x x.c)" != "" ] || fail "--showme printed nothing"
    # MPICH's spelling of --showme
    [ "$("$wrapper" -show -o x x.c)" = "$("$wrapper" --showme -o x x.c)" ] ||
        fail "-show printed '$("$wrapper" -show -o x x.c 2>&1)', not what --showme prints"
    # Open MPI's wrappers of the same names must be told apart: ushmem's line
    # first (on stderr), then the compiler's, whose own come first on stdout
    # for the build tools that read its version there.
    name=${wrapper##*/}
    "$wrapper" --version >"$scratch/out" 2>&1 || fail "$name --version failed"
    head -n 1 "$scratch/out" | grep -q "^$name: ushmem " ||
        fail "$name --version does not start with a line naming ushmem: $(cat "$scratch/out")"
    [ "$(wc -l <"$scratch/out")" -ge 2 ] || fail "$name --version did not run the compiler's"
    "$wrapper" --version 2>/dev/null | grep -q "^$name: ushmem " &&
        fail "$name --version printed its own line on stdout, before the compiler's"
    "$wrapper" --showme:version | grep -q "^$name: ushmem " ||
        fail "$name --showme:version does not name ushmem"
    "$wrapper" -c -o "$scratch/hello.o" "$3" 2>"$scratch/err" || fail "$wrapper -c failed"
    "$wrapper" -o "$scratch/hello" "$scratch/hello.o" 2>"$scratch/err" || fail "$wrapper link failed"
    [ ! -s "$scratch/err" ] || fail "the wrapper warned"
    run -n 2 "$scratch/hello"
    expect_code 0
    [ "$(grep -c 'ok$' "$scratch/out")" -eq 2 ] || fail "output: $(cat "$scratch/out")"
    ;;
oshcc-self) # oshcc-self WRAPPER LIBRARY SOURCE INCDIR: CC (CXX, NVCC) naming the
    # wrapper itself, by path or as a copy, must not make it run itself forever
    wrapper=$1
    case $wrapper in
    */oshnvcc) var=NVCC; command -v nvcc >/dev/null || exit 77 ;;
    */oshc++ | */oshcxx) var=CXX ;;
    *) var=CC ;;
    esac
    unset OSHCC OSHCXX OSHNVCC
    export OSHCC_LIBDIR
    OSHCC_LIBDIR=$(dirname "$2")
    export OSHCC_INCDIR=$4
    cp "$wrapper" "$scratch/copy"
    for self in "$wrapper" "$scratch/copy"; do
        env "$var=$self" timeout 20 "$wrapper" -o "$scratch/hello" "$3" 2>"$scratch/err"
        rc=$?
        [ "$rc" -ne 124 ] || fail "$var=$self: the wrapper still ran after 20 s"
        [ "$rc" -eq 0 ] || fail "$var=$self: the wrapper failed ($rc)"
        run -n 2 "$scratch/hello"
        expect_code 0
        [ "$(grep -c 'ok$' "$scratch/out")" -eq 2 ] || fail "output: $(cat "$scratch/out")"
        rm -f "$scratch/hello"
    done
    ;;
oshcc-cmake) # oshcc-cmake WRAPPER LIBRARY SOURCE INCDIR: a CMake project built
    # with the wrapper as its compiler and CC, as users write it
    command -v cmake >/dev/null || exit 77
    wrapper=$1
    export OSHCC_LIBDIR # absolute: CMake compiles in directories of its own
    OSHCC_LIBDIR=$(cd "$(dirname "$2")" && pwd)
    export OSHCC_INCDIR=$4
    export CC=$wrapper
    unset OSHCC
    mkdir "$scratch/src"
    cp "$3" "$scratch/src/hello.c"
    printf '%s\n' 'cmake_minimum_required(VERSION 3.10)' 'project(x C)' \
        'add_executable(hello hello.c)' >"$scratch/src/CMakeLists.txt"
    timeout 60 cmake -S "$scratch/src" -B "$scratch/b" -DCMAKE_C_COMPILER="$wrapper" \
        >"$scratch/err" 2>&1
    rc=$?
    [ "$rc" -ne 124 ] || fail "cmake configure still ran after 60 s"
    [ "$rc" -eq 0 ] || fail "cmake configure failed ($rc)"
    timeout 60 cmake --build "$scratch/b" >"$scratch/err" 2>&1
    rc=$?
    [ "$rc" -ne 124 ] || fail "cmake --build still ran after 60 s"
    [ "$rc" -eq 0 ] || fail "cmake --build failed ($rc)"
    rm -f "$scratch/err"
    run -n 2 "$scratch/b/hello"
    expect_code 0
    [ "$(grep -c 'ok$' "$scratch/out")" -eq 2 ] || fail "output: $(cat "$scratch/out")"
    ;;
*)
    echo "unknown case $case_name" >&2
    exit 1
    ;;
esac
exit 0
