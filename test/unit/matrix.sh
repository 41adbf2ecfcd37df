#!/usr/bin/env bash
# The route matrix: each case is a machine (probe results forced with
# USHMEM_SIM_CAPS, or a PCIe fixture tree with the cpu backend posing as
# PCIe GPUs) and either the routes every PE must see, followed by a workload
# on every route (test/unit/mpe/mpe_matrix.c), or the exit status 1 and the
# sentence every PE must print. The expectations follow the policy written
# at the top of src/transport/decide.c and the per-target unification of
# atomics in src/host/routes.c.
#
# With MATRIX_BACKEND=ze the PEs run the ze backend on the Level Zero test
# driver (its ZE_ENABLE_ALT_DRIVERS in the environment), one device each
# (UZT_DEVICES), linked by Xe Link or, with a fixture tree, by PCIe with a
# driver that claims P2P atomics (UZT_LINK=pcie-atomics): the AtomicOps
# probe must overrule it. The heap is then device memory that this fabric
# cannot take, so a pair whose atomics need the fabric fails at init, naming
# the pair and the reason, unless USHMEM_FABRIC_STAGING=1: then peers'
# operations on a heap arrive as messages that its PE lands with the copy
# engine and the device atomic (the module MATRIX_ZE_KERNELS names), and the
# workload runs on those routes.
#
# usage: matrix.sh --list | --list-ze
#        matrix.sh CASE NPES OSHRUN MPE_MATRIX MAKE_PCIE_FIXTURES
set -u

# Route specs (see mpe_matrix.c): two letters (to this PE, to the others) or
# one row per source PE. s self, d direct, p proxy/ofi, t staged, h host-sync.
DIRECT="rma=sd amo=sd signal=sd sync=sd"
AMO_FABRIC="rma=sd amo=pp signal=pp sync=pp"
ALL_FABRIC="rma=sp amo=pp signal=pp sync=pp"
# Atomics to PE 1 (and 2) over the fabric for every PE, itself included,
# because PE 0 cannot reach them with GPU atomics; PE 0's own stay direct.
FROM0_2="rma=sd amo=sp,dp signal=sp,dp sync=sp,dp"
FROM0_3="rma=sd amo=spp,dpp,dpp signal=spp,dpp,dpp sync=spp,dpp,dpp"
# Atomics to PE 1 over the fabric for every PE; the other pairs direct.
TO1_2="rma=sd amo=sp,dp signal=sp,dp sync=sp,dp"
TO1_3="rma=sd amo=spd,dpd,dps signal=spd,dpd,dps sync=spd,dpd,dps"

NO_ATOMICS_MSG='shmem_init: PE [0-9] -> PE [0-9]: atomics, signals, and synchronisation have no route: the device backend reports no native atomics between the two GPUs, and the fabric offers no FI_ATOMIC; connect the GPUs by NVLink/Xe Link,? or use a fabric with FI_ATOMIC$'
PCIE_NO_MSG='shmem_init: PE [0-9] -> PE [0-9]: atomics, signals, and synchronisation have no route: the GPUs are linked by PCIe without AtomicOps \(the config-space probe found a requester not enabled, a port that does not route AtomicOps, egress blocking or no 64-bit completer on the path\), and the fabric offers no FI_ATOMIC; enable AtomicOps in the BIOS, connect the GPUs by NVLink/Xe Link,? or use a fabric with FI_ATOMIC$'
PCIE_UNKNOWN_MSG='shmem_init: PE [0-9] -> PE [0-9]: atomics, signals, and synchronisation have no route: the GPUs are linked by PCIe and AtomicOps on the path could not be verified \(config space unreadable or the path not visible in sysfs\) while USHMEM_STRICT=1, and the fabric offers no FI_ATOMIC; set USHMEM_STRICT=0 to trust the path, connect the GPUs by NVLink/Xe Link,? or use a fabric with FI_ATOMIC$'
DEVICE_HEAP_MSG='shmem_init: PE [0-9]: a peer is reachable only through the fabric \(PE [0-9] -> PE [0-9]: RMA over the fabric, because .*\), the symmetric heap is cpu device memory, and the fabric cannot take device memory .*set USHMEM_FABRIC_STAGING=1'
UNVERIFIED_PROXY_WARN='PE [0-9] -> PE [0-9]: could not verify AtomicOps on the PCIe path \(source [0-9a-f:.]+ shows only 64 bytes of config space \(reading all of it needs CAP_SYS_ADMIN\)\), so atomics go through the proxy; set USHMEM_STRICT=0'
UNVERIFIED_TRUSTED_WARN='PE [0-9] -> PE [0-9]: could not verify AtomicOps on the PCIe path \(source [0-9a-f:.]+ shows only 64 bytes of config space \(reading all of it needs CAP_SYS_ADMIN\)\); GPU atomics are used because USHMEM_STRICT=0'

