#!/usr/bin/env bash
# Builds OSU Micro-Benchmarks' OpenSHMEM programs (7.x, unchanged) against
# ushmem and against Open MPI's OSHMEM, runs each benchmark with both,
# alternating, and prints one table: benchmark, size, ushmem, OSHMEM, ratio
# (best of the runs of each). With --before DIR, a third column times the
# same ushmem binaries with the libushmem.so in DIR (an older build's
# src/host), in the same alternation: before/after from one session.
#
#   scripts/compare_osu.sh [options] OSU_SRC
#
#   OSU_SRC        an unpacked osu-micro-benchmarks source tree (c/openshmem)
#   -n N           PEs (default 4)
#   --build DIR    ushmem build directory (default ./build)
#   --before DIR   directory holding an older libushmem.so
#   --runs R       alternating runs of each benchmark (default 2)
#   --only LIST    benchmarks (default barrier,broadcast,collect,fcollect,reduce)
#   --sizes LIST   message sizes in bytes to print (default 8,4096)
#   --iters I      OSU's -i (default 1000)
#   --out DIR      where the programs are built (default /tmp/compare-osu)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
npes=4
build=$root/build
before=
runs=2
only=barrier,broadcast,collect,fcollect,reduce
sizes=8,4096
iters=1000
out=/tmp/compare-osu
src=

die() { echo "compare_osu.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    -n) npes=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --before) before=$(cd "$2" && pwd); shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) src=$1; shift ;;
    esac
done
[ -n "$src" ] && [ -d "$src/c/openshmem" ] || die "give an OSU source tree (with c/openshmem)"
[ -x "$build/tools/oshrun" ] || die "$build has no tools/oshrun: build ushmem first"
lib=$build/src/host
[ -e "$lib/libushmem.so" ] || die "$lib has no libushmem.so"
[ -z "$before" ] || [ -e "$before/libushmem.so" ] || die "$before has no libushmem.so"

osh_cc=${OSHMEM_OSHCC:-/usr/bin/oshcc}
osh_run=${OSHMEM_OSHRUN:-$(dirname "$osh_cc")/oshrun}
have_oshmem=
if [ -x "$osh_cc" ] && "$osh_cc" --showme 2>/dev/null | grep -q oshmem; then
    have_oshmem=yes
else
    echo "== Open MPI's oshcc not found: OSHMEM skipped"
fi

IFS=, read -r -a benches <<<"$only"
mkdir -p "$out/ushmem" "$out/oshmem"
for b in "${benches[@]}"; do
    files=("$src/c/openshmem/osu_oshm_$b.c" "$src/c/util/osu_util.c" "$src/c/util/osu_util_pgas.c")
    [ -f "${files[0]}" ] || die "no osu_oshm_$b.c in $src"
    # shellcheck disable=SC2086
    cc -O2 -w -DOSHM_1_3=1 -I"$src/c/util" -I"$root/include" -I"$build/include" "${files[@]}" \
        -o "$out/ushmem/osu_oshm_$b" -L"$lib" -lushmem -lm
    if [ -n "$have_oshmem" ]; then
        "$osh_cc" -O2 -w -DOSHM_1_3=1 -I"$src/c/util" "${files[@]}" -o "$out/oshmem/osu_oshm_$b" -lm
    fi
done

# run KIND BENCH: prints "size latency" lines
run() {
    local kind=$1 b=$2
    case $kind in
    ushmem) LD_LIBRARY_PATH=$lib timeout 300 "$build/tools/oshrun" -n "$npes" \
                "$out/ushmem/osu_oshm_$b" -i "$iters" ;;
    before) LD_LIBRARY_PATH=$before timeout 300 "$build/tools/oshrun" -n "$npes" \
                "$out/ushmem/osu_oshm_$b" -i "$iters" ;;
    oshmem) timeout 300 "$osh_run" --allow-run-as-root --oversubscribe --mca osc '^rdma' \
                -np "$npes" "$out/oshmem/osu_oshm_$b" -i "$iters" ;;
    esac 2>/dev/null | awk '/^ *[0-9]/ { if (NF == 1) print 0, $1; else print $1, $2 }'
}

kinds=(ushmem)
[ -n "$before" ] && kinds+=(before)
[ -n "$have_oshmem" ] && kinds+=(oshmem)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for b in "${benches[@]}"; do
    for ((r = 0; r < runs; r++)); do
        for k in "${kinds[@]}"; do
            run "$k" "$b" >>"$tmp/$b.$k" || true
        done
    done
done

# best (lowest) latency per benchmark, kind and size
best() { awk -v s="$3" '$1 == s && (m == "" || $2 < m) { m = $2 } END { print m }' "$tmp/$1.$2"; }
echo "OSU OpenSHMEM, $npes PEs, $(nproc) CPUs, best of $runs alternating runs (us)"
header="| benchmark | size | ushmem"
[ -n "$before" ] && header+=" | before"
[ -n "$have_oshmem" ] && header+=" | OSHMEM | ushmem/OSHMEM"
echo "$header |"
echo "$header |" | sed 's/[^|]\+/ --- /g'
IFS=, read -r -a want <<<"$sizes"
for b in "${benches[@]}"; do
    list=("${want[@]}")
    [ "$b" = barrier ] && list=(0)
    for s in "${list[@]}"; do
        u=$(best "$b" ushmem "$s")
        [ -n "$u" ] || continue
        line="| $b | $s | $u"
        [ -n "$before" ] && line+=" | $(best "$b" before "$s")"
        if [ -n "$have_oshmem" ]; then
            o=$(best "$b" oshmem "$s")
            ratio=$(awk -v u="$u" -v o="$o" 'BEGIN { if (o > 0) printf "%.2f", u / o; else print "-" }')
            line+=" | $o | $ratio"
        fi
        echo "$line |"
    done
done
