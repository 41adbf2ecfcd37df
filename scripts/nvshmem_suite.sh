#!/usr/bin/env bash
# NVSHMEM's own perftests, unchanged, against ushmem and against NVSHMEM in
# the same run: builds every program of perftest/device (pt-to-pt, coll)
# and perftest/host (pt-to-pt, coll, init) of an NVSHMEM 3.x source tree
# twice, once with ushmem's NVSHMEM-compatible headers (oshnvcc --nvshmem)
# and once with NVSHMEM from its Python package, runs each program with the
# argument lines of its .args file (iterations cut to fit the time, see
# ITERS), the CUDA-graph lines among them, under each library, and prints
# one table: program, arguments, points measured, the geometric mean of
# ushmem's ratio to NVSHMEM and its worst point (ratio >= 1: ushmem as fast
# or faster; latencies are inverted so that this holds for both kinds).
#
# The NVSHMEM tree is not ours to copy: fetch it (github NVIDIA/nvshmem)
# into a folder outside this repository and pass its path. Nothing of it is
# written to its folder or to this repository; the build goes to OUT_DIR.
#
# Usage: [BUILD_DIR=build-gpu] [NPES=2] [ITERS=20] [PROGRAMS="regex"]
#        [SUITE_PARTS=build,run|score] [JOBS=n] [RUN_TIMEOUT=s]
#        [USHMEM_NVCCFLAGS="flags"] scripts/nvshmem_suite.sh NVSHMEM_SRC [OUT_DIR]
#   USHMEM_NVCCFLAGS: more flags for the ushmem builds only, to measure a
#   what-if (e.g. -DUSHMEMI_DEV_G_CACHED, see include/ushmem/device.h).
#   OUT_DIR defaults to $BUILD_DIR/nvshmem-suite. The per-point results are
#   in OUT_DIR/points.csv, each run's output in OUT_DIR/runs/.
#   perftest/device/tile (tile-granular tensors, an NVSHMEM extension ushmem
#   does not offer) is left out, as is redmaxloc_latency, which NVSHMEM's own
#   build leaves out.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
src=${1:?usage: scripts/nvshmem_suite.sh NVSHMEM_SRC [OUT_DIR]}
src=$(cd "$src" && pwd) || exit 1
build=${BUILD_DIR:-build-gpu}
out=${2:-$build/nvshmem-suite}
mkdir -p "$out"
out=$(cd "$out" && pwd)
npes=${NPES:-2}
iters=${ITERS:-20}
jobs=${JOBS:-$(nproc)}
parts=${SUITE_PARTS:-build,run}
want() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
pt=$src/perftest
[ -f "$pt/common/utils.cu" ] || { echo "nvshmem_suite: $pt/common/utils.cu not found: is $src an NVSHMEM source tree?" >&2; exit 1; }
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 NVSHMEM_MACHINE_READABLE_OUTPUT=1

# The programs: device pt-to-pt and coll, host pt-to-pt, coll and init, as
# NVSHMEM's CMake files list them.
programs=()
for dir in device/pt-to-pt device/coll host/pt-to-pt host/coll host/init; do
    for f in $(sed -n 's/^ *nvshmem_add_perftest(\([^)]*\)).*/\1/p' "$pt/$dir/CMakeLists.txt"); do
        programs+=("$dir/$f")
    done
done
if [ -n "${PROGRAMS:-}" ]; then
    keep=()
    for p in "${programs[@]}"; do [[ $p =~ $PROGRAMS ]] && keep+=("$p"); done
    programs=("${keep[@]}")
fi
echo "nvshmem_suite: ${#programs[@]} programs from $pt, $npes PEs"

cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
ushmem_lib=$root/$build/src/host
oshnvcc=$root/$build/tools/oshnvcc
oshrun=$root/$build/tools/oshrun
nv=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])" 2>/dev/null)
have_nv=0
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ] && command -v mpicc >/dev/null; then
    have_nv=1
    nv_host=-l:libnvshmem_host.so.3
    [ -e "$nv/lib/libnvshmem_host.so" ] && nv_host=-lnvshmem_host
else
    echo "nvshmem_suite: NVSHMEM's Python package (nvidia.nvshmem) or mpicc missing: NVSHMEM is n/a"
fi

