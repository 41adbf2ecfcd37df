#!/usr/bin/env bash
# Runs the test/perf benchmarks with ushmem and, in the same run, the very
# same sources built with Open MPI's OSHMEM (its oshcc), then prints one
# side-by-side table per benchmark with the ratio ushmem / OSHMEM and a
# summary line. Without Open MPI's oshcc only the ushmem column is filled.
#
#   scripts/compare_oshmem.sh [options] [BUILD_DIR] [-- benchmark options]
#
#   BUILD_DIR       ushmem build directory (default ./build); set up with meson
#                   if it does not exist, then brought up to date with ninja
#   -n N            PEs for the comparison (default 2)
#   --quick         pass --quick to every benchmark (sizes up to 64 KiB)
#   --only LIST     comma-separated benchmarks to run (default: all)
#   --no-oshmem     run ushmem only
#   --main-job      ushmem only, 4 PEs: put_bw --pairs and alltoall_bw
#   --csv-dir DIR   keep every run's CSV in DIR
#
# Environment: OSHMEM_OSHCC / OSHMEM_OSHRUN name Open MPI's wrappers when they
# are not the oshcc/oshrun on PATH; SHMEM_SYMMETRIC_SIZE (default 64M here)
# goes to both implementations.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
benchmarks=(put_latency get_latency put_bw get_bw atomic_latency alltoall_bw barrier_latency)

build=
npes=2
quick=
only=
use_oshmem=yes
main_job=
csv_dir=
bench_args=()

die() { echo "compare_oshmem.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    -n|-np) [ $# -ge 2 ] || die "$1 needs a PE count"; npes=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    --only) [ $# -ge 2 ] || die "--only needs a list"; only=$2; shift 2 ;;
    --no-oshmem) use_oshmem=; shift ;;
    --main-job) main_job=yes; shift ;;
    --csv-dir) [ $# -ge 2 ] || die "--csv-dir needs a directory"; csv_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) [ -z "$build" ] || die "two build directories given: '$build' and '$1'"; build=$1; shift ;;
    esac
done
build=${build:-$root/build}
case $npes in ''|*[!0-9]*|0) die "invalid PE count '$npes'" ;; esac
if [ -n "$only" ]; then
    IFS=, read -r -a benchmarks <<< "$only"
fi
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-64M}

# --- build ushmem's benchmarks -------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
    echo "== setting up $build"
    meson setup "$build" "$root" >/dev/null
fi
targets=(tools/oshrun)
for b in "${benchmarks[@]}"; do targets+=("test/perf/$b"); done
echo "== building ushmem benchmarks in $build"
ninja -C "$build" "${targets[@]}" >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/compare_oshmem.XXXXXX")
trap 'rm -rf "$work"' EXIT
csv_dir=${csv_dir:-$work}
mkdir -p "$csv_dir"

ushmem_run() { # npes benchmark args...
    local n=$1 b=$2
    shift 2
    "$build/tools/oshrun" -n "$n" "$build/test/perf/$b" "$@"
}

if [ -n "$main_job" ]; then
    echo "== main job: ushmem, 4 PEs"
    ushmem_run 4 put_bw --pairs $quick "${bench_args[@]}"
    ushmem_run 4 alltoall_bw $quick "${bench_args[@]}"
    exit 0
fi

# --- find and use Open MPI's OSHMEM -------------------------------------------
osh_cc=${OSHMEM_OSHCC:-$(command -v oshcc || true)}
osh_run=
if [ -n "$use_oshmem" ]; then
    # ushmem ships an oshcc too: accept only a wrapper that links liboshmem.
    if [ -z "$osh_cc" ] || ! "$osh_cc" --showme 2>/dev/null | grep -q -- '-loshmem'; then
        echo "== Open MPI's oshcc not found: OSHMEM skipped (set OSHMEM_OSHCC to use one)"
        use_oshmem=
    else
        osh_run=${OSHMEM_OSHRUN:-$(dirname "$osh_cc")/oshrun}
        [ -x "$osh_run" ] || { echo "== $osh_run missing: OSHMEM skipped"; use_oshmem=; }
    fi
fi
osh_flags=(--mca osc '^rdma')   # without it Debian's OSHMEM crashes in shmem_finalize
[ "$(id -u)" -eq 0 ] && osh_flags+=(--allow-run-as-root)
[ "$npes" -gt "$(nproc)" ] && osh_flags+=(--oversubscribe)

