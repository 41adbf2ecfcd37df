#!/usr/bin/env bash
# landing_warm.sh MODE NPES command...
# Runs a landing job that exchanges and then keeps quiet (mpe_landing_quiet)
# with SHMEM_DEBUG=1 and reads what each PE did to keep the fabric's path
# warm meanwhile (src/transport/ofi_am.c), from its setup line ("...; kept
# warm every U us for W ms after a peer's last request" or "...; not kept
# warm (why)") and its count at finalize ("landing: N keep-warm messages
# sent by the progress thread, M by the proxy's"). Every one of the NPES PEs
# must say, by MODE:
#   spin     kept warm every 500 us, and its progress thread sent at least
#            100 messages (the quiet spell alone is due about 600: 2 a ms);
#   window   kept warm for a window shorter than the spell: fewer than the
#            spell would take without it (its progress thread stopped);
#   sleep    not kept warm, because the progress thread sleeps; no count.
# Fails when the job fails.
set -u
mode=$1
npes=$2
shift 2
out=$(SHMEM_DEBUG=1 "$@" 2>&1)
code=$?
if [ $code -ne 0 ]; then
    printf '%s\n' "$out" | tail -40
    echo "landing_warm.sh: the job exited $code" >&2
    exit 1
fi
fail() {
    printf '%s\n' "$out" | grep -i "warm\|error" | head -20
    echo "landing_warm.sh ($mode): $*" >&2
    exit 1
}
setup=$(printf '%s\n' "$out" | grep -c "DEBUG: ofi: PE [0-9]* .*receive buffers")
[ "$setup" -eq "$npes" ] || fail "$setup of $npes PEs printed their landing setup"
counts=$(printf '%s\n' "$out" | grep "DEBUG: landing: [0-9]* keep-warm messages sent")
case $mode in
spin | window)
    kept=$(printf '%s\n' "$out" | grep -c "kept warm every 500 us for [0-9]* ms after a peer's last request")
    [ "$kept" -eq "$npes" ] || fail "$kept of $npes PEs keep the path warm"
    n=0
    while read -r line; do
        [ -n "$line" ] || continue
        [[ $line =~ keep-warm\ messages\ sent\ by\ the\ progress\ thread,\ ([0-9]+)\ by ]] ||
            fail "an unexpected count: $line"
        sent=${line#*landing: }
        sent=${sent%% *}
        if [ "$mode" = spin ]; then
            [ "$sent" -ge 100 ] || fail "only $sent keep-warm messages in the quiet spell: $line"
        else
            # The spell lasts 1000 ms, the window 50: about 100 are due (and
            # a few hundred before the spell on a loaded machine), 2000
            # without the window (1100 measured on two busy cores).
            [ "$sent" -le 500 ] || fail "$sent keep-warm messages after a 50 ms window: $line"
        fi
        n=$((n + 1))
    done <<<"$counts"
    [ $n -eq "$npes" ] || fail "$n of $npes PEs counted their keep-warm messages"
    ;;
sleep)
    cold=$(printf '%s\n' "$out" | grep -c "not kept warm (the progress thread sleeps when idle)")
    [ "$cold" -eq "$npes" ] || fail "$cold of $npes PEs say their path is not kept warm"
    [ -z "$counts" ] || fail "keep-warm messages counted with sleeping helpers: $counts"
    ;;
*)
    fail "unknown mode (spin, window, sleep)"
    ;;
esac
printf '%s\n' "$counts"
exit 0
