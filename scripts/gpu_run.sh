#!/usr/bin/env bash
# Builds ushmem on a machine with NVIDIA GPUs and shows the cuda backend at
# work there: the GPU topology, `ushmem_info --topology`, mpe_device_heap
# across GPUs (2 PEs; 4 PEs on 4 GPUs, or two per GPU on 2), with two and
# three PEs on one GPU, the fabric refusals for a device heap, the
# cpu-backend device-heap tests (part "host"); the device API in CUDA
# kernels, test/unit/cuda under every PE count and route (part "device");
# the CUDA programs with one GPU per PE through the proxy, over landing, over
# libfabric with FI_HMEM and on simulated nodes (part "routes"); SYCL kernels
# through AdaptiveCpp's cuda target, compiled beforehand by
# scripts/build-sycl-gpu.sh into .sycl-gpu/ (part "sycl"); the GPU
# benchmarks beside NVSHMEM and NCCL, scripts/gpu_bench.sh (part "bench");
# NVSHMEM's own perftests built unchanged against ushmem and against NVSHMEM,
# scripts/nvshmem_suite.sh (part "nvshmem"); then a summary table.
#
# Usage: [BUILD_DIR=build-gpu] [GPU_RUN_PARTS=host,device,routes,sycl,bench,nvshmem]
#        [CUDA_TESTS="name ..."] [NVSHMEM_SRC=path]
#        scripts/gpu_run.sh [LOG_DIR]
#        (LOG_DIR defaults to $BUILD_DIR/logs)
#
# The machine needs gcc, meson, ninja, pkg-config, PMIx with headers and the
# CUDA toolkit headers. Check comes as Debian packages in .deb/ (check,
# libsubunit-dev, libsubunit0, fetched beforehand with `apt-get download`),
# unpacked into the build folder. libfabric: the vendored release
# (.vendor/libfabric-*.tar.gz, or ../shared/vendor/) is built with CUDA into
# $BUILD_DIR/libfabric by scripts/build-libfabric.sh, so that the heap can be
# registered as GPU memory (FI_HMEM); without the tarball, libfabric-dev from
# .deb gives the headers and the machine's own libfabric.so.1 (1.17, no
# GPU-RMA) is loaded. Without either, ofi is left out of the build and the
# fabric checks are skipped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${BUILD_DIR:-build-gpu}
logs=${1:-$build/logs}
parts=${GPU_RUN_PARTS:-host,device,routes,sycl,bench,nvshmem}
want() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
mkdir -p "$build" "$logs"
log=$logs/gpu_run.log
: >"$log"
: >"$logs/summary.txt"

# NVLink multicast stays off on shared GPU hosts; ushmem never uses it, and
# whatever else runs in these jobs must not either.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-256M}

summary=()
say() { printf '%s\n' "$*" | tee -a "$log"; }
section() { say ""; say "=== $* ==="; }
record() { summary+=("$(printf '%-58s %s' "$1" "$2")"); }
# Runs a command with a time limit, its output into the log; returns its code.
run() {
    say "\$ $*"
    timeout 150 "$@" 2>&1 | tee -a "$log"
    return "${PIPESTATUS[0]}"
}
# The same with the output into file $1 only (the log names the file).
run_to() {
    local file=$1
    shift
    say "\$ $* > ${file##*/}"
    timeout 150 "$@" >"$file" 2>&1
}

section "machine"
run uname -a
run nvidia-smi -L
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
say "GPUs: $ngpus"
gcc --version | head -1 | tee -a "$log"
meson=meson
command -v meson >/dev/null || meson="python3 -m mesonbuild.mesonmain"
run $meson --version