CASES="default p2p-access-0 p2p-atomics-0 no-atomics-anywhere same-device same-device-bdfs
ipc0-tcp ipc0-shm ipc0-same-device staged-tcp device-heap-refused
pcie-enabled pcie-requester-disabled pcie-requester-disabled-strict0 pcie-no-routing
pcie-egress-blocked pcie-no-64bit-completer pcie-unreadable pcie-unreadable-strict0
pcie-no-fabric-atomics pcie-unreadable-no-fabric-atomics pcie-not-in-sysfs bdfs-malformed"

ZE_CASES="default same-device p2p-atomics-0 no-atomics-anywhere ipc0-tcp pcie-enabled
pcie-requester-disabled pcie-no-routing pcie-egress-blocked pcie-unreadable
pcie-unreadable-strict0 pcie-no-fabric-atomics pcie-not-in-sysfs
landing-ipc0-tcp landing-ipc0-shm landing-same-device landing-p2p-atomics-0
landing-pcie-no-routing landing-pcie-requester-disabled"
# The ze refusal when some pair's class needs the fabric (CLASS: RMA or atomics).
ze_fabric_msg()
{
    echo "shmem_init: PE [0-9]: a peer is reachable only through the fabric \\((PE [0-9] -> PE [0-9]: $1 over the fabric, because [^)]*(\\([^)]*\\)[^)]*)*|another PE reaches this one over the fabric)\\), the symmetric heap is ze device memory, and the fabric cannot take device memory"
}

