#!/usr/bin/env bash
# Runs the device-side benchmarks of test/perf/cuda on a GPU machine against
# ushmem, NVSHMEM and NCCL side by side in one run, keeps every program's
# output, writes the results as CSV (and plots them when matplotlib is
# there), and ends with one table of ushmem's figures against the others'
# and the targets.
#
# Usage, from anywhere (it works from the repository root):
#   [BUILD_DIR=build-gpu] [NPES=2] [QUICK=1] [PARTS=put,latency,alltoall,nccl,ceiling,proxy,landing,fabric,sycl] \
#       scripts/gpu_bench.sh [OUT_DIR]          (default $BUILD_DIR/bench)
#
# BUILD_DIR  a built meson tree of ushmem with the cuda backend: tools/oshrun,
#            libushmem.so, and tools/oshnvcc when it has one (else nvcc is
#            called with ushmem's include and library directories).
# NPES       PEs (and ranks) per job, default 2.
# QUICK=1    fewer sizes and iterations.
# LAT_ITERS, LAT_REPS  dev_latency's iterations and runs (default 5) instead.
# PARTS      which of put, get, latency, alltoall, nccl, ceiling, proxy, landing, fabric, scopes,
#            a2a_parts to run (comma list); default all but get and
#            a2a_parts (alltoallmem_on_stream from 64 B to 4 MiB beside its
#            pieces, dev_alltoall --parts). ceiling: test/perf/cuda/
#            nvlink_ceiling, what the link between GPUs 0 and 1 carries
#            with no library (needs 2 GPUs); proxy: ushmem's put bandwidth and
#            latencies with USHMEM_DEVICE_ROUTE=proxy, against its direct road;
#            landing: the device calls landed over tcp (USHMEM_IPC=0
#            USHMEM_FABRIC_STAGING=1, no GPU-RMA), back to back and after a
#            quiet spell, against libfabric's own 8-byte message in the same
#            run (test/perf/fabric_floor, needs a build with ofi);
#            fabric: the same over libfabric with the heap registered as GPU
#            memory (USHMEM_IPC=0, FI_PROVIDER=shm, FI_HMEM), when the
#            libfabric the build loads registers CUDA memory (ushmem_info
#            says so; scripts/build-libfabric.sh builds one); scopes: put
#            and get at thread, warp and block scope on 1, 8, 32 and 132
#            blocks and put/getmem_on_stream (the copy engine; with the
#            host's time to queue one call, and beside cudaMemcpyAsync to
#            the mapped peer buffer in each library's job), every size
#            from 8 B to SCOPES_MAX (default 1G), each against NVSHMEM (and,
#            with SCOPES_AGAIN=1, the default, each library's sweep a second
#            time: its lowest ratio against itself is the noise, and the
#            lowest ratio over the sizes both sweeps of both libraries
#            reproduce within 5 %), and the lowest ratio over all of them;
#            sycl: test/perf/sycl's
#            put bandwidth and p latency from SYCL kernels (AdaptiveCpp's
#            cuda target, compiled beforehand by scripts/build-sycl-gpu.sh
#            into SYCL_GPU_DIR, default .sycl-gpu), against ushmem's CUDA
#            kernels of the same shape, when that folder is there.
#
# NVSHMEM comes from the Python package nvidia-nvshmem (nvidia.nvshmem) and
# is started through Open MPI; NCCL from PyTorch through torchrun. Either
# missing shows as n/a. OUT_DIR receives bin/ (the programs), build logs,
# one <program>_<impl>.txt per run, commands.txt, csv/ (results as
# scripts/plot_perf.py reads them), plots/ and summary.txt. Every command runs
# under `timeout`, and the whole script keeps within BENCH_BUDGET_S seconds
# (default 450).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${BUILD_DIR:-build-gpu}
case $build in /*) ;; *) build=$root/$build ;; esac
out=${1:-$build/bench}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
npes=${NPES:-2}
quick=${QUICK:-0}
parts=,${PARTS:-put,latency,alltoall,nccl,ceiling,proxy,landing,fabric,sycl},
budget=${BENCH_BUDGET_S:-450}
bin=$out/bin
csvdir=$out/csv
mkdir -p "$bin" "$csvdir"
rm -f "$csvdir"/*.csv
cmdlog=$out/commands.txt
: >"$cmdlog"
t_start=$SECONDS

# NVLink multicast stays off on shared GPU hosts.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# One node, GPUs over NVLink: NVSHMEM needs no network transport, and
# without one it starts no proxy that its quiet would have to check.
export NVSHMEM_REMOTE_TRANSPORT=${NVSHMEM_REMOTE_TRANSPORT:-none}

say() { printf '%s\n' "$*"; }
want() { case $parts in *,"$1",*) return 0 ;; esac; return 1; }
# Seconds a command may take: its own limit, or less near the end of the budget.
limit() {
    local left=$((budget - (SECONDS - t_start) - 15))
    if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
# run_to FILE SECONDS command...: runs the command under timeout with its
# output in FILE; notes the command in commands.txt. Skips (status 124) when
# the budget is spent.
run_to() {
    local file=$1 t
    t=$(limit "$2")
    shift 2
    printf '%s > %s\n' "$*" "${file#"$out"/}" >>"$cmdlog"
    if [ "$t" -lt 10 ]; then
        say "time budget spent; not run" >"$file"
        return 124
    fi
    timeout -k 10 "$t" "$@" >"$file" 2>&1
}

# ---- ushmem ----
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
oshrun=$build/tools/oshrun
ushmem_lib=$(find "$build" -name 'libushmem.so' -print -quit 2>/dev/null)
ushmem_lib=${ushmem_lib%/*}
have_ushmem=1
if [ ! -x "$oshrun" ] || [ -z "$ushmem_lib" ]; then
    say "no ushmem build in $build (need tools/oshrun and libushmem.so): ushmem is n/a"
    have_ushmem=0
fi

# ---- NVSHMEM and MPI ----
have_nv=0
nv=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])" 2>/dev/null)
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ] && [ -f "$nv/lib/libnvshmem_device.a" ] &&
    command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    have_nv=1
    nv_host=-l:libnvshmem_host.so.3
    [ -e "$nv/lib/libnvshmem_host.so" ] && nv_host=-lnvshmem_host
    # nvcc takes include, library and -l options as they are; anything else
    # mpicc would give gcc goes through -Xcompiler or -Xlinker.
    nvccify() {
        local f
        for f in "$@"; do
            case $f in
            -I* | -L* | -l* | -D*) printf '%s\n' "$f" ;;
            -Wl,*) printf '%s\n' -Xlinker "${f#-Wl,}" ;;
            *) printf '%s\n' -Xcompiler "$f" ;;
            esac
        done
    }
    # The flags are words; splitting them is the point.
    # shellcheck disable=SC2046
    mapfile -t mpi_cflags < <(nvccify $(mpicc --showme:compile))
    # shellcheck disable=SC2046
    mapfile -t mpi_lflags < <(nvccify $(mpicc --showme:link))
else
    say "NVSHMEM (python package nvidia-nvshmem with include/ and lib/) or Open MPI missing: NVSHMEM is n/a"
fi

# ---- PyTorch ----
have_torch=0
torchrun=()
if want nccl; then
    if python3 -c 'import torch, torch.distributed as d; assert torch.cuda.is_available() and d.is_nccl_available()' 2>/dev/null; then
        have_torch=1
        if command -v torchrun >/dev/null; then torchrun=(torchrun); else torchrun=(python3 -m torch.distributed.run); fi
    else
        say "PyTorch with CUDA and NCCL missing: NCCL is n/a"
    fi
fi

# ---- build, every program for both libraries at once ----
progs=()
{ want put || want get || want proxy || want fabric || want scopes || want sycl; } && progs+=(dev_put_bw)
{ want latency || want proxy || want landing || want fabric || want sycl; } && progs+=(dev_latency)
{ want alltoall || want a2a_parts; } && progs+=(dev_alltoall)

build_ushmem() {
    local p=$1 src=test/perf/cuda/$1.cu exe=$bin/$1_ushmem log=$out/build_$1_ushmem.log
    rm -f "$exe"
    if [ -x "$build/tools/oshnvcc" ]; then
        printf '%s\n' "OSHCC_INCDIR=$root/include OSHCC_LIBDIR=$ushmem_lib $build/tools/oshnvcc -O3 -arch=sm_90 -o $exe $src" >>"$cmdlog"
        OSHCC_INCDIR=$root/include OSHCC_LIBDIR=$ushmem_lib timeout 240 \
            "$build/tools/oshnvcc" -O3 -arch=sm_90 -o "$exe" "$src" >"$log" 2>&1 && return 0
    fi
    printf '%s\n' "nvcc -O3 -arch=sm_90 -I$root/include -o $exe $src -L$ushmem_lib -lushmem -Xlinker -rpath=$ushmem_lib" >>"$cmdlog"
    timeout 240 nvcc -O3 -arch=sm_90 -I"$root/include" -o "$exe" "$src" \
        -L"$ushmem_lib" -lushmem -Xlinker -rpath="$ushmem_lib" >>"$log" 2>&1
    [ -x "$exe" ] || say "build of $p for ushmem failed: see ${log#"$out"/}"
}
build_nvshmem() {
    local p=$1 src=test/perf/cuda/$1.cu exe=$bin/$1_nvshmem log=$out/build_$1_nvshmem.log
    local cmd=(nvcc -O3 -rdc=true -arch=sm_90 -DBENCH_NVSHMEM -I"$nv/include" "${mpi_cflags[@]}"
        -o "$exe" "$src" -L"$nv/lib" "$nv_host" -lnvshmem_device "${mpi_lflags[@]}"
        -Xlinker -rpath="$nv/lib")
    rm -f "$exe"
    printf '%s\n' "${cmd[*]}" >>"$cmdlog"
    timeout 300 "${cmd[@]}" >"$log" 2>&1 && return 0
    # Some setups want the driver library named at link time.
    printf '%s\n' "${cmd[*]} -lcuda" >>"$cmdlog"
    timeout 300 "${cmd[@]}" -lcuda >>"$log" 2>&1
    [ -x "$exe" ] || say "build of $p for NVSHMEM failed: see ${log#"$out"/}"
}
say "building ${progs[*]} for$([ $have_ushmem = 1 ] && echo ' ushmem')$([ $have_nv = 1 ] && echo ' NVSHMEM') ..."
for p in "${progs[@]}"; do
    [ $have_ushmem = 1 ] && build_ushmem "$p" &
    [ $have_nv = 1 ] && build_nvshmem "$p" &
done
wait
say "built in $((SECONDS - t_start)) s"

# ---- runs ----
# SHMEM_SYMMETRIC_SIZE and NVSHMEM_SYMMETRIC_SIZE: the alltoall needs twice
# its largest size, plus room for the libraries' own.
# oshrun's own limit ends the job a little before timeout's would, so that
# it reports which PE hung.
run_ushmem() { # FILE SECONDS HEAP program args...
    local file=$1 t heap=$3
    t=$(limit "$2")
    shift 3
    run_to "$file" "$t" env SHMEM_SYMMETRIC_SIZE="$heap" \
        "$oshrun" --timeout "$((t > 15 ? t - 5 : 10))" -n "$npes" "$@"
}
run_nvshmem() { # FILE SECONDS HEAP_BYTES program args...
    local file=$1 t=$2 heap=$3
    shift 3
    run_to "$file" "$t" env NVSHMEM_SYMMETRIC_SIZE="$heap" \
        LD_LIBRARY_PATH="$nv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        mpirun --allow-run-as-root -np "$npes" --bind-to none \
        -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_REMOTE_TRANSPORT \
        -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH "$@"
}
# run_impl IMPL FILE SECONDS HEAP_GIB program args...: run_ushmem or
# run_nvshmem by IMPL, the heap given in GiB to either.
run_impl() {
    local impl=$1 file=$2 t=$3 gib=$4
    shift 4
    if [ "$impl" = ushmem ]; then
        run_ushmem "$file" "$t" "${gib}G" "$@"
    else
        run_nvshmem "$file" "$t" "$((gib << 30))" "$@"
    fi
}
# to_csv TXT NAME IMPL [LABEL]: the CSV block a program printed ("# NAME,IMPL,PES",
# its header, its rows and comments, up to the next such line) as
# csv/NAME_LABEL.csv, LABEL (default IMPL) named as the implementation in it.
to_csv() {
    local txt=$1 name=$2 impl=$3 label=${4:-$3} csv=$csvdir/$2_${4:-$3}.csv
    awk -v head="# $name,$impl," -v impl="$impl" -v label="$label" '
        index($0, head) == 1 { on = 1; sub("," impl ",", "," label ","); print; next }
        on && /^# [A-Za-z0-9_.+-]+,[A-Za-z0-9_.+-]+,[0-9]+$/ { on = 0; next }
        on && /^#/ { print; next }
        on && /^[a-z_]+(,[a-z_]+)+$/ { print; next }
        on && /^[A-Za-z0-9_.+-]+(,[-+0-9.eE]+)+$/ { print }' "$txt" >"$csv"
    [ -s "$csv" ] || rm -f "$csv"
}
# bench PROG NAME SECONDS UHEAP NVHEAP args...: runs PROG for each library
# built, side by side, and keeps the outputs and CSVs.
bench() {
    local prog=$1 name=$2 t=$3 uheap=$4 nvheap=$5 rc
    shift 5
    if [ $have_ushmem = 1 ] && [ -x "$bin/${prog}_ushmem" ]; then
        run_ushmem "$out/${name}_ushmem.txt" "$t" "$uheap" "$bin/${prog}_ushmem" "$@"
        rc=$?
        [ $rc = 0 ] || say "$name (ushmem) exited $rc: see ${name}_ushmem.txt"
        to_csv "$out/${name}_ushmem.txt" "$name" ushmem
    fi
    if [ $have_nv = 1 ] && [ -x "$bin/${prog}_nvshmem" ]; then
        run_nvshmem "$out/${name}_nvshmem.txt" "$t" "$nvheap" "$bin/${prog}_nvshmem" "$@"
        rc=$?
        [ $rc = 0 ] || say "$name (NVSHMEM) exited $rc: see ${name}_nvshmem.txt"
        to_csv "$out/${name}_nvshmem.txt" "$name" nvshmem
    fi
}

# Every latency is the median of five runs in one job (each run from
# zeroed words, with its warm-up), the lowest and highest in the output.
if [ "$quick" = 1 ]; then
    put_args=(--min-size 1M --max-size 64M --iters 20)
    lat_args=(--iters 2000 --reps 5)
    a2a_args=(--min-size 64M --max-size 1G --iters 10 --warmup 2)
else
    put_args=(--min-size 8 --max-size 64M --iters 50)
    lat_args=(--reps 5)
    a2a_args=(--min-size 1M --max-size 1G --iters 20 --warmup 5)
fi
# LAT_ITERS (and LAT_REPS, default 5): fewer latency iterations, for PEs
# that share a GPU, where a spinning barrier takes a time slice (ms) each.
[ -n "${LAT_ITERS:-}" ] && lat_args=(--iters "$LAT_ITERS" --reps "${LAT_REPS:-5}")
say "running with $npes PEs$([ "$quick" = 1 ] && echo ', quick') ..."
want put && bench dev_put_bw dev_put_bw_block 90 1G 1073741824 \
    --scope block --blocks 32 --threads 1024 "${put_args[@]}"
want get && bench dev_put_bw dev_get_bw_block 90 1G 1073741824 \
    --get --scope block --blocks 32 --threads 1024 "${put_args[@]}"
want latency && bench dev_latency dev_latency 120 512M 268435456 "${lat_args[@]}"
# The alltoall kernel runs one block per multiprocessor, for ushmem and
# NVSHMEM alike: its blocks start at different PEs, so the local copy
# overlaps the link traffic, and more blocks keep both busy (on two H100s,
# 1 GiB: 278 GB/s at 32 blocks, 315 at 64, 341 at 132).
want alltoall && bench dev_alltoall dev_alltoall 150 3G 3221225472 \
    --blocks sms --threads 1024 "${a2a_args[@]}"
# The same from the host's alltoallmem_on_stream: ushmem's copy engines
# (no SM busy), NVSHMEM's own kernel.
want alltoall && bench dev_alltoall dev_alltoall_stream 150 3G 3221225472 \
    --on-stream --min-size 64M --max-size 1G --iters 10 --warmup 2
# Part a2a_parts: the small sizes of the same call, with its pieces (two
# barriers on the stream, the puts on the stream) timed alone beside it.
want a2a_parts && bench dev_alltoall dev_alltoall_stream_parts 90 1G 1073741824 \
    --on-stream --parts --min-size 64 --max-size 4M --iters 20 --warmup 5
# SYCL kernels beside ushmem's CUDA kernels of the same shape (32 work-groups
# or blocks of 1024 putting with the group's call; the p ping-pong), same
# run; the CUDA ones are run here unless the put and latency parts ran them.
sycl_dir=${SYCL_GPU_DIR:-$root/.sycl-gpu}
if want sycl && [ $have_ushmem = 1 ] && [ -x "$sycl_dir/bin/sycl_bench" ]; then
    sycl_lib=$sycl_dir/lib:$ushmem_lib:${CUDA_PATH:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    sycl_put=(--min-size 64K --max-size 64M --iters 20)
    LD_LIBRARY_PATH=$sycl_lib run_ushmem "$out/sycl_put_bw_ushmem.txt" 90 1G \
        "$sycl_dir/bin/sycl_bench" --op put --groups 32 --items 1024 "${sycl_put[@]}" ||
        say "sycl_bench --op put exited $?: see sycl_put_bw_ushmem.txt"
    to_csv "$out/sycl_put_bw_ushmem.txt" sycl_put_bw_work_group ushmem
    LD_LIBRARY_PATH=$sycl_lib run_ushmem "$out/sycl_latency_ushmem.txt" 60 512M \
        "$sycl_dir/bin/sycl_bench" --op p ||
        say "sycl_bench --op p exited $?: see sycl_latency_ushmem.txt"
    to_csv "$out/sycl_latency_ushmem.txt" sycl_latency ushmem
    if ! want put && [ -x "$bin/dev_put_bw_ushmem" ]; then
        run_ushmem "$out/dev_put_bw_block_ushmem.txt" 90 1G "$bin/dev_put_bw_ushmem" \
            --scope block --blocks 32 --threads 1024 "${sycl_put[@]}"
        to_csv "$out/dev_put_bw_block_ushmem.txt" dev_put_bw_block ushmem
    fi
    if ! want latency && [ -x "$bin/dev_latency_ushmem" ]; then
        run_ushmem "$out/dev_latency_ushmem.txt" 60 512M "$bin/dev_latency_ushmem" --op p
        to_csv "$out/dev_latency_ushmem.txt" dev_latency ushmem
    fi
fi
# ushmem through its proxy thread: the same programs, every device call on
# the ring.
if want proxy && [ $have_ushmem = 1 ]; then
    if [ -x "$bin/dev_put_bw_ushmem" ] && [ "$ngpus" -ge 2 ]; then
        run_ushmem "$out/dev_put_bw_block_proxy.txt" 90 1G env USHMEM_DEVICE_ROUTE=proxy \
            "$bin/dev_put_bw_ushmem" --scope block --blocks 32 --threads 1024 "${put_args[@]}" ||
            say "dev_put_bw through the proxy exited $?: see dev_put_bw_block_proxy.txt"
        to_csv "$out/dev_put_bw_block_proxy.txt" dev_put_bw_block ushmem ushmem-proxy
    fi
    # Back to back (--iters 300 in one kernel), then one operation after a
    # quiet spell of T us (median of 15 launches): "busy", PE 0's GPU
    # computing T before it (a kernel spinning on the same stream: only the
    # library's helper threads are idle, as between the phases of a GPU
    # program), and "idle", PE 0's host sleeping T with its GPU idle too
    # (which the GPU's own power management also pays: the direct road and
    # NVSHMEM beside it). The proxy awake (USHMEM_PROXY_IDLE=spin, what auto
    # takes on a GPU node with CPUs to spare) and asleep (sleep: what it did
    # before); then each one's CPU share over 10 s idle.
    busy_list=${PROXY_BUSY_US:-0,100,1000,10000,100000,1000000}
    idle_list=${PROXY_IDLE_US:-0,1000,10000,100000}
    # signal_set: the signal ping-pong with a set, which the proxy writes as
    # a store; the signal's add is an atomic, which on the copy-engine road
    # is a kernel (the driver has no atomic among its stream operations).
    # signal_barrier: the barrier written with signals and nothing else
    # (back to back only), what the device barrier's fence and bookkeeping
    # add to one request each way.
    lat_ops=p,g,fadd,signal,signal_set,barrier
    # With one GPU, two PEs would take turns on it: one PE instead, whose
    # requests go to itself through its proxy (dev_latency --self: p and
    # the signal one hop a round), against the floor on that GPU
    # (proxy_floor --one-gpu).
    self=()
    [ "$ngpus" -lt 2 ] && self=(--self)
    # What the proxy did before folding the counter's copy into the request
    # (and, on one GPU, before a PE's values to itself went to its heap).
    before=(USHMEMI_PROXY_FOLD=0)
    [ "$ngpus" -lt 2 ] && before+=(USHMEMI_RING_DEVICE=3)
    if [ -x "$bin/dev_latency_ushmem" ]; then
        saved_npes=$npes
        [ "$ngpus" -lt 2 ] && npes=1
        for mode in spin sleep; do
            list=$busy_list
            [ $mode = sleep ] && list=$idle_list
            run_ushmem "$out/dev_latency_proxy_$mode.txt" 200 512M env USHMEM_DEVICE_ROUTE=proxy \
                USHMEM_PROXY_IDLE=$mode "$bin/dev_latency_ushmem" --op $lat_ops "${self[@]}" \
                --iters 300 --idle-us "$list" --idle-how compute --idle-cpu 10 ||
                say "dev_latency through the proxy ($mode) exited $?: see dev_latency_proxy_$mode.txt"
            to_csv "$out/dev_latency_proxy_$mode.txt" dev_latency ushmem ushmem-proxy-$mode
        done
        for form in now before now2 before2; do
            env=()
            case $form in before*) env=("${before[@]}") ;; esac
            run_ushmem "$out/dev_latency_proxy_$form.txt" 60 512M env USHMEM_DEVICE_ROUTE=proxy \
                USHMEM_PROXY_IDLE=spin "${env[@]}" "$bin/dev_latency_ushmem" \
                --op $lat_ops,signal_barrier "${self[@]}" --iters 3000 --reps 3 ||
                say "dev_latency through the proxy ($form) exited $?: see dev_latency_proxy_$form.txt"
            to_csv "$out/dev_latency_proxy_$form.txt" dev_latency ushmem ushmem-proxy-$form
        done
        npes=$saved_npes
        cp -f "$csvdir/dev_latency_ushmem-proxy-spin.csv" "$csvdir/dev_latency_ushmem-proxy.csv" 2>/dev/null
    fi
    if [ -x "$bin/dev_latency_ushmem" ] && [ "$ngpus" -ge 2 ]; then
        run_ushmem "$out/dev_latency_proxy_spin_hostidle.txt" 90 512M env USHMEM_DEVICE_ROUTE=proxy \
            USHMEM_PROXY_IDLE=spin "$bin/dev_latency_ushmem" --op $lat_ops --iters 10 \
            --idle-us "$idle_list" ||
            say "dev_latency through the proxy, host idle, exited $?: see dev_latency_proxy_spin_hostidle.txt"
        to_csv "$out/dev_latency_proxy_spin_hostidle.txt" dev_latency ushmem ushmem-proxy-hostidle
        run_ushmem "$out/dev_latency_direct_hostidle.txt" 90 512M \
            "$bin/dev_latency_ushmem" --op $lat_ops --iters 10 --idle-us "$idle_list" ||
            say "dev_latency direct, host idle, exited $?: see dev_latency_direct_hostidle.txt"
        to_csv "$out/dev_latency_direct_hostidle.txt" dev_latency ushmem ushmem-direct-hostidle
    fi
    if [ -x "$bin/dev_latency_nvshmem" ] && [ $have_nv = 1 ] && [ "$ngpus" -ge 2 ]; then
        run_nvshmem "$out/dev_latency_hostidle_nvshmem.txt" 90 268435456 \
            "$bin/dev_latency_nvshmem" --op $lat_ops --iters 10 --idle-us "$idle_list" \
            --idle-cpu 10 ||
            say "dev_latency --idle-us (NVSHMEM) exited $?: see dev_latency_hostidle_nvshmem.txt"
        to_csv "$out/dev_latency_hostidle_nvshmem.txt" dev_latency nvshmem nvshmem-hostidle
    fi
    # The floor: a host thread driving the other GPU with no ring and no
    # library (test/perf/cuda/proxy_floor), in the same run.
    if [ "$ngpus" -ge 1 ]; then
        exe=$bin/proxy_floor
        one=()
        [ "$ngpus" -lt 2 ] && one=(--one-gpu)
        printf '%s\n' "nvcc -O3 -arch=sm_90 -o $exe test/perf/cuda/proxy_floor.cu" >>"$cmdlog"
        if timeout 240 nvcc -O3 -arch=sm_90 -o "$exe" test/perf/cuda/proxy_floor.cu \
            >"$out/build_proxy_floor.log" 2>&1; then
            run_to "$out/proxy_floor_raw.txt" 90 "$exe" --iters 2000 "${one[@]}" ||
                say "proxy_floor exited $?: see proxy_floor_raw.txt"
            awk -F, 'BEGIN { print "# proxy_floor,raw,2"; print "what,us" }
                     /^hop-[a-z+-]+,[0-9.]+,us$/ { print $1 "," $2 }' \
                "$out/proxy_floor_raw.txt" >"$csvdir/proxy_floor_raw.csv"
        else
            say "build of proxy_floor failed: see build_proxy_floor.log"
        fi
    fi
    # What sleeps between two GPUs after idle, with no library
    # (test/perf/cuda/link_idle): one op from GPU 0 into GPU 1 after T ms,
    # alone and with each keeper running meanwhile.
    if [ "$ngpus" -ge 2 ]; then
        exe=$bin/link_idle
        printf '%s\n' "nvcc -O3 -arch=sm_90 -o $exe test/perf/cuda/link_idle.cu" >>"$cmdlog"
        if timeout 240 nvcc -O3 -arch=sm_90 -o "$exe" test/perf/cuda/link_idle.cu \
            >"$out/build_link_idle.log" 2>&1; then
            run_to "$out/link_idle_raw.txt" 150 "$exe" --idle-ms "${LINK_IDLE_MS:-0,10,30,100,300}" \
                --reps 5 --keepers none,link,far,kernel0,memop,host ||
                say "link_idle exited $?: see link_idle_raw.txt"
            to_csv "$out/link_idle_raw.txt" link_idle raw
        else
            say "build of link_idle failed: see build_link_idle.log"
        fi
    fi
fi
# Landing: every peer as if on another node whose fabric has no GPU-RMA
# (USHMEM_IPC=0 USHMEM_FABRIC_STAGING=1, tcp), each device call a request
# and its reply through the proxy; beside it libfabric's own message on the
# same provider with no library in the path (test/perf/fabric_floor), both
# back to back and after PE 0 was busy T.
if want landing && [ $have_ushmem = 1 ]; then
    land_list=${LANDING_IDLE_US:-1000,10000,100000}
    floor_exe=$build/test/perf/fabric_floor
    if [ -x "$floor_exe" ]; then
        # Two PEs whatever NPES: a ping-pong.
        saved_npes=$npes
        npes=2
        run_ushmem "$out/fabric_floor_raw.txt" 60 64M env FI_PROVIDER=tcp USHMEM_BACKEND=cpu \
            "$floor_exe" --idle-us "$land_list" ||
            say "fabric_floor exited $?: see fabric_floor_raw.txt"
        npes=$saved_npes
        awk 'BEGIN { print "# fabric_floor,raw,2"; print "what,us" }
             /^back to back / { print "msg," $4 }
             /^after [0-9]+ us / { print "msg_idle" $2 "," $4 }' \
            "$out/fabric_floor_raw.txt" >"$csvdir/fabric_floor_raw.csv"
    else
        say "landing: no $floor_exe (a build without ofi): the fabric's floor is n/a"
    fi
    if [ -x "$bin/dev_latency_ushmem" ]; then
        run_ushmem "$out/dev_latency_landing.txt" 150 512M env USHMEM_IPC=0 \
            USHMEM_FABRIC_STAGING=1 FI_PROVIDER=tcp USHMEM_PROXY_IDLE=spin \
            "$bin/dev_latency_ushmem" --op p,g,fadd --iters 300 --idle-us "$land_list" \
            --idle-how compute ||
            say "dev_latency over landing exited $?: see dev_latency_landing.txt"
        to_csv "$out/dev_latency_landing.txt" dev_latency ushmem ushmem-landing
    fi
fi
# ushmem over libfabric with FI_HMEM: every peer as if on another node, the
# heap registered as CUDA memory with the shm provider, device calls through
# the proxy to libfabric. Only where the build's libfabric can register it.
if want fabric && [ $have_ushmem = 1 ]; then
    # Read whole first: under pipefail, grep -q leaving early fails the pipe.
    info_text=$("$build/tools/ushmem_info" 2>/dev/null)
    if grep -q 'GPU memory it registers here: cuda' <<<"$info_text"; then
        fab=(env USHMEM_IPC=0 FI_PROVIDER=shm)
        if [ -x "$bin/dev_put_bw_ushmem" ]; then
            run_ushmem "$out/dev_put_bw_block_fabric.txt" 90 1G "${fab[@]}" \
                "$bin/dev_put_bw_ushmem" --scope block --blocks 32 --threads 1024 \
                --min-size 64K --max-size 64M --iters 10 ||
                say "dev_put_bw over libfabric exited $?: see dev_put_bw_block_fabric.txt"
            to_csv "$out/dev_put_bw_block_fabric.txt" dev_put_bw_block ushmem ushmem-fabric
            # Stream-ordered puts: each one a request the stream hands to
            # the proxy (trigger word, libfabric, done word).
            run_ushmem "$out/dev_put_bw_stream_fabric.txt" 90 1G "${fab[@]}" \
                "$bin/dev_put_bw_ushmem" --scope stream --min-size 64K --max-size 64M --iters 10 ||
                say "dev_put_bw --scope stream over libfabric exited $?: see dev_put_bw_stream_fabric.txt"
            to_csv "$out/dev_put_bw_stream_fabric.txt" dev_put_bw_stream ushmem ushmem-fabric
        fi
        if [ -x "$bin/dev_latency_ushmem" ]; then
            run_ushmem "$out/dev_latency_fabric.txt" 180 512M "${fab[@]}" \
                "$bin/dev_latency_ushmem" --op p,g,fadd,signal,barrier,barrier_stream --iters 100 \
                --idle-us "${FABRIC_IDLE_US:-0,1000,10000,100000}" --idle-cpu 10 ||
                say "dev_latency over libfabric exited $?: see dev_latency_fabric.txt"
            to_csv "$out/dev_latency_fabric.txt" dev_latency ushmem ushmem-fabric
        fi
    else
        say "fabric: the libfabric this build loads does not register CUDA memory" \
            "(ushmem_info); build one with scripts/build-libfabric.sh: skipped"
    fi
fi
# What the link carries with no library at all.
if want ceiling && [ "$ngpus" -ge 2 ]; then
    exe=$bin/nvlink_ceiling
    printf '%s\n' "nvcc -O3 -arch=sm_90 -o $exe test/perf/cuda/nvlink_ceiling.cu" >>"$cmdlog"
    if timeout 240 nvcc -O3 -arch=sm_90 -o "$exe" test/perf/cuda/nvlink_ceiling.cu \
        >"$out/build_nvlink_ceiling.log" 2>&1; then
        run_to "$out/nvlink_ceiling_raw.txt" 90 "$exe" --size 64M \
            --iters "$([ "$quick" = 1 ] && echo 20 || echo 50)" ||
            say "nvlink_ceiling exited $?: see nvlink_ceiling_raw.txt"
        to_csv "$out/nvlink_ceiling_raw.txt" nvlink_ceiling raw
    else
        say "build of nvlink_ceiling failed: see build_nvlink_ceiling.log"
    fi
fi
if want nccl && [ $have_torch = 1 ]; then
    run_to "$out/nccl_alltoall_nccl.txt" 150 "${torchrun[@]}" --standalone \
        --nproc_per_node="$npes" scripts/nccl_alltoall.py "${a2a_args[@]}"
    rc=$?
    [ $rc = 0 ] || say "nccl_alltoall exited $rc: see nccl_alltoall_nccl.txt"
    to_csv "$out/nccl_alltoall_nccl.txt" nccl_alltoall nccl
fi

# scopes (last: the longest part, so that the budget cuts it rather than the
# others): put and get at thread, warp and block scope on 1, 8, 32 and 132
# blocks of 1024 threads, and the host's putmem_on_stream/getmem_on_stream
# (the copy engine, no kernel), every size from 8 B to SCOPES_MAX (default
# 1G), each beside NVSHMEM: one job a library (each job's start costs
# seconds), every size the fastest of three runs (a short kernel's time
# carries the launch's jitter), iterations capped at 2 GiB a size;
# csv/dev_OP_bw_SCOPE-bBLOCKS_IMPL.csv (stream: dev_OP_bw_stream_IMPL.csv).
scope_blocks=(1 8 32 132)
scope_args=(--op "put,get" --scope "thread,warp,block,stream,raw_stream"
    --blocks "$(IFS=,; echo "${scope_blocks[*]}")" --threads 1024 --min-size 8
    --max-size "${SCOPES_MAX:-1G}" --iters 50 --reps 3 --max-bytes 2G)
# Then (SCOPES_AGAIN=1, the default) each library's sweep once more, as
# IMPL-again: the lowest ratio of a library against itself is what the
# noise alone makes of a single size, the scale for reading the lowest
# ushmem/NVSHMEM ratio.
if want scopes; then
    jobs=(ushmem nvshmem)
    [ "${SCOPES_AGAIN:-1}" = 1 ] && jobs+=(ushmem-again nvshmem-again)
    for job in "${jobs[@]}"; do
        impl=${job%-again}
        [ -x "$bin/dev_put_bw_$impl" ] || continue
        f=$out/dev_put_bw_scopes_$job.txt
        run_impl $impl "$f" 240 3 "$bin/dev_put_bw_$impl" "${scope_args[@]}" ||
            say "dev_put_bw, scopes ($job) exited $?: see ${f##*/}"
        for op in put get; do
            for sc in thread warp block; do
                for b in "${scope_blocks[@]}"; do
                    to_csv "$f" "dev_${op}_bw_$sc-b$b" $impl "$job"
                done
            done
            to_csv "$f" "dev_${op}_bw_stream" $impl "$job"
            to_csv "$f" "dev_${op}_raw_stream" $impl "$job"
        done
    done