# ---- build: one Makefile per library, so that make runs the compiles at once ----
# Both libraries build the same sources with the flags NVSHMEM's CMake gives
# (C++17, relocatable device code, sm_90; .cpp files with the C++ compiler);
# NVSHMEM's own build adds its MPI support, since its PMIx plugin does not
# load on these machines (FACTS.md) and it starts from MPI_COMM_WORLD.
write_makefile() { # LIB DIR CXXFLAGS NVCCFLAGS LDFLAGS
    local lib=$1 dir=$2 cxxflags=$3 nvccflags=$4 ldflags=$5 p b o objs=() exes=()
    mkdir -p "$dir"
    {
        echo "NVCC = $([ "$lib" = ushmem ] && echo "$oshnvcc --nvshmem" || echo nvcc)"
        echo "NVCCFLAGS = -O3 -std=c++17 -arch=sm_90 -rdc=true -I$pt/common $nvccflags"
        echo "CXX = $([ "$lib" = ushmem ] && echo "OSHCXX=g++ $root/$build/tools/oshc++ --nvshmem" || echo g++)"
        echo "CXXFLAGS = -O3 -std=c++17 -I$cuda_home/include -I$cuda_home/include/cccl -I$pt/common $cxxflags"
        echo "LDFLAGS = $ldflags"
        echo "all: bin"
        echo "utils.o: $pt/common/utils.cu"
        echo "	\$(NVCC) \$(NVCCFLAGS) -c -o \$@ \$< > utils.log 2>&1 || (cat utils.log; false)"
        for p in "${programs[@]}"; do
            b=$(basename "${p%.*}")
            o=$b.o
            case $p in
            *.cpp) echo "$o: $pt/$p"; echo "	\$(CXX) \$(CXXFLAGS) -c -o \$@ \$< > $b.log 2>&1 || (cat $b.log; false)" ;;
            *) echo "$o: $pt/$p"; echo "	\$(NVCC) \$(NVCCFLAGS) -c -o \$@ \$< > $b.log 2>&1 || (cat $b.log; false)" ;;
            esac
            echo "$b: $o utils.o"
            echo "	\$(NVCC) \$(NVCCFLAGS) -o \$@ $o utils.o \$(LDFLAGS) >> $b.log 2>&1 || (cat $b.log; false)"
            exes+=("$b")
        done
        echo "bin: ${exes[*]}"
        echo ".PHONY: all bin"
    } >"$dir/Makefile"
}
if want build; then
    t0=$SECONDS
    if [ ! -x "$oshnvcc" ] || [ ! -f "$ushmem_lib/libushmem.so" ]; then
        echo "nvshmem_suite: no ushmem build in $build (tools/oshnvcc, src/host/libushmem.so)" >&2
        exit 1
    fi
    export OSHCC_INCDIR=$root/include OSHCC_LIBDIR=$ushmem_lib
    write_makefile ushmem "$out/ushmem" "" "${USHMEM_NVCCFLAGS:-}" "-lcuda"
    (cd "$out/ushmem" && make -k -j"$jobs" all >make.log 2>&1) ||
        echo "nvshmem_suite: some ushmem builds failed: see $out/ushmem/make.log"
    if [ $have_nv = 1 ]; then
        mpi_inc=$(mpicc --showme:incdirs | sed 's/^/-I/; s/ / -I/g')
        # The programs reach MPI through dlopen (utils.cu): no C++ bindings.
        mpi_defs="-DNVSHMEMTEST_MPI_SUPPORT -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX"
        write_makefile nvshmem "$out/nvshmem" "-I$nv/include $mpi_inc $mpi_defs" \
            "-I$nv/include $mpi_inc $mpi_defs" \
            "-L$nv/lib $nv_host -lnvshmem_device -lcuda -Xlinker -rpath=$nv/lib"
        (cd "$out/nvshmem" && make -k -j"$jobs" all >make.log 2>&1) ||
            echo "nvshmem_suite: some NVSHMEM builds failed: see $out/nvshmem/make.log"
    fi
    echo "nvshmem_suite: built in $((SECONDS - t0)) s"
fi

# "score" alone compares the outputs an earlier run left in OUT_DIR/runs.
want run || want score || exit 0

# ---- run ----
# An .args line with its iteration counts capped at ITERS (warm-up at a
# tenth, at least 2), so that the whole suite fits a GPU session.
cut_args() {
    awk -v n="$iters" '{
        for (i = 1; i <= NF; i++) {
            if (($i == "-n" || $i == "-w") && i < NF) {
                cap = ($i == "-n") ? n : (n / 10 < 2 ? 2 : int(n / 10));
                if ($(i + 1) + 0 > cap) $(i + 1) = cap;
            }
        }
        print }'
}
# Lines of a program's .args file; one empty line when there is none. Lines
# without an option are values of one (shmem_atomic_ping_pong_latency lists
# atomics): NVSHMEM's runner passes them as they are.
args_lines() {
    local f=$pt/${1%.*}.args
    if [ -s "$f" ] && grep -q '[^[:space:]]' "$f"; then
        grep '[^[:space:]]' "$f"
    else
        echo ""
    fi
}
mkdir -p "$out/runs"
points=$out/points.csv
echo "program,args,point,unit,ushmem,nvshmem,ratio" >"$points"
timeout_s=${RUN_TIMEOUT:-120}
run_one() { # LIB EXE ARGS OUTFILE
    local lib=$1 exe=$2 args=$3 file=$4
    # shellcheck disable=SC2086 # the args line is words
    if [ "$lib" = ushmem ]; then
        timeout $((timeout_s + 10)) env SHMEM_SYMMETRIC_SIZE=2G "$oshrun" --timeout "$timeout_s" \
            -n "$npes" "$exe" $args >"$file" 2>&1
    else
        timeout $((timeout_s + 10)) env NVSHMEM_SYMMETRIC_SIZE=2147483648 NVSHMEMTEST_USE_MPI_LAUNCHER=1 \
            LD_LIBRARY_PATH="$nv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            mpirun --allow-run-as-root -np "$npes" --bind-to none -x NVSHMEM_SYMMETRIC_SIZE \
            -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE -x NVSHMEM_MACHINE_READABLE_OUTPUT \
            -x NVSHMEMTEST_USE_MPI_LAUNCHER -x LD_LIBRARY_PATH "$exe" $args >"$file" 2>&1
    fi
}
# PERF lines: "&&&& PERF <point> <value> <+|-><unit>", + where larger is better
# (a point's name may hold spaces).
# Values that are not finite positive numbers (a "-nan" of a program's own
# arithmetic) are left out.
perf_lines() {
    grep -a '^&&&& PERF ' "$1" |
        awk 'NF >= 5 && $(NF - 1) ~ /^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ && $(NF - 1) + 0 > 0 {
            key = $3
            for (i = 4; i <= NF - 2; i++) key = key "_" $i   # names with spaces
            print key, $(NF - 1), $NF }'
}