# Sets ENV (VAR=value words), FIXTURE (a make_pcie_fixtures.py case, whose
# GPUs the PEs pose as; BDFS replaces their addresses), and either EXPECT (routes) or FAIL (a regex that
# every PE's ERROR line must match; ANY_PE=1 when one PE is enough, because
# the first to fail ends the job before the others speak). WARN: a regex
# every PE's WARN line must match.
define_case()
{
    local n=$1
    ENV="" FIXTURE="" BDFS="" EXPECT="" FAIL="" ANY_PE=0 WARN=""
    case $2 in
    default) EXPECT=$DIRECT ;;
    p2p-access-0) ENV="USHMEM_SIM_CAPS=p2p_access=0" EXPECT=$ALL_FABRIC ;;
    p2p-atomics-0) ENV="USHMEM_SIM_CAPS=p2p_atomics=0" EXPECT=$AMO_FABRIC ;;
    no-atomics-anywhere)
        ENV="USHMEM_SIM_CAPS=p2p_atomics=0,fabric_atomics=0" FAIL=$NO_ATOMICS_MSG ;;
    # Two PEs on one device: same memory, but waits on the host.
    same-device) ENV="USHMEM_SIM_CAPS=same_device=1" EXPECT="rma=sd amo=sd signal=sd sync=sh" ;;
    same-device-bdfs)
        ENV="USHMEM_CPU_PCI_BDFS=0000:3b:00.0,0000:3b:00.0,0000:3b:00.0"
        EXPECT="rma=sd amo=sd signal=sd sync=sh" ;;
    ipc0-tcp) ENV="USHMEM_IPC=0 FI_PROVIDER=tcp" EXPECT=$ALL_FABRIC ;;
    ipc0-shm) ENV="USHMEM_IPC=0 FI_PROVIDER=shm" EXPECT=$ALL_FABRIC ;;
    # One device, mapping off: no host sync segments to wait on, so
    # synchronisation takes the fabric like the rest.
    ipc0-same-device)
        ENV="USHMEM_CPU_PCI_BDFS=0000:3b:00.0,0000:3b:00.0,0000:3b:00.0 USHMEM_IPC=0 FI_PROVIDER=tcp"
        EXPECT=$ALL_FABRIC ;;
    # Staging hands the fabric host memory only; this PE's own atomic words
    # are unified to proxy/ofi, the others' are staged.
    staged-tcp)
        ENV="USHMEM_IPC=0 FI_PROVIDER=tcp USHMEM_CPU_DEVICE_HEAP=1 USHMEM_FABRIC_STAGING=1"
        EXPECT="rma=st amo=pt signal=pt sync=pt" ;;
    # The fabric's open fails on each PE by itself, with no exchange after
    # it, so the first PE to fail can end the job before the others speak.
    device-heap-refused)
        ENV="USHMEM_IPC=0 FI_PROVIDER=tcp USHMEM_CPU_DEVICE_HEAP=1" FAIL=$DEVICE_HEAP_MSG
        ANY_PE=1 ;;
    pcie-enabled) FIXTURE=enabled EXPECT=$DIRECT ;;
    pcie-requester-disabled) FIXTURE=requester-disabled ;;
    # A definite no is never trusted, whatever USHMEM_STRICT says.
    pcie-requester-disabled-strict0) FIXTURE=requester-disabled ENV="USHMEM_STRICT=0" ;;
    pcie-no-routing) FIXTURE=no-routing EXPECT=$AMO_FABRIC ;;
    pcie-egress-blocked) FIXTURE=egress-blocked ;;
    pcie-no-64bit-completer) FIXTURE=no-64bit-completer ;;
    pcie-unreadable) FIXTURE=unreadable EXPECT=$AMO_FABRIC WARN=$UNVERIFIED_PROXY_WARN ;;
    pcie-unreadable-strict0)
        FIXTURE=unreadable ENV="USHMEM_STRICT=0" EXPECT=$DIRECT WARN=$UNVERIFIED_TRUSTED_WARN ;;
    pcie-no-fabric-atomics)
        FIXTURE=no-routing ENV="USHMEM_SIM_CAPS=fabric_atomics=0" FAIL=$PCIE_NO_MSG ;;
    pcie-unreadable-no-fabric-atomics)
        FIXTURE=unreadable ENV="USHMEM_SIM_CAPS=fabric_atomics=0" FAIL=$PCIE_UNKNOWN_MSG ;;
    # GPUs that sysfs does not show: unknown, said with the probe's reason.
    pcie-not-in-sysfs)
        FIXTURE=enabled BDFS="0000:aa:00.0,0000:ab:00.0,0000:ac:00.0" EXPECT=$AMO_FABRIC
        WARN='PE [0-9] -> PE [0-9]: could not verify AtomicOps on the PCIe path \(0000:a[abc]:00.0 is not listed under [^ ]+/sys/bus/pci/devices \(No such file or directory\)\), so atomics go through the proxy' ;;
    bdfs-malformed)
        ENV="USHMEM_CPU_PCI_BDFS=0000:3b:00.0,3c:00.0"
        FAIL="cpu backend: USHMEM_CPU_PCI_BDFS='0000:3b:00.0,3c:00.0': item 1 \('3c:00.0'\) is not a PCI address such as 0000:3b:00.0"
        ANY_PE=1 ;;
    landing-*) [ "${MATRIX_BACKEND:-cpu}" = ze ] || return 1 ;;
    *) return 1 ;;
    esac
    case $2 in
    pcie-requester-disabled*) [ "$n" = 2 ] && EXPECT=$FROM0_2 || EXPECT=$FROM0_3 ;;
    pcie-egress-blocked | pcie-no-64bit-completer) [ "$n" = 2 ] && EXPECT=$TO1_2 || EXPECT=$TO1_3 ;;
    esac
    [ "${MATRIX_BACKEND:-cpu}" = ze ] || return 0
    # On the ze device heap: same-device is one device for all, and every
    # case whose atomics (or RMA) would take the fabric is refused at init.
    case $2 in
    same-device) ENV="UZT_DEVICES=1" ;;
    p2p-atomics-0 | no-atomics-anywhere | pcie-requester-disabled | pcie-no-routing | \
        pcie-egress-blocked | pcie-unreadable | pcie-not-in-sysfs | pcie-no-fabric-atomics)
        EXPECT="" FAIL=$(ze_fabric_msg atomics) ANY_PE=1 WARN="" ;;
    ipc0-tcp) EXPECT="" FAIL=$(ze_fabric_msg RMA) ANY_PE=1 ;;
    esac
    # Landing: the same machines with USHMEM_FABRIC_STAGING=1 run, every
    # fabric class staged (this PE's own atomic words unified onto the
    # fabric, as p), the mapped ones direct.
    local land="USHMEM_FABRIC_STAGING=1 USHMEM_ZE_KERNELS=${MATRIX_ZE_KERNELS:-}"
    case $2 in
    landing-ipc0-tcp) ENV="USHMEM_IPC=0 FI_PROVIDER=tcp $land" EXPECT="rma=st amo=pt signal=pt sync=pt" ;;
    landing-ipc0-shm) ENV="USHMEM_IPC=0 FI_PROVIDER=shm $land" EXPECT="rma=st amo=pt signal=pt sync=pt" ;;
    # Two PEs on one device with mapping off: messages, and host waits.
    landing-same-device)
        ENV="UZT_DEVICES=1 USHMEM_IPC=0 FI_PROVIDER=tcp $land" EXPECT="rma=st amo=pt signal=pt sync=pt" ;;
    landing-p2p-atomics-0)
        ENV="USHMEM_SIM_CAPS=p2p_atomics=0 FI_PROVIDER=tcp $land" EXPECT="rma=sd amo=pt signal=pt sync=pt" ;;
    # A PCIe path without AtomicOps: the atomics are routed safely, landed
    # by the owner's device; RMA stays on the mapped heaps.
    # (Pairs whose atomics are unified onto the fabric show proxy/ofi: the
    # same transport, landing on the heap all the same.)
    landing-pcie-no-routing)
        FIXTURE=no-routing ENV="FI_PROVIDER=tcp $land"
        [ "$n" = 2 ] && EXPECT="rma=sd amo=pt signal=pt sync=pt" ||
            EXPECT="rma=sd amo=ptt,tpp,tpp signal=ptt,tpp,tpp sync=ptt,tpp,tpp" ;;
    landing-pcie-requester-disabled)
        FIXTURE=requester-disabled ENV="FI_PROVIDER=tcp $land"
        [ "$n" = 2 ] && EXPECT="rma=sd amo=st,dp signal=st,dp sync=st,dp" ||
            EXPECT="rma=sd amo=stt,dpp,dpp signal=stt,dpp,dpp sync=stt,dpp,dpp" ;;
    esac
    return 0
}