fi

# Small puts on a stream timed on the GPU alone (--hold: every timed call
# queued behind a kernel that holds the stream), beside the rows above,
# where the host's queueing sets the pace; csv/dev_put_bw_stream_IMPL-held.csv.
held_args=(--op put --scope stream --min-size 8 --max-size 1M --iters 50 --reps 5 --hold)
if want scopes; then
    for impl in ushmem nvshmem; do
        [ -x "$bin/dev_put_bw_$impl" ] || continue
        f=$out/dev_put_bw_stream_held_$impl.txt
        run_impl $impl "$f" 60 1 "$bin/dev_put_bw_$impl" "${held_args[@]}" ||
            say "dev_put_bw --hold ($impl) exited $?: see ${f##*/}"
        to_csv "$f" dev_put_bw_stream $impl $impl-held
    done
fi

# ---- the table ----
# val NAME IMPL KEY [COLUMN]: a value from csv/NAME_IMPL.csv, or nothing.
# The floor's hop that a proxied op needs: a store, a copy or a kernel.
floor_hop() {
    case $1 in
    p | signal_barrier) echo hop-memop ;;
    g | signal | signal_set) echo hop-copy ;;
    fadd) echo hop-kernel ;;
    esac
}
val() {
    local csv=$csvdir/$1_$2.csv
    [ -f "$csv" ] || return 0
    awk -F, -v k="$3" -v c="${4:-2}" '$1 == k { print $c; exit }' "$csv"
}
rows=()
# row METRIC USHMEM OTHER TARGET: TARGET is ">=X", "<=X" (ratio ushmem/other)
# or "-" for a figure shown without a target.
row() {
    local metric=$1 u=${2:-n/a} o=${3:-n/a} target=$4 ratio=n/a met=-
    if [ "$u" != n/a ] && [ "$o" != n/a ]; then
        ratio=$(awk -v a="$u" -v b="$o" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f", a / b }')
    fi
    if [ "$target" != - ]; then
        met=n/a
        if [ "$ratio" != n/a ]; then
            met=$(awk -v r="$ratio" -v t="$target" 'BEGIN {
                op = substr(t, 1, 2); x = substr(t, 3) + 0
                print ((op == ">=" && r >= x) || (op == "<=" && r <= x)) ? "yes" : "NO" }')
        fi
        target="${target}x"
    fi
    rows+=("$(printf '%-48s | %9s | %12s | %5s | %6s | %s' "$metric" "$u" "$o" "$ratio" "$target" "$met")")
}
mib16=16777216
mib64=67108864
gib1=1073741824
# put_at SIZE IMPL: putmem_nbi_block from 32 blocks of 1024 at SIZE, from
# the scopes sweep (to 1 GiB) when it ran, else from the put part.
put_at() {
    local v
    v=$(val dev_put_bw_block-b32 "$2" "$1")
    [ -n "$v" ] || v=$(val dev_put_bw_block "$2" "$1")
    printf '%s' "$v"
}
# lowest_ratio OP [A B]: the lowest A/B bandwidth ratio (default ushmem
# over nvshmem, the labels of the CSVs) over every scope, block count and
# size of the scopes sweep, as "RATIO SCOPE SIZE".
lowest_ratio() {
    local f u lo="" a=${2:-ushmem} b=${3:-nvshmem}
    for u in "$csvdir"/dev_"$1"_bw_*_"$a".csv; do
        f=${u%_"$a".csv}_$b.csv
        [ -f "$u" ] && [ -f "$f" ] || continue
        lo=$(awk -F, -v cfg="$(basename "${u%_"$a".csv}")" -v lo="$lo" '
            $1 !~ /^[0-9]+$/ { next }
            FNR == NR { nv[$1] = $2; next }
            ($1 in nv) && nv[$1] > 0 {
                r = $2 / nv[$1]
                split(lo, l, " ")
                if (lo == "" || r < l[1] + 0) lo = sprintf("%.3f %s %s", r, cfg, $1)
            }
            END { print lo }' "$f" "$u")
    done
    printf '%s' "$lo"
}
# stable_ratio OP: with the second sweeps (SCOPES_AGAIN), the lowest
# ushmem/NVSHMEM ratio of the better of each library's two figures, over
# the sizes where each library's two sweeps agree within 5 %: a ratio the
# run reproduced, as "RATIO SCOPE SIZE".
stable_ratio() {
    local u lo=""
    for u in "$csvdir"/dev_"$1"_bw_*_ushmem.csv; do
        local base=${u%_ushmem.csv}
        [ -f "$base"_ushmem-again.csv ] && [ -f "$base"_nvshmem.csv ] &&
            [ -f "$base"_nvshmem-again.csv ] || continue
        lo=$(awk -F, -v cfg="$(basename "$base")" -v lo="$lo" '
            $1 !~ /^[0-9]+$/ { next }
            FILENAME ~ /_ushmem\.csv$/ { u1[$1] = $2 }
            FILENAME ~ /_ushmem-again\.csv$/ { u2[$1] = $2 }
            FILENAME ~ /_nvshmem\.csv$/ { n1[$1] = $2 }
            FILENAME ~ /_nvshmem-again\.csv$/ { n2[$1] = $2 }
            function near(a, b) { return a > 0 && b > 0 && (a > b ? a - b : b - a) <= 0.05 * (a > b ? a : b) }
            END {
                for (k in u1) {
                    if (!(k in u2) || !(k in n1) || !(k in n2)) continue
                    if (!near(u1[k], u2[k]) || !near(n1[k], n2[k])) continue
                    u = u1[k] > u2[k] ? u1[k] : u2[k]
                    n = n1[k] > n2[k] ? n1[k] : n2[k]
                    split(lo, l, " ")
                    if (lo == "" || u / n < l[1] + 0) lo = sprintf("%.3f %s %s", u / n, cfg, k)
                }
                print lo
            }' "$u" "$base"_ushmem-again.csv "$base"_nvshmem.csv "$base"_nvshmem-again.csv)
    done
    printf '%s' "$lo"
}
# Issue 20's targets, each beside the measurement that bounds it (the
# floors: the same loops with no library, or what the link carries).
if want scopes; then
    for op in put get; do
        read -r r cfg sz <<<"$(lowest_ratio $op)"
        [ -n "$r" ] && row "every size/scope/blocks: lowest $op ratio (${cfg#dev_"${op}"_bw_}, $sz B)" \
            "$r" 1 ">=1.0"
        for impl in ushmem nvshmem; do
            read -r r cfg sz <<<"$(lowest_ratio $op "$impl-again" $impl)"
            [ -n "$r" ] && row "noise: lowest $op ratio, $impl's 2nd job / 1st (${cfg#dev_"${op}"_bw_}, $sz B)" \
                "$r" 1 -
        done
        read -r r cfg sz <<<"$(stable_ratio $op)"
        [ -n "$r" ] && row "lowest $op ratio both sweeps reproduce within 5% (${cfg#dev_"${op}"_bw_}, $sz B)" \
            "$r" 1 -
    done
fi
row "put bw 64 MiB, block, 32x1024 (GB/s)" "$(val dev_put_bw_block ushmem $mib64)" \
    "$(val dev_put_bw_block nvshmem $mib64)" -
for sz in $mib16 $mib64 $gib1; do
    u=$(put_at "$sz" ushmem)
    [ -n "$u" ] || continue
    row "putmem_nbi_block 32x1024, $((sz >> 20)) MiB (GB/s)" "$u" "$(put_at "$sz" nvshmem)" ">=1.05"
done
# The most the SMs' copies carry (16-byte stores or bulk copies, any block
# count) against NVSHMEM's put: the highest ratio any kernel put could show.
best_sm=$(awk -F, 'NR > 1 && $1 ~ /^(sm|tma)-/ && $2 + 0 > b { b = $2 + 0 } END { if (b) print b }' \
    "$csvdir/nvlink_ceiling_raw.csv" 2>/dev/null)
row "ceiling: SMs' best copy, 64 MiB, vs NVSHMEM's put" "$best_sm" \
    "$(val dev_put_bw_block nvshmem $mib64)" -
want scopes && row "put on stream (copy engine), 64 MiB (GB/s), vs link ceiling ce" \
    "$(val dev_put_bw_stream ushmem $mib64)" "$(val nvlink_ceiling raw ce)" ">=0.95"
want scopes && row "put on stream, 64 MiB (GB/s), vs NVSHMEM on stream" \
    "$(val dev_put_bw_stream ushmem $mib64)" "$(val dev_put_bw_stream nvshmem $mib64)" -
# Small stream-ordered puts: the call's host time to queue one, and the
# floor in each library's job (cudaMemcpyAsync to the mapped peer buffer, no
# library call), which tells a gap in the call from one in the driver's copy
# of each library's heap.
if want scopes; then
    row "put on stream 8 B (GB/s), vs NVSHMEM on stream" "$(val dev_put_bw_stream ushmem 8)" \
        "$(val dev_put_bw_stream nvshmem 8)" -
    row "put on stream 8 B, host us to queue one" "$(val dev_put_bw_stream ushmem 8 3)" \
        "$(val dev_put_bw_stream nvshmem 8 3)" -
    row "floor: cudaMemcpyAsync 8 B to the peer, each job (GB/s)" \
        "$(val dev_put_raw_stream ushmem 8)" "$(val dev_put_raw_stream nvshmem 8)" -
    row "floor: the same, host us to queue one" "$(val dev_put_raw_stream ushmem 8 3)" \
        "$(val dev_put_raw_stream nvshmem 8 3)" -
    row "put on stream 32 KiB (GB/s), vs NVSHMEM on stream" \
        "$(val dev_put_bw_stream ushmem 32768)" "$(val dev_put_bw_stream nvshmem 32768)" -
    row "the same, host us to queue one" "$(val dev_put_bw_stream ushmem 32768 3)" \
        "$(val dev_put_bw_stream nvshmem 32768 3)" -
    row "put on stream 32 KiB, GPU time alone (--hold) (GB/s)" \
        "$(val dev_put_bw_stream ushmem-held 32768)" "$(val dev_put_bw_stream nvshmem-held 32768)" -
fi
want get && row "get bw 64 MiB, block, 32x1024 (GB/s)" "$(val dev_get_bw_block ushmem $mib64)" \
    "$(val dev_get_bw_block nvshmem $mib64)" -
row "link ceiling, copy engine, 64 MiB (GB/s)" "$(val nvlink_ceiling raw ce)" \
    "$(val dev_put_bw_block nvshmem $mib64)" -
row "putmem_signal ping-pong, half RTT (us)" "$(val dev_latency ushmem signal)" \
    "$(val dev_latency nvshmem signal)" "<=0.9"
row "floor: raw store+fence+add signal vs NVSHMEM's" "$(val dev_latency ushmem raw_signal)" \
    "$(val dev_latency nvshmem signal)" -
row "floor: raw store+release add signal vs NVSHMEM's" \
    "$(val dev_latency ushmem raw_signal_release)" "$(val dev_latency nvshmem signal)" -
row "floor: the same with no fence (unordered: no signal)" \
    "$(val dev_latency ushmem raw_signal_unordered)" "$(val dev_latency nvshmem signal)" -
row "device barrier_all vs NVSHMEM's (us)" "$(val dev_latency ushmem barrier)" \
    "$(val dev_latency nvshmem barrier)" "<=0.9"
row "device sync_all vs NVSHMEM's barrier_all (us)" "$(val dev_latency ushmem sync)" \
    "$(val dev_latency nvshmem barrier)" "<=0.9"
row "device sync_all vs NVSHMEM's sync_all (no fence)" "$(val dev_latency ushmem sync)" \
    "$(val dev_latency nvshmem sync)" -
row "floor: raw fence+store+poll barrier vs NV barrier" "$(val dev_latency ushmem raw_barrier)" \
    "$(val dev_latency nvshmem barrier)" -
row "barrier_all_on_stream (us)" "$(val dev_latency ushmem barrier_stream)" \
    "$(val dev_latency nvshmem barrier_stream)" "<=0.8"
row "floor: empty kernel launch vs NV barrier_all_on_stream" "$(val dev_latency ushmem raw_launch)" \
    "$(val dev_latency nvshmem barrier_stream)" -
row "fetch_add latency (us)" "$(val dev_latency ushmem fadd)" "$(val dev_latency nvshmem fadd)" "<=0.9"
row "floor: raw atom.add.sys vs NVSHMEM fetch_add" "$(val dev_latency ushmem raw_fadd)" \
    "$(val dev_latency nvshmem fadd)" -
row "floor: raw atom.add.sys, each build's counter" "$(val dev_latency ushmem raw_fadd)" \
    "$(val dev_latency nvshmem raw_fadd)" -
row "fetch_add over 64 counters 4 KiB apart (us)" "$(val dev_latency ushmem fadd_spread)" \
    "$(val dev_latency nvshmem fadd_spread)" -
row "floor: raw atom.add.sys over the 64, each build's" "$(val dev_latency ushmem raw_fadd_spread)" \
    "$(val dev_latency nvshmem raw_fadd_spread)" -
row "long_p ping-pong, half RTT (us)" "$(val dev_latency ushmem p)" "$(val dev_latency nvshmem p)" "<=0.9"
row "floor: raw store/poll p vs NVSHMEM long_p" "$(val dev_latency ushmem raw_p)" \
    "$(val dev_latency nvshmem p)" -
row "long_g latency (us)" "$(val dev_latency ushmem g)" "$(val dev_latency nvshmem g)" -
if want sycl; then
    row "SYCL put 64 MiB vs ushmem CUDA kernel (GB/s)" \
        "$(val sycl_put_bw_work_group ushmem $mib64)" "$(val dev_put_bw_block ushmem $mib64)" -
    row "SYCL put 1 MiB vs ushmem CUDA kernel (GB/s)" \
        "$(val sycl_put_bw_work_group ushmem 1048576)" "$(val dev_put_bw_block ushmem 1048576)" -
    row "SYCL long_p vs ushmem CUDA kernel (us)" \
        "$(val sycl_latency ushmem p)" "$(val dev_latency ushmem p)" -
fi
row "alltoall_on_stream busbw 1 GiB vs the 370 GB/s target" "$(val dev_alltoall_stream ushmem $gib1)" \
    370 ">=1.0"
row "alltoall_on_stream busbw 1 GiB vs NCCL (GB/s)" "$(val dev_alltoall_stream ushmem $gib1)" \
    "$(val nccl_alltoall nccl $gib1)" -
row "alltoall_on_stream busbw 1 GiB vs NVSHMEM's" "$(val dev_alltoall_stream ushmem $gib1)" \
    "$(val dev_alltoall_stream nvshmem $gib1)" -
row "alltoall busbw 64 MiB vs NCCL (GB/s)" "$(val dev_alltoall ushmem $mib64)" \
    "$(val nccl_alltoall nccl $mib64)" ">=1.0"
row "alltoall busbw 1 GiB vs NCCL (GB/s)" "$(val dev_alltoall ushmem $gib1)" \
    "$(val nccl_alltoall nccl $gib1)" ">=1.0"
row "alltoall busbw 64 MiB vs NVSHMEM, same kernel" "$(val dev_alltoall ushmem $mib64)" \
    "$(val dev_alltoall nvshmem $mib64)" -
row "alltoall busbw 1 GiB vs NVSHMEM, same kernel" "$(val dev_alltoall ushmem $gib1)" \
    "$(val dev_alltoall nvshmem $gib1)" -
{
    say ""
    say "device benchmarks, $npes PEs, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
    printf '%-48s | %9s | %12s | %5s | %6s | %s\n' metric ushmem "NVSHMEM/NCCL" ratio target "met?"
    printf '%s\n' "${rows[@]}"
    if want scopes; then
        for op in put get; do
            say ""
            say "$op bandwidth by scope and blocks (1024 threads each), ushmem / NVSHMEM over" \
                "every size from 8 B: the lowest and highest ratio, and at 64 MiB"
            printf '%-14s | %-22s | %-22s | %s\n' "scope blocks" "lowest (size)" "highest (size)" \
                "64 MiB GB/s ushmem / NV"
            for cfg in thread-b1 thread-b8 thread-b32 thread-b132 warp-b1 warp-b8 warp-b32 \
                warp-b132 block-b1 block-b8 block-b32 block-b132 stream; do
                u=$csvdir/dev_${op}_bw_${cfg}_ushmem.csv n=$csvdir/dev_${op}_bw_${cfg}_nvshmem.csv
                [ -f "$u" ] && [ -f "$n" ] || continue
                awk -F, -v cfg="${cfg/-b/ }" -v big=$mib64 '
                    $1 !~ /^[0-9]+$/ { next }
                    FNR == NR { nv[$1] = $2; next }
                    ($1 in nv) && nv[$1] > 0 {
                        r = $2 / nv[$1]
                        if (lo == "" || r < lo) { lo = r; los = $1 }
                        if (hi == "" || r > hi) { hi = r; his = $1 }
                        if ($1 == big) at = sprintf("%s / %s", $2, nv[$1])
                    }
                    END { printf "%-14s | %-22s | %-22s | %s\n", cfg, sprintf("%.2f (%s)", lo, los),
                          sprintf("%.2f (%s)", hi, his), at }' "$n" "$u"
            done
        done
    fi
    if want proxy || want fabric; then
        say ""
        say "ushmem's roads: direct, every device call through the proxy on the mapped heaps" \
            "(USHMEM_DEVICE_ROUTE=proxy), and over libfabric with FI_HMEM (USHMEM_IPC=0, shm)"
        printf '%-48s | %9s | %9s | %9s\n' metric direct proxy libfabric
        printf '%-48s | %9s | %9s | %9s\n' "put bw 64 MiB, block, 32x1024 (GB/s)" \
            "$(val dev_put_bw_block ushmem $mib64)" "$(val dev_put_bw_block ushmem-proxy $mib64)" \
            "$(val dev_put_bw_block ushmem-fabric $mib64)"
        for op in p g fadd signal barrier; do
            printf '%-48s | %9s | %9s | %9s\n' "dev_latency $op (us)" \
                "$(val dev_latency ushmem $op)" "$(val dev_latency ushmem-proxy $op)" \
                "$(val dev_latency ushmem-fabric $op)"
        done
        for op in p g fadd signal barrier; do
            for t in 0 1000 10000 100000; do
                w=$(val dev_latency ushmem-fabric "${op}_idle$t")
                [ -n "$w" ] || continue
                printf '%-48s | %9s | %9s | %9s\n' "one $op after PE 0 slept ${t} us (us, median of 15)" \
                    - - "$w"
            done
        done
        printf '%-48s | %9s | %9s | %9s\n' "idle process CPU, % of a core over 10 s" - \
            "$(val dev_latency ushmem-proxy-spin idle_cpu_pct)" \
            "$(val dev_latency ushmem-fabric idle_cpu_pct)"
        # Stream-ordered calls reach mapped peers themselves: no proxy column.
        printf '%-48s | %9s | %9s | %9s\n' "putmem_on_stream bw 64 MiB (GB/s)" \
            "$(val dev_put_bw_stream ushmem $mib64)" - \
            "$(val dev_put_bw_stream ushmem-fabric $mib64)"
        printf '%-48s | %9s | %9s | %9s\n' "barrier_all_on_stream (us)" \
            "$(val dev_latency ushmem barrier_stream)" - \
            "$(val dev_latency ushmem-fabric barrier_stream)"
    fi
    if want proxy && [ -f "$csvdir/dev_latency_ushmem-proxy-spin.csv" ]; then
        say ""
        [ "$ngpus" -lt 2 ] &&
            say "ONE GPU: 1 PE whose requests go to itself through its proxy (dev_latency" \
                "--self: p and signal one hop a round), against the floor on that GPU" \
                "(proxy_floor --one-gpu: both sides on GPU 0); not the two-GPU figures."
        say "The proxy road (USHMEM_DEVICE_ROUTE=proxy, mapped heaps) against the floor" \
            "(proxy_floor: a host thread writing into the other GPU by a stream store, a" \
            "copy or a kernel, no ring, no library), same run. b2b: back to back, 300 in" \
            "one kernel; busy T: one op right after PE 0's GPU computed T us (the proxy" \
            "idle that long), median of 15 launches; worst/busy0: the slowest of those" \
            "over the busy-0 one (target <= 1.5)."
        printf '%-10s | %-5s | %7s | %7s | %6s | %7s | %7s | %7s | %7s | %7s | %7s | %s\n' \
            op proxy floor b2b b2b/fl busy0 0.1ms 1ms 10ms 100ms 1s worst/busy0
        for op in p g fadd signal signal_set barrier; do
            hop=$(floor_hop "$op")
            fl=n/a
            [ -n "$hop" ] && fl=$(val proxy_floor raw "$hop")
            [ "$op" = barrier ] && fl="8(tgt)"
            for mode in spin sleep; do
                b2b=$(val dev_latency "ushmem-proxy-$mode" "$op")
                vals=()
                for t in 0 100 1000 10000 100000 1000000; do
                    v=$(val dev_latency "ushmem-proxy-$mode" "${op}_busy$t")
                    [ "$t" = 0 ] && [ -z "$v" ] && v=$(val dev_latency "ushmem-proxy-$mode" "${op}_idle0")
                    vals+=("${v:--}")
                done
                awk -v op="$op" -v mode="$mode" -v fl="${fl:-n/a}" -v b="${b2b:-n/a}" \
                    -v vs="${vals[*]}" 'BEGIN {
                    n = split(vs, v, " "); worst = 0
                    for (i = 2; i <= n; i++) if (v[i] != "-" && v[i] + 0 > worst) worst = v[i] + 0
                    f = fl + 0; r = (f > 0 && b != "n/a") ? sprintf("%.2f", b / f) : "n/a"
                    if (op == "barrier" && b != "n/a") r = sprintf("%.2f", b / 8)
                    w = (v[1] != "-" && v[1] + 0 > 0 && worst > 0) ? sprintf("%.2f", worst / v[1]) : "n/a"
                    printf "%-10s | %-5s | %7s | %7s | %6s | %7s | %7s | %7s | %7s | %7s | %7s | %s\n",
                        op, mode, fl, b, r, v[1], v[2], v[3], v[4], v[5], v[6], w }'
            done
        done
        say ""
        say "Back to back, 3000 in one kernel, median of 3, the same binary alternating:" \
            "now, and before (${before[*]}); the ratio to the floor (target <= 1.5; the" \
            "barrier against 8 us)."
        printf '%-10s | %7s | %15s | %15s | %11s | %11s\n' op floor "now (2 runs)" \
            "before (2 runs)" now/floor before/floor
        for op in p g fadd signal signal_set barrier signal_barrier; do
            hop=$(floor_hop "$op")
            fl=8
            [ -n "$hop" ] && fl=$(val proxy_floor raw "$hop")
            awk -v op="$op" -v fl="${fl:-0}" -v a="$(val dev_latency ushmem-proxy-now "$op")" \
                -v b="$(val dev_latency ushmem-proxy-now2 "$op")" \
                -v c="$(val dev_latency ushmem-proxy-before "$op")" \
                -v d="$(val dev_latency ushmem-proxy-before2 "$op")" 'BEGIN {
                f = fl + 0
                r1 = (f > 0 && a != "" && b != "") ? sprintf("%.2f-%.2f", a / f, b / f) : "n/a"
                r2 = (f > 0 && c != "" && d != "") ? sprintf("%.2f-%.2f", c / f, d / f) : "n/a"
                printf "%-10s | %7s | %7s %7s | %7s %7s | %11s | %11s\n", op, fl, a, b, c, d, r1, r2 }'
        done
        # A get's own copy (from GPU memory: over the link between GPUs, or
        # within the one GPU, where the driver runs it as a kernel).
        # And the signal's add, an atomic: a kernel on this road.
        for pair in g/cdev:g:hop-copy-dev signal/kern:signal:hop-kernel; do
            IFS=: read -r label op hop <<<"$pair"
            fl=$(val proxy_floor raw "$hop")
            [ -n "$fl" ] || continue
            awk -v fl="$fl" -v a="$(val dev_latency ushmem-proxy-now "$op")" -v label="$label" \
                -v b="$(val dev_latency ushmem-proxy-now2 "$op")" 'BEGIN {
                r = (a != "" && b != "") ? sprintf("%.2f-%.2f", a / fl, b / fl) : "n/a"
                printf "%-10s | %7s | %7s %7s | %15s | %11s |\n", label, fl, a, b, "", r }'
        done
        say "The floor's hops, same run (us): $(awk -F, '$1 ~ /^hop-[a-z-]+$/ {
            printf "%s %s; ", substr($1, 5), $2 }' "$csvdir/proxy_floor_raw.csv" 2>/dev/null)" \
            "(copy-dev: a get's copy, from GPU memory)"
        if [ "$ngpus" -ge 2 ]; then
            say ""
            say "Host and GPU both idle (PE 0's host sleeps T, its GPU has nothing queued): one" \
                "op, median of 15, through the awake proxy, on the direct road, and NVSHMEM's" \
                "(direct)."
            printf '%-10s | %-13s | %8s | %8s | %8s | %8s\n' op road idle0 1ms 10ms 100ms
            for op in p g fadd signal signal_set barrier; do
                for road in ushmem-proxy-hostidle ushmem-direct-hostidle nvshmem-hostidle; do
                    vals=()
                    for t in 0 1000 10000 100000; do
                        v=$(val dev_latency "$road" "${op}_idle$t")
                        vals+=("${v:--}")
                    done
                    printf '%-10s | %-13s | %8s | %8s | %8s | %8s\n' "$op" \
                        "$(sed 's/-hostidle//; s/ushmem-//' <<<"$road")" "${vals[@]}"
                done
            done
        fi
        if [ -f "$csvdir/link_idle_raw.csv" ]; then
            say ""
            say "No library (link_idle): one op from GPU 0 into GPU 1 after the host slept T," \
                "median, us; keeper: what ran meanwhile, every ms (link: an 8-byte copy-engine" \
                "copy into GPU 1 beside the op's word; far: the same 512 MiB away in another" \
                "allocation; kernel0: a kernel on GPU 0 storing beside it; memop: a stream write" \
                "beside it; host: the host" \
                "spinning, no GPU work). ce and memop: a copy and a stream write into GPU 1 issued" \
                "by the host, timed on the host to the end of a stream synchronisation."
            lts=$(awk -F, '/^fadd_none_[0-9]+,/ { sub("fadd_none_", "", $1); printf "%s ", $1 }' \
                "$csvdir/link_idle_raw.csv")
            printf '%-7s | %-8s' op keeper
            for t in $lts; do printf ' | %7s' "${t}ms"; done
            printf '\n'
            for op in fadd store load local ce memop; do
                for kp in none link far kernel0 memop host; do
                    printf '%-7s | %-8s' $op $kp
                    for t in $lts; do
                        v=$(val link_idle raw "${op}_${kp}_$t")
                        printf ' | %7s' "${v:--}"
                    done
                    printf '\n'
                done
            done
        fi
        printf '%-40s | spin %s %% | sleep %s %% | NVSHMEM process %s %%\n' \
            "idle process CPU, % of one core, 10 s" \
            "$(val dev_latency ushmem-proxy-spin idle_cpu_pct)" \
            "$(val dev_latency ushmem-proxy-sleep idle_cpu_pct)" \
            "$(val dev_latency nvshmem-hostidle idle_cpu_pct)"
        printf '%-40s | %s GB/s (target >= 350; floor: one copy-engine copy %s)\n' \
            "proxy put bw 64 MiB, 32 blocks" "$(val dev_put_bw_block ushmem-proxy $mib64)" \
            "$(val nvlink_ceiling raw ce)"
    fi
    if want landing && [ -f "$csvdir/dev_latency_ushmem-landing.csv" ]; then
        say ""
        say "Landing over tcp (USHMEM_IPC=0 USHMEM_FABRIC_STAGING=1, USHMEM_PROXY_IDLE=spin)" \
            "against libfabric's own 8-byte message on the same provider with no library" \
            "(fabric_floor: one way, half a round trip), same run. b2b: back to back (300 in" \
            "one kernel; the floor: 5000); T: one op right after PE 0 was busy T (its GPU" \
            "computing; the floor: its host spinning), median of 15; b2b/msgs: against the" \
            "messages the op needs (p one way, g and fadd a request and its reply: two);" \
            "worst/b2b: the slowest after-idle figure over back to back."
        lts=$(awk -F, '/^msg_idle[0-9]+,/ { sub("msg_idle", "", $1); printf "%s ", $1 }' \
            "$csvdir/fabric_floor_raw.csv" 2>/dev/null)
        [ -n "$lts" ] || lts=$(tr ',' ' ' <<<"${LANDING_IDLE_US:-1000,10000,100000}")
        printf '%-10s | %8s | %8s' op b2b b2b/msgs
        for t in $lts; do
            if [ "$t" -ge 1000 ]; then printf ' | %8s' "$((t / 1000))ms"; else printf ' | %8s' "${t}us"; fi
        done
        printf ' | %s\n' worst/b2b
        msg=$(val fabric_floor raw msg)
        for op in msg p g fadd; do
            if [ $op = msg ]; then
                b=$msg n=1 key=msg_idle label="tcp msg"
            else
                b=$(val dev_latency ushmem-landing $op) n=2 key=${op}_busy label=$op
                [ $op = p ] && n=1
            fi
            vals=()
            for t in $lts; do
                if [ $op = msg ]; then v=$(val fabric_floor raw "msg_idle$t"); else v=$(val dev_latency ushmem-landing "$key$t"); fi
                vals+=("${v:--}")
            done
            awk -v label="$label" -v b="${b:-}" -v m="${msg:-}" -v n=$n -v vs="${vals[*]}" 'BEGIN {
                k = split(vs, v, " "); worst = 0
                for (i = 1; i <= k; i++) if (v[i] != "-" && v[i] + 0 > worst) worst = v[i] + 0
                r = (b != "" && m + 0 > 0) ? sprintf("%.2f", b / (n * m)) : "n/a"
                w = (b + 0 > 0 && worst > 0) ? sprintf("%.2f", worst / b) : "n/a"
                printf "%-10s | %8s | %8s", label, (b != "" ? b : "n/a"), r
                for (i = 1; i <= k; i++) printf " | %8s", v[i]
                printf " | %s\n", w }'
        done
    fi
} | tee "$out/summary.txt"

if python3 -c 'import matplotlib' 2>/dev/null && ls "$csvdir"/*.csv >/dev/null 2>&1; then
    run_to "$out/plot.log" 60 python3 scripts/plot_perf.py -o "$out/plots" "$csvdir" ||
        say "plot_perf.py failed: see plot.log"
fi
say "outputs in $out (commands in commands.txt), $((SECONDS - t_start)) s in all"