summary=()
fails=0
for p in "${programs[@]}"; do
    b=$(basename "${p%.*}")
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        args=$(printf '%s\n' "$line" | cut_args)
        tag=${b}_$n
        u_rc=- v_rc=-
        if ! want run; then # scoring only: a run that printed no point failed
            grep -qa '^&&&& PERF' "$out/runs/${tag}_ushmem.txt" 2>/dev/null && u_rc=0 || u_rc="(no points)"
            grep -qa '^&&&& PERF' "$out/runs/${tag}_nvshmem.txt" 2>/dev/null && v_rc=0 || v_rc="(no points)"
        fi
        if want run && [ -x "$out/ushmem/$b" ]; then
            run_one ushmem "$out/ushmem/$b" "$args" "$out/runs/${tag}_ushmem.txt" </dev/null
            u_rc=$?
        fi
        if want run && [ $have_nv = 1 ] && [ -x "$out/nvshmem/$b" ]; then
            run_one nvshmem "$out/nvshmem/$b" "$args" "$out/runs/${tag}_nvshmem.txt" </dev/null
            v_rc=$?
        fi
        # Each library's points, tagged by their source: either list may be
        # empty (a run that failed).
        row=$(awk -v prog="$b" -v args="$args" -v points="$points" '
            $1 == "U" { u[$2] = $3; unit[$2] = $4; next }
            $1 == "V" { v[$2] = $3 }
            END {
                n = 0; logsum = 0; worst = ""; wr = 1e300
                for (k in u) {
                    if (!(k in v) || u[k] <= 0 || v[k] <= 0) {
                        printf "%s,\"%s\",%s,%s,%s,,\n", prog, args, k, unit[k], u[k] >> points
                        continue
                    }
                    r = substr(unit[k], 1, 1) == "-" ? v[k] / u[k] : u[k] / v[k]
                    printf "%s,\"%s\",%s,%s,%s,%s,%.3f\n", prog, args, k, unit[k], u[k], v[k], r >> points
                    n++; logsum += log(r)
                    if (r < wr) { wr = r; worst = k }
                }
                if (n == 0) { print "0 - - -"; exit }
                sub(/^.*___size__/, "size ", worst)
                printf "%d %.3f %.3f %s\n", n, exp(logsum / n), wr, worst
            }' <(perf_lines "$out/runs/${tag}_ushmem.txt" 2>/dev/null | sed 's/^/U /'
                 perf_lines "$out/runs/${tag}_nvshmem.txt" 2>/dev/null | sed 's/^/V /'))
        read -r npts gmean worst wpoint <<<"$row"
        status=ok
        [ "$u_rc" = 0 ] || status="ushmem exit $u_rc"
        [ "$v_rc" = 0 ] || [ "$v_rc" = - ] || status="$status, NVSHMEM exit $v_rc"
        [ "$u_rc" = 0 ] || fails=$((fails + 1))
        summary+=("$(printf '%-32s %-44s %6s %7s %7s  %-28s %s' "$b" "${args:-(none)}" "$npts" "$gmean" "$worst" "$wpoint" "$status")")
    done < <(args_lines "$p")
done

echo
echo "NVSHMEM perftests, $npes PEs: ushmem / NVSHMEM (geometric mean and worst point; >= 1: ushmem as fast or faster)"
printf '%-32s %-44s %6s %7s %7s  %-28s %s\n' program arguments points gmean worst "worst point" status
printf '%s\n' "${summary[@]}"
echo "$fails runs of ushmem failed; per-point results: $points"
[ "$fails" = 0 ]