if [ "${1:-}" = "--list" ]; then
    echo $CASES
    exit 0
fi
if [ "${1:-}" = "--list-ze" ]; then
    echo $ZE_CASES
    exit 0
fi
if [ $# -ne 5 ]; then
    echo "usage: matrix.sh --list | matrix.sh CASE NPES OSHRUN MPE_MATRIX MAKE_PCIE_FIXTURES" >&2
    exit 2
fi
name=$1 npes=$2 oshrun=$3 prog=$4 fixtures=$5
if ! define_case "$npes" "$name"; then
    echo "matrix.sh: unknown case '$name'" >&2
    exit 2
fi

# A private TMPDIR, to check that the job leaves nothing in it.
work=$(mktemp -d "${TMPDIR:-/tmp}/matrix.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
envs=(TMPDIR="$work/tmp" SHMEM_SYMMETRIC_SIZE=16M)
for e in $ENV; do envs+=("$e"); done
if [ -n "$FIXTURE" ]; then
    python3 "$fixtures" "$work/sys" "$FIXTURE" || exit 1
    bdfs=$(python3 -c 'import sys; print(",".join(sys.argv[2].split(",")[:int(sys.argv[1])]))' \
        "$npes" "${BDFS:-0000:3b:00.0,0000:3c:00.0,0000:5e:00.0}")
    envs+=(USHMEM_SYSFS_ROOT="$work/sys")
    if [ "${MATRIX_BACKEND:-cpu}" = ze ]; then
        envs+=(UZT_PCI_BDFS="$bdfs" UZT_LINK=pcie-atomics)
    else
        envs+=(USHMEM_CPU_PCI_BDFS="$bdfs")
    fi
fi
if [ "${MATRIX_BACKEND:-cpu}" = ze ]; then
    envs=(USHMEM_BACKEND=ze "UZT_DEVICES=$npes" "${envs[@]}")
fi

echo "matrix.sh: case $name, $npes PEs: ${envs[*]}"
start=$(date +%s%N)
out=$(env "${envs[@]}" "$oshrun" --timeout 30 -n "$npes" "$prog" $EXPECT 2>&1)
code=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
printf '%s\n' "$out"
echo "matrix.sh: exit status $code after $elapsed_ms ms"

fail() { echo "matrix.sh: $name, $npes PEs: $*" >&2; exit 1; }

# Every PE's line of the given level matches the regex.
every_pe_says()
{
    local level=$1 regex=$2
    for ((pe = 0; pe < npes; pe++)); do
        printf '%s\n' "$out" | grep -Eq -- "^ushmem\[PE $pe\] $level: $regex" ||
            fail "PE $pe printed no $level line matching /$regex/"
    done
}

if [ -n "$FAIL" ]; then
    [ "$code" -eq 1 ] || fail "exit status $code, wanted 1"
    if [ "$ANY_PE" = 1 ]; then
        printf '%s\n' "$out" | grep -Eq -- "^ushmem\[PE [0-9]+\] ERROR: $FAIL" ||
            fail "no PE printed an ERROR line matching /$FAIL/"
    else
        every_pe_says ERROR "$FAIL"
    fi
else
    [ "$code" -eq 0 ] || fail "exit status $code, wanted 0"
fi
[ -z "$WARN" ] || every_pe_says WARN "$WARN"
leftover=$(ls -A "$work/tmp")
[ -z "$leftover" ] || fail "the job left files in TMPDIR: $leftover"
exit 0
