#!/usr/bin/env bash
# fabric_stranger.sh PROVIDER OSHRUN VICTIM STRANGER
# Another local user (uid 65534) against a job whose peers all use the
# fabric (USHMEM_IPC=0, FI_PROVIDER=PROVIDER): it finds PE 0's endpoint in
# /proc/net/tcp, as anyone can, and tries to read and write PE 0's heap and
# data segment with the registration keys it can guess (fabric_stranger.c).
# Every try must be refused, and the job (fabric_victim.c) must find its
# heap word, its global and its GOT intact and still work over the fabric.
# Exit 0: pass, 1: fail, 77: skip (not root, or no such provider).
set -u
[ $# -eq 4 ] || { echo "usage: fabric_stranger.sh PROVIDER OSHRUN VICTIM STRANGER" >&2; exit 2; }
prov=$1 oshrun=$2 victim=$3 stranger=$4

fail() {
    echo "FAIL (fabric stranger, $prov): $*" >&2
    for f in stranger out err; do
        [ -s "$scratch/$f" ] && sed "s/^/  $f: /" "$scratch/$f" >&2
    done
    exit 1
}

[ "$(id -u)" -eq 0 ] || { echo "a second uid needs root: skipped"; exit 77; }
"$stranger" --probe "$prov" >/dev/null 2>&1
case $? in
0) ;;
3) echo "this libfabric has no provider $prov: skipped"; exit 77 ;;
*) echo "FAIL: fabric_stranger --probe $prov failed" >&2; exit 1 ;;
esac

# The waits stretch as oshrun's --timeout does (the sanitizer build).
scale=$(awk -v s="${OSHRUN_TIMEOUT_SCALE:-1}" \
    'BEGIN { s += 0; print (s > 1 ? int(s + 0.999) : 1) }')

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fabric-stranger.XXXXXX") || exit 1
job=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    [ -n "$job" ] && kill "$job" 2>/dev/null # timeout passes it on to oshrun
    rm -rf "$scratch"
}
trap cleanup EXIT

export USHMEM_IPC=0 FI_PROVIDER=$prov FI_SOCKETS_PE_WAITTIME=0 SHMEM_SYMMETRIC_SIZE=16M
start=$(date +%s%3N)
timeout -k 5 $((55 * scale)) "$oshrun" --timeout 50 -n 2 "$victim" "$scratch" $((40 * scale)) \
    >"$scratch/out" 2>"$scratch/err" &
job=$!
for _ in $(seq $((300 * scale))); do
    [ -s "$scratch/ready" ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
done
[ -s "$scratch/ready" ] || fail "PE 0 not ready after $((15 * scale)) s"
pe0=$(cat "$scratch/ready")

# Where PE 0 listens: its sockets' inodes among /proc/net/tcp's listening
# entries, as ADDR:PORT (a stranger sees there the address, the port and
# our uid). A wildcard address is reached through loopback.
inodes=$(find "/proc/$pe0/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n')
mapfile -t targets < <(awk -v inodes="$inodes" '
    function hex(s,    v, i) {
        v = 0
        for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789ABCDEF", substr(s, i, 1)) - 1
        return v
    }
    BEGIN { n = split(inodes, list, "\n"); for (i = 1; i <= n; i++) ours[list[i]] = 1 }
    NR > 1 && $4 == "0A" && ($10 in ours) {
        split($2, ap, ":"); a = ap[1]
        addr = hex(substr(a, 7, 2)) "." hex(substr(a, 5, 2)) "." hex(substr(a, 3, 2)) "." \
               hex(substr(a, 1, 2))
        if (addr == "0.0.0.0") addr = "127.0.0.1"
        print addr ":" hex(ap[2])
    }' /proc/net/tcp | sort -u)
[ ${#targets[@]} -gt 0 ] || fail "PE 0 (pid $pe0) listens on no TCP port in /proc/net/tcp"
echo "PE 0 (pid $pe0) listens on ${targets[*]}"

timeout -s KILL $((30 * scale)) "$stranger" --uid 65534 --limit $((20 * scale)) \
    "$prov" "${targets[@]}" >"$scratch/stranger" 2>&1
st=$?
touch "$scratch/done"
wait "$job"
code=$?
job=
elapsed=$(($(date +%s%3N) - start))
case $st in
0) ;;
10) fail "another user read or wrote PE 0's memory over the fabric" \
    "(the stranger's 'read key' and 'wrote key' lines below)" ;;
137) fail "the stranger still ran after $((30 * scale)) s" ;;
*) fail "the stranger failed (exit status $st): nothing was proved" ;;
esac
[ "$code" -eq 0 ] || fail "the job failed after the stranger's attempts (exit status $code)"
cat "$scratch/stranger" "$scratch/out"
echo "pass: every read and write of uid 65534 refused; the job intact ($elapsed ms)"
exit 0