section "dependencies"
deps=$root/$build/deps
rm -rf "$deps"
mkdir -p "$deps"
have_check=0
if ls .deb/*.deb >/dev/null 2>&1; then
    for f in .deb/*.deb; do dpkg -x "$f" "$deps" || say "dpkg -x $f failed"; done
    pc=$deps/usr/lib/x86_64-linux-gnu/pkgconfig
    # The packages say prefix=/usr; they live here instead.
    sed -i "s|^prefix=.*|prefix=$deps/usr|" "$pc"/*.pc
    # Linking subunit statically leaves the test programs nothing to find
    # at run time.
    rm -f "$deps"/usr/lib/x86_64-linux-gnu/libsubunit.so
    export PKG_CONFIG_PATH=$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    pkg-config --exists check && have_check=1
fi
say "Check from .deb: $([ $have_check = 1 ] && pkg-config --modversion check || echo missing)"
if ! pkg-config --exists pmix; then
    pmix_pc=$(find /usr /opt -name pmix.pc 2>/dev/null | head -1)
    if [ -n "$pmix_pc" ]; then
        PKG_CONFIG_PATH=$(dirname "$pmix_pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
        export PKG_CONFIG_PATH
    fi
fi
say "PMIx: $(pkg-config --modversion pmix 2>&1)"
if [ -z "${CUDA_PATH:-}" ] && command -v nvcc >/dev/null; then
    CUDA_PATH=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    export CUDA_PATH
fi
say "CUDA_PATH=${CUDA_PATH:-unset}"

section "libfabric"
ofi_opt=disabled
have_hmem=0
tarball=$(ls .vendor/libfabric-*.tar.gz ../shared/vendor/libfabric-*.tar.gz 2>/dev/null | head -1)
if [ -n "$tarball" ]; then
    say "\$ scripts/build-libfabric.sh $build/libfabric ($tarball)"
    if LIBFABRIC_TARBALL=$root/$tarball timeout 600 bash scripts/build-libfabric.sh \
        "$root/$build/libfabric" >"$logs/libfabric.txt" 2>&1; then
        tail -n 3 "$logs/libfabric.txt" | tee -a "$log"
        export PKG_CONFIG_PATH=$root/$build/libfabric/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
        ofi_opt=enabled
        record "vendored libfabric built ($(head -1 "$logs/libfabric.txt" | sed 's/.*CUDA: //'))" PASS
    else
        tail -n 20 "$logs/libfabric.txt" | tee -a "$log"
        record "vendored libfabric built" FAIL
    fi
fi
fabric_so=$(ldconfig -p | awk '/libfabric\.so\.1 .*x86-64/ {print $NF; exit}')
if [ $ofi_opt = disabled ] && [ -n "$fabric_so" ] && [ -f "$deps/usr/include/rdma/fabric.h" ]; then
    ln -sf "$fabric_so" "$deps/usr/lib/x86_64-linux-gnu/libfabric.so"
    rm -f "$deps/usr/lib/x86_64-linux-gnu/libfabric.a"
    ofi_opt=enabled
fi

section "build"
tests_opt=enabled
[ $have_check = 1 ] || tests_opt=disabled
setup=(setup)
[ -f "$build/build.ninja" ] && setup=(setup --reconfigure)
run $meson "${setup[@]}" "$build" -Dofi=$ofi_opt -Dze=disabled -Dcuda=enabled \
    -Dtests=$tests_opt --buildtype=debugoptimized || { record "meson setup" FAIL; }
say "\$ ninja -C $build -k 0"
timeout 300 ninja -C "$build" -k 0 >"$logs/ninja.log" 2>&1
rc=$?
nwarn=$(grep -c 'warning:' "$logs/ninja.log")
grep -E 'warning:|error|undefined|FAILED' "$logs/ninja.log" | head -20 | tee -a "$log"
[ $rc = 0 ] && record "build, ofi $ofi_opt ($nwarn compiler warnings)" PASS ||
    record "build, ofi $ofi_opt (rc $rc, $nwarn compiler warnings)" FAIL
prog=$build/test/unit/mpe/mpe_device_heap
info=$build/tools/ushmem_info
if [ ! -x "$prog" ] || [ ! -x "$info" ]; then
    printf '%s\n' "${summary[@]}" | tee -a "$log" "$logs/summary.txt"
    exit 1
fi
oshrun=("$build/tools/oshrun" --timeout 100)

# expect NAME CODE REGEX [NOT_REGEX] -- command: records PASS when the command
# exits with CODE, its output matches REGEX and (if given) not NOT_REGEX.
expect() {
    local name=$1 want=$2 regex=$3 not=${4:-} out=$logs/out.txt rc
    shift 4
    [ "$1" = "--" ] && shift
    run_to "$out" "$@"
    rc=$?
    tee -a "$log" <"$out" | grep -E 'ERROR|WARN|passed|check failed|routes to PE' | head -12
    if [ $rc = "$want" ] && grep -Eq -- "$regex" "$out" &&
       { [ -z "$not" ] || ! grep -Eq -- "$not" "$out"; }; then
        record "$name" PASS
    else
        record "$name" "FAIL (rc $rc)"
    fi
}

if want host; then
section "nvidia-smi topo -m"
run nvidia-smi topo -m

section "ushmem_info"
run_to "$logs/info.txt" "$info"
sed -n '1,8p' "$logs/info.txt" | tee -a "$log"
grep -q '^  cuda   available' "$logs/info.txt" && record "ushmem_info: cuda backend available" PASS ||
    record "ushmem_info: cuda backend available" FAIL
grep -E '^         (libfabric|providers|FI_HMEM)' "$logs/info.txt" | tee -a "$log"
if grep -q 'GPU memory it registers here: cuda' "$logs/info.txt"; then
    have_hmem=1
    record "ushmem_info: libfabric registers CUDA memory (FI_HMEM)" PASS
fi

section "oshrun -n 2 ushmem_info --topology"
if [ "$ngpus" -ge 2 ]; then
    expect "ushmem_info --topology, 2 PEs: cuda, nvlink, direct" 0 \
        'PE 0 -> PE 1: same_node=yes same_device=no link=nvlink p2p_access=yes p2p_atomics=yes' \
        '' -- "${oshrun[@]}" -n 2 "$info" --topology
else
    # One GPU: both PEs on it, which the one-GPU section below checks.
    run_to "$logs/out.txt" "${oshrun[@]}" -n 2 "$info" --topology
    record "ushmem_info --topology, 2 PEs on 2 GPUs" "skipped (one GPU)"
fi
cp "$logs/out.txt" "$logs/topology_n2.txt"
grep -q 'backend cuda, heap in device memory' "$logs/topology_n2.txt" &&
    record "  backend cuda, heap in device memory" PASS ||
    record "  backend cuda, heap in device memory" FAIL

section "mpe_device_heap, 2 PEs on 2 GPUs"
SHMEM_DEBUG=1 run_to "$logs/debug.txt" "${oshrun[@]}" -n 2 "$prog"
grep -E 'cuda backend' "$logs/debug.txt" | head -8 | tee -a "$log"
if [ "$ngpus" -ge 2 ]; then
    expect "mpe_device_heap -n 2 (one GPU each)" 0 'all checks passed' '' -- "${oshrun[@]}" -n 2 "$prog" -v
    expect "mpe_device_heap -n 2, USHMEM_FD_PASSING=socket" 0 'all checks passed' '' -- \
        env USHMEM_FD_PASSING=socket "${oshrun[@]}" -n 2 "$prog"
else
    record "mpe_device_heap -n 2 (one GPU each)" "skipped (one GPU)"
fi
if [ "$ngpus" -ge 4 ]; then
    expect "mpe_device_heap -n 4 (one GPU each)" 0 'all checks passed' '' -- "${oshrun[@]}" -n 4 "$prog" -v
    expect "mpe_device_heap -n 8 (two PEs per GPU)" 0 'all checks passed' '' -- \
        "${oshrun[@]}" -n 8 "$prog" --devices="$ngpus"
else
    expect "mpe_device_heap -n 4 on $ngpus GPUs (two PEs per GPU)" 0 'all checks passed' '' -- \
        "${oshrun[@]}" -n 4 "$prog" -v --devices="$ngpus"
    expect "ushmem_info --topology -n 4 on $ngpus GPUs: same-device pair" 0 \
        'PE 0 -> PE 2: same_node=yes same_device=yes link=same-device' '' -- \
        "${oshrun[@]}" -n 4 "$info" --topology
fi

section "PEs on one GPU: CUDA_VISIBLE_DEVICES=0"
for n in 2 3; do
    expect "mpe_device_heap -n $n on one GPU (host-sync)" 0 'one device: all checks passed' '' -- \
        env CUDA_VISIBLE_DEVICES=0 "${oshrun[@]}" -n $n "$prog" -v --same-device
done

section "no visible GPU: auto falls back to cpu; cuda asked for fails"
expect "no GPU visible, auto: cpu heap, no error output" 0 'all checks passed' 'ERROR' -- \
    env CUDA_VISIBLE_DEVICES= "${oshrun[@]}" -n 2 "$prog" --heap=host
expect "no GPU visible, USHMEM_BACKEND=cuda: one error, exit 1" 1 \
    'cuda backend: cuInit\(0\) answered CUDA_ERROR_NO_DEVICE' '' -- \
    env CUDA_VISIBLE_DEVICES= USHMEM_BACKEND=cuda "${oshrun[@]}" -n 2 "$prog"

section "device heap over a fabric without GPU-RMA"
if [ $ofi_opt = enabled ]; then
    expect "USHMEM_IPC=0 tcp: refused, staging advised" 1 \
        'symmetric heap is cuda device memory, and the fabric cannot take device memory.*set USHMEM_FABRIC_STAGING=1 to carry' \
        '' -- env USHMEM_IPC=0 FI_PROVIDER=tcp "${oshrun[@]}" -n 2 "$prog"
    # Staging: peers' operations land on each heap through messages, by
    # the heap's own copy engine and atomic kernel.
    for n in 2 3; do
        expect "USHMEM_IPC=0 tcp, staging: mpe_device_heap -n $n lands" 0 'all checks passed' '' -- \
            env USHMEM_IPC=0 FI_PROVIDER=tcp USHMEM_FABRIC_STAGING=1 "${oshrun[@]}" -n $n "$prog" \
            --landed
    done
else
    record "fabric refusals (no libfabric headers in .deb)" SKIP
fi

# With a libfabric that registers CUDA memory: every peer as if on another
# node (USHMEM_IPC=0, shm), the heap registered with FI_HMEM, no landing; and
# simulated nodes, the direct road inside each and libfabric between.
if [ $have_hmem = 1 ] && [ "$ngpus" -ge 2 ]; then
    section "the heap over libfabric with FI_HMEM (USHMEM_IPC=0, FI_PROVIDER=shm)"
    expect "--topology: the heap registered with FI_HMEM for every peer" 0 \
        'PE 0 -> PE 1: .*fabric_hmem=yes heap_is_device=yes ipc_enabled=no' '' -- \
        env USHMEM_IPC=0 FI_PROVIDER=shm "${oshrun[@]}" -n 2 "$info" --topology
    expect "mpe_device_heap -n 2 over FI_HMEM" 0 'all checks passed' '' -- \
        env USHMEM_IPC=0 FI_PROVIDER=shm "${oshrun[@]}" -n 2 "$prog"
    expect "mpe_device_heap -n 4 over FI_HMEM (two PEs per GPU)" 0 'all checks passed' '' -- \
        env USHMEM_IPC=0 FI_PROVIDER=shm "${oshrun[@]}" -n 4 "$prog" --devices="$ngpus"
    # The heap grows there too, one registration per chunk: every road
    # into each new block (host RMA from a cudaMalloc buffer included),
    # every byte checked, at 2 PEs and 4 (two per GPU).
    grow_full=$build/test/unit/cuda/cu_heap_grow_full
    expect "cu_heap_grow_full -n 2 over FI_HMEM, 64M steps to 512M" 0 \
        '^cu_heap_grow_full: PASS' '' -- env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=64M \
        "${oshrun[@]}" -n 2 "$grow_full" --dev-bytes 1M 64M 512M
    expect "cu_heap_grow_full -n 4 over FI_HMEM, 64M steps to 256M" 0 \
        '^cu_heap_grow_full: PASS' '' -- env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=64M \
        "${oshrun[@]}" -n 4 "$grow_full" --dev-bytes 1M 64M 256M
    section "simulated nodes: USHMEM_SIM_NODES=2, 4 PEs"
    expect "--topology: PE 0 -> PE 2 across nodes, PE 0 -> PE 1 direct" 0 \
        'PE 0 -> PE 2: same_node=no .*fabric_hmem=yes' '' -- \
        env USHMEM_SIM_NODES=2 FI_PROVIDER=shm "${oshrun[@]}" -n 4 "$info" --topology
    expect "mpe_device_heap -n 4 in 2 simulated nodes" 0 'all checks passed' '' -- \
        env USHMEM_SIM_NODES=2 FI_PROVIDER=shm "${oshrun[@]}" -n 4 "$prog" --devices="$ngpus"
fi

section "host-API benchmarks on the cuda heap, 2 PEs on 2 GPUs"
# Host-initiated RMA moves device memory with the copy engine; the tables
# go to the log, the 8-byte latency and largest-size bandwidth to the summary.
perf=$build/test/perf
for b in put_latency get_latency put_bw get_bw alltoall_bw barrier_latency; do
    out=$logs/bench_$b.txt
    args=(--max-size 67108864)
    [ $b = barrier_latency ] && args=()
    if SHMEM_SYMMETRIC_SIZE=1G run_to "$out" "${oshrun[@]}" -n 2 "$perf/$b" "${args[@]}"; then
        tee -a "$log" <"$out"
        first=$(grep -v '^#' "$out" | head -1 | awk '{print $1 ": " $2}')
        last=$(grep -v '^#' "$out" | tail -1 | awk '{print $1 ": " $2}')
        record "$b (first row, last row)" "$first | $last"
    else
        tee -a "$log" <"$out"
        record "$b" FAIL
    fi
done

if [ $have_check = 1 ]; then
    section "cpu backend device-heap tests (meson)"
    if run $meson test -C "$build" --suite device-heap --print-errorlogs; then
        record "meson test --suite device-heap (cpu backend)" PASS
    else
        record "meson test --suite device-heap (cpu backend)" FAIL
    fi
fi

fi # host

if want device; then
    section "device API in CUDA kernels (test/unit/cuda)"
    if [ $have_check = 1 ] && [ -x "$build/test/unit/cuda/cu_device_api" ]; then
        # CUDA_TESTS: names of the tests to run instead of the whole suite;
        # CUDA_TESTS_TIMEOUT: seconds for them (420: on one GPU the proxy runs
        # of nv_device and nv_team take 40-50 s each, two PEs time-sliced).
        say "\$ meson test -C $build ${CUDA_TESTS:---suite cuda} --no-rebuild > cuda_tests.txt"
        # shellcheck disable=SC2086
        timeout "${CUDA_TESTS_TIMEOUT:-420}" $meson test -C "$build" ${CUDA_TESTS:---suite cuda} \
            --print-errorlogs --no-rebuild >"$logs/cuda_tests.txt" 2>&1
        tee -a "$log" <"$logs/cuda_tests.txt" | grep -E '^ *[0-9]+/[0-9]+ ' | tee -a "$log"
        # meson prints "ushmem:cuda / NAME RESULT" or, newer, "cuda - ushmem:NAME RESULT".
        re='^ *[0-9]+/[0-9]+ +(ushmem:cuda / |cuda - ushmem:)([^ ]+) +([A-Z]+).*'
        while read -r line; do
            name=$(sed -E "s%$re%\\2%" <<<"$line")
            result=$(sed -E "s%$re%\\3%" <<<"$line")
            [ "$result" = OK ] && result=PASS
            record "$name" "$result"
        done < <(grep -E "$re" "$logs/cuda_tests.txt")
    else
        record "CUDA device-API tests (not built: no Check or no nvcc)" FAIL
    fi
fi

if want routes; then
    # One GPU per PE: every device call through the proxy (too slow for the
    # suite when two PEs share one GPU), and with mapping off over landing.
    cuda=$build/test/unit/cuda
    if [ "$ngpus" -ge 2 ] && [ -x "$cuda/cu_device_api" ]; then
        for p in cu_device_api cu_device_coll cu_on_stream readme_ring; do
            expect "$p -n 2 (one GPU each), USHMEM_DEVICE_ROUTE=proxy" 0 \
                'all checks passed|received every byte' '' -- \
                env USHMEM_DEVICE_ROUTE=proxy SHMEM_SYMMETRIC_SIZE=256M "${oshrun[@]}" -n 2 "$cuda/$p"
        done
        for p in cu_device_api cu_device_coll readme_ring; do
            expect "$p -n 2 (one GPU each), USHMEM_IPC=0 staging: landing" 0 \
                'all checks passed|received every byte' '' -- \
                env USHMEM_IPC=0 USHMEM_FABRIC_STAGING=1 FI_PROVIDER=tcp SHMEM_SYMMETRIC_SIZE=256M \
                "${oshrun[@]}" -n 2 "$cuda/$p"
        done
        # FI_HMEM: kernels' requests through the proxy to libfabric, which
        # copies the GPU heaps itself; and simulated nodes, two per GPU pair.
        # Stream-ordered calls hand their requests to the proxy too, except
        # the sum reductions (they read the members' arrays through their
        # mappings: refused in one sentence, checked below).
        if [ $have_hmem = 1 ]; then
            for p in cu_device_api cu_device_coll readme_ring "cu_on_stream --no-sums"; do
                # shellcheck disable=SC2086
                expect "$p -n 2 (one GPU each), USHMEM_IPC=0 over FI_HMEM" 0 \
                    'all checks passed|received every byte' '' -- \
                    env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=256M \
                    "${oshrun[@]}" -n 2 $cuda/$p
                # shellcheck disable=SC2086
                expect "$p -n 4, USHMEM_SIM_NODES=2 (libfabric between the nodes)" 0 \
                    'all checks passed|received every byte' '' -- \
                    env USHMEM_SIM_NODES=2 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=256M \
                    "${oshrun[@]}" -n 4 $cuda/$p
            done
            expect "cu_on_stream -n 2, USHMEM_IPC=0: stream sum reductions refused" 1 \
                'reaches only mapped peers' 'all checks passed' -- \
                env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=256M \
                "${oshrun[@]}" -n 2 "$cuda/cu_on_stream"
            # CUDA graphs: a stream call through the proxy is refused while
            # its stream is captured (the proxy takes the request at the
            # call, which a replay cannot repeat), in one sentence naming
            # the call and the PE; captured kernels' device calls replay.
            # Stream order between kernels and stream calls over FI_HMEM.
            for c in put:shmemx_putmem_on_stream barrier:shmemx_barrier_all_on_stream; do
                expect "cu_graph -n 2, USHMEM_IPC=0: captured ${c%%:*} refused" 1 \
                    "${c#*:}: PE [0-9]+ is reached through the proxy thread.*cannot be captured into a graph" \
                    'all checks passed' -- env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=256M \
                    "${oshrun[@]}" -n 2 "$cuda/cu_graph" --refuse "${c%%:*}"
            done
            expect "cu_graph --device-only -n 2, USHMEM_IPC=0 over FI_HMEM" 0 'all checks passed' '' \
                -- env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=256M \
                "${oshrun[@]}" -n 2 "$cuda/cu_graph" --device-only
            for n in 2 4; do
                expect "cu_stream_order -n $n, USHMEM_IPC=0 over FI_HMEM" 0 'all checks passed' '' \
                    -- env USHMEM_IPC=0 FI_PROVIDER=shm SHMEM_SYMMETRIC_SIZE=256M \
                    "${oshrun[@]}" -n $n "$cuda/cu_stream_order"
            done
        fi
    else
        record "CUDA programs through the proxy and over landing, one GPU per PE" \
            "skipped (one GPU)"
    fi
fi

if want sycl; then
    section "SYCL kernels on the GPUs (AdaptiveCpp's cuda target, built by scripts/build-sycl-gpu.sh)"
    sy=${SYCL_GPU_DIR:-.sycl-gpu}
    if [ -x "$sy/bin/sycl_device_api" ]; then
        sylib=$root/$sy/lib:$root/$build/src/host:${CUDA_PATH:-/usr/local/cuda}/lib64
        syrun=(env LD_LIBRARY_PATH="$sylib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
        for p in sycl_device_api sycl_ishmem_shape; do
            for n in 1 2 4; do
                expect "$p -n $n (direct)" 0 'every check passed|all checks passed' 'FAIL' -- \
                    "${syrun[@]}" "${oshrun[@]}" -n $n "$sy/bin/$p"
            done
            for n in 1 2; do
                expect "$p -n $n, USHMEM_DEVICE_ROUTE=proxy" 0 'every check passed|all checks passed' \
                    'FAIL' -- "${syrun[@]}" USHMEM_DEVICE_ROUTE=proxy "${oshrun[@]}" -n $n "$sy/bin/$p"
            done
        done
        expect "sycl_device_api_ring -n 2, proxy (values in the ring)" 0 'every check passed' 'FAIL' -- \
            "${syrun[@]}" USHMEM_DEVICE_ROUTE=proxy "${oshrun[@]}" -n 2 "$sy/bin/sycl_device_api_ring"
        # The SYCL benchmark beside ushmem's CUDA kernels of the same shape,
        # same run (scripts/gpu_bench.sh, part sycl).
        if [ "$ngpus" -ge 2 ]; then
            say "\$ PARTS=sycl scripts/gpu_bench.sh $logs/sycl_bench"
            BUILD_DIR=$build PARTS=sycl SYCL_GPU_DIR=$root/$sy timeout 300 \
                bash scripts/gpu_bench.sh "$logs/sycl_bench" >"$logs/sycl_bench.txt" 2>&1
            grep -E '^metric|^SYCL' "$logs/sycl_bench.txt" | tee -a "$log"
            if grep -Eq '^SYCL put 64 MiB[^|]*\| *[0-9.]+ *\| *[0-9.]+' "$logs/sycl_bench.txt" &&
               grep -Eq '^SYCL long_p[^|]*\| *[0-9.]+ *\| *[0-9.]+' "$logs/sycl_bench.txt" &&
               ! grep -q FAIL "$logs/sycl_bench"/sycl_*_ushmem.txt; then
                record "sycl_bench put and p beside the CUDA kernels (gpu_bench.sh part sycl)" PASS
            else
                record "sycl_bench put and p beside the CUDA kernels (gpu_bench.sh part sycl)" FAIL
            fi
        fi
    else
        record "SYCL programs on the GPUs" "skipped (no $sy: scripts/build-sycl-gpu.sh)"
    fi
fi

if want bench; then
    section "GPU benchmarks beside NVSHMEM and NCCL (scripts/gpu_bench.sh)"
    if BUILD_DIR=$build timeout 480 bash scripts/gpu_bench.sh "$logs/bench" >"$logs/gpu_bench.txt" 2>&1; then
        record "scripts/gpu_bench.sh" PASS
    else
        record "scripts/gpu_bench.sh (rc $?)" FAIL
    fi
    tail -n 30 "$logs/gpu_bench.txt" | tee -a "$log"
fi

# NVSHMEM's own perftests, unchanged, built against ushmem's compatible
# headers and against NVSHMEM, side by side (scripts/nvshmem_suite.sh). The
# NVSHMEM source tree is fetched outside the repository (never committed)
# and named by NVSHMEM_SRC; a copy carried to the GPU machine in the
# ignored folder .nvshmem-src/ is taken when NVSHMEM_SRC is unset.
if want nvshmem; then
    section "NVSHMEM's perftests against ushmem and NVSHMEM (scripts/nvshmem_suite.sh)"
    nvsrc=${NVSHMEM_SRC:-}
    [ -z "$nvsrc" ] && [ -d "$root/.nvshmem-src/perftest" ] && nvsrc=$root/.nvshmem-src
    if [ -n "$nvsrc" ]; then
        say "\$ BUILD_DIR=$build scripts/nvshmem_suite.sh $nvsrc $logs/nvshmem-suite"
        if BUILD_DIR=$build timeout "${NVSHMEM_SUITE_TIMEOUT:-540}" \
            bash scripts/nvshmem_suite.sh "$nvsrc" "$logs/nvshmem-suite" >"$logs/nvshmem_suite.txt" 2>&1; then
            record "NVSHMEM perftests built unchanged, every run exits 0" PASS
        else
            record "NVSHMEM perftests (scripts/nvshmem_suite.sh, rc $?)" FAIL
        fi
        sed -n '/^NVSHMEM perftests/,$p' "$logs/nvshmem_suite.txt" | tee -a "$log"
    else
        record "NVSHMEM perftests" "skipped (no NVSHMEM_SRC, no .nvshmem-src/)"
    fi
fi

section "summary"
printf '%s\n' "${summary[@]}" | tee -a "$log" "$logs/summary.txt"
! printf '%s\n' "${summary[@]}" | grep -q ' FAIL'