if [ -n "$use_oshmem" ]; then
    echo "== building the same sources with $osh_cc"
    for b in "${benchmarks[@]}"; do
        # The same source and switch for each benchmark as test/perf/meson.build.
        case $b in
        put_latency|get_latency) src=rma_latency.c ;;
        put_bw|get_bw) src=rma_bw.c ;;
        *) src=$b.c ;;
        esac
        cflags=(-std=c11 -O2)
        case $b in get_*) cflags+=(-DBENCH_GET) ;; esac
        if ! "$osh_cc" "${cflags[@]}" -o "$work/$b" "$root/test/perf/$src" \
                "$root/test/perf/bench.c" 2>"$work/$b.cc.log"; then
            echo "   $b: OSHMEM build failed:"; sed 's/^/     /' "$work/$b.cc.log"
        fi
    done
fi

# --- run and join --------------------------------------------------------------
# join_tables prints the two CSVs side by side, keyed by the first column, using
# the first value column; it records the summary figures in $work/summary.
join_tables() { # name ushmem.csv oshmem.csv
    awk -F, -v name="$1" -v summary="$work/summary" '
        { file = FILENAME == ARGV[1] ? 1 : 2 }
        /^#/ { next }
        file == 1 && !seen1++ { next }
        file == 2 && !seen2++ { next }
        file == 1 { keys[++n] = $1; u[$1] = $2; next }
        file == 2 { o[$1] = $2 }
        END {
            bw = name ~ /_bw$/
            printf "\n== %s, %s; ratio = ushmem / OSHMEM (%s is better)\n", name,
                   bw ? "Bandwidth(MB/s)" : "Latency(us)", bw ? "higher" : "lower"
            printf "# %-12s %14s %14s %10s\n", "Key", "ushmem", "OSHMEM", "ratio"
            for (i = 1; i <= n; i++) {
                k = keys[i]
                have = (k in o) && o[k] > 0
                printf "%-14s %14.3f %14s %10s\n", k, u[k],
                       (k in o) ? sprintf("%.3f", o[k]) : "-",
                       have ? sprintf("%.2f", u[k] / o[k]) : "-"
                if ((name == "put_latency" || name == "get_latency") && k == "8" ||
                    (name == "put_bw" || name == "get_bw") && k == "1048576")
                    printf "%s %s %s\n", name, u[k], (k in o) ? o[k] : "" >> summary
            }
        }' "$2" "$3"
}

: > "$work/summary"
failed=0
for b in "${benchmarks[@]}"; do
    u_csv=$csv_dir/$b.ushmem.csv
    o_csv=$csv_dir/$b.oshmem.csv
    : > "$o_csv"
    echo "== running $b: ushmem, $npes PEs"
    if ! ushmem_run "$npes" "$b" --csv $quick "${bench_args[@]}" > "$u_csv"; then
        echo "   $b failed with ushmem"; failed=1
    fi
    if [ -n "$use_oshmem" ] && [ -x "$work/$b" ]; then
        echo "== running $b: OSHMEM, $npes PEs"
        if ! (cd "$work" && "$osh_run" "${osh_flags[@]}" -np "$npes" "./$b" --csv $quick \
                "${bench_args[@]}") > "$o_csv" 2> "$work/$b.run.log"; then
            echo "   $b failed with OSHMEM:"; tail -5 "$work/$b.run.log" | sed 's/^/     /'
        fi
    fi
done

for b in "${benchmarks[@]}"; do
    join_tables "$b" "$csv_dir/$b.ushmem.csv" "$csv_dir/$b.oshmem.csv"
done

# One line: small put/get latency and 1 MiB put/get bandwidth.
awk '
    function fmt(name, unit, u, o,    f) {
        f = unit == "us" ? "%.3f" : "%.0f"
        if (o == "" || o + 0 <= 0)
            return sprintf("%s " f " %s (OSHMEM -)", name, u, unit)
        return sprintf("%s " f " vs " f " %s (%.2fx)", name, u, o, unit, u / o)
    }
    $1 == "put_latency" { s[1] = fmt("put 8B", "us", $2, $3) }
    $1 == "get_latency" { s[2] = fmt("get 8B", "us", $2, $3) }
    $1 == "put_bw" { s[3] = fmt("put_bw 1MiB", "MB/s", $2, $3) }
    $1 == "get_bw" { s[4] = fmt("get_bw 1MiB", "MB/s", $2, $3) }
    END {
        line = ""
        for (i = 1; i <= 4; i++)
            if (i in s)
                line = line (line == "" ? "" : " | ") s[i]
        if (line != "")
            printf "\nsummary (ushmem vs OSHMEM, %d PEs): %s\n", npes, line
    }' npes="$npes" "$work/summary"
exit "$failed"
