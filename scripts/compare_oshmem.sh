#!/usr/bin/env bash
# Runs the test/perf benchmarks with ushmem and, in the same run, the very
# same sources built with Open MPI's OSHMEM (its oshcc), then prints one
# side-by-side table per benchmark with the ratio ushmem / OSHMEM and a
# summary line. Without Open MPI's oshcc only the ushmem column is filled.
# With --fabric it does so twice: first with ushmem on its fabric route over
# libfabric's tcp provider against OSHMEM with UCX held to tcp, then the direct
# route against OSHMEM's defaults (shared memory).
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
#   --fabric        two legs: 'fabric' runs ushmem with USHMEM_IPC=0
#                   FI_PROVIDER=tcp against OSHMEM with UCX_TLS=tcp,self and
#                   --mca btl self,tcp (its MPI collectives over tcp too);
#                   'direct' runs both with their defaults. Before each leg a
#                   tiny run with USHMEM_LOG_LEVEL=debug and UCX_LOG_LEVEL=info
#                   shows what each uses between PEs; a leg not on its route
#                   (fabric: not tcp on both sides) makes the exit status 1
#   --csv-dir DIR   keep every run's CSV in DIR (with --fabric, in DIR/fabric
#                   and DIR/direct)
#
# Environment: OSHMEM_OSHCC / OSHMEM_OSHRUN name Open MPI's wrappers when they
# are not the oshcc/oshrun on PATH; SHMEM_SYMMETRIC_SIZE (default 64M here)
# goes to both implementations.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
benchmarks=(put_latency get_latency put_bw get_bw atomic_latency alltoall_bw barrier_latency
            reduce_bw)

build=
npes=2
quick=
only=
use_oshmem=yes
main_job=
fabric=
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
    --fabric) fabric=yes; shift ;;
    --csv-dir) [ $# -ge 2 ] || die "--csv-dir needs a directory"; csv_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) [ -z "$build" ] || die "two build directories given: '$build' and '$1'"; build=$1; shift ;;
    esac
done
build=${build:-$root/build}
case $npes in ''|*[!0-9]*|0) die "invalid PE count '$npes'" ;; esac
[ -n "$fabric" ] && [ -n "$main_job" ] && die "--fabric and --main-job exclude each other"
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
[ -n "$fabric" ] && targets+=(test/perf/put_latency)   # the route check
for b in "${benchmarks[@]}"; do targets+=("test/perf/$b"); done
echo "== building ushmem benchmarks in $build"
ninja -C "$build" "${targets[@]}" >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/compare_oshmem.XXXXXX")
trap 'rm -rf "$work"' EXIT
csv_dir=${csv_dir:-$work}
mkdir -p "$csv_dir"

# A leg runs every benchmark with both implementations, each in its own
# environment. leg_setup LEG sets u_env and o_env (env(1) arguments), o_leg_flags
# (more oshrun options for OSHMEM) and leg_title. The default mode's one leg
# keeps the caller's environment as it is.
leg_setup() {
    case $1 in
    fabric)
        u_env=(USHMEM_IPC=0 FI_PROVIDER=tcp)
        o_env=("UCX_TLS=tcp,self")
        o_leg_flags=(--mca btl "self,tcp")
        leg_title="fabric: ushmem USHMEM_IPC=0 FI_PROVIDER=tcp vs OSHMEM UCX_TLS=tcp,self"
        ;;
    direct)
        u_env=(-u USHMEM_IPC -u FI_PROVIDER)
        o_env=(-u UCX_TLS)
        o_leg_flags=()
        leg_title="direct: ushmem direct route vs OSHMEM defaults"
        ;;
    *) u_env=(); o_env=(); o_leg_flags=(); leg_title= ;;
    esac
}
leg_setup default

ushmem_run() { # npes benchmark args...
    local n=$1 b=$2
    shift 2
    env "${u_env[@]}" "$build/tools/oshrun" -n "$n" "$build/test/perf/$b" "$@"
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
    if [ -n "$fabric" ] && ! "$osh_cc" -std=c11 -O2 -o "$work/route_check" \
            "$root/test/perf/rma_latency.c" "$root/test/perf/bench.c" 2>"$work/route_check.cc.log"; then
        echo "   route check: OSHMEM build failed:"; sed 's/^/     /' "$work/route_check.cc.log"
    fi
fi

# --- run and join --------------------------------------------------------------
# check_routes LEG: one tiny put_latency run of each implementation with its log
# turned up; prints what they use between PEs and returns 1 when that is not
# what the leg is about (fabric: tcp on both sides; direct: ushmem's direct route).
check_routes() {
    local leg=$1 rc=0 rma prov peers tl
    USHMEM_LOG_LEVEL=debug ushmem_run "$npes" put_latency --min-size 8 --max-size 8 \
        --iters 100 > /dev/null 2> "$work/route_check.ushmem.log" || true
    rma=$(sed -n 's/.*\[PE 0\] DEBUG: routes to PE 1: RMA \([^,]*\),.*/\1/p' \
        "$work/route_check.ushmem.log" | head -1)
    prov=$(sed -n 's/.*\[PE 0\] DEBUG: ofi: PE 0 uses provider \([^ ]*\) .*/\1/p' \
        "$work/route_check.ushmem.log" | head -1)
    echo "   ushmem (USHMEM_LOG_LEVEL=debug): PE 0 -> PE 1 RMA ${rma:-?}${prov:+, libfabric provider $prov}"
    if [ "$leg" = fabric ] && [ "${prov%%;*}" != tcp ]; then
        echo "   WARNING: ushmem is not on libfabric's tcp provider"; rc=1
    elif [ "$leg" = direct ] && [ "$rma" != direct ]; then
        echo "   WARNING: ushmem is not on its direct route"; rc=1
    fi
    [ -n "$use_oshmem" ] && [ -x "$work/route_check" ] || return "$rc"
    # UCX writes its log to stdout. A peer's endpoint is the ep_cfg line
    # without the self transport.
    (cd "$work" && UCX_LOG_LEVEL=info env "${o_env[@]}" "$osh_run" "${osh_flags[@]}" \
        "${o_leg_flags[@]}" -np "$npes" ./route_check --min-size 8 --max-size 8 --iters 100) \
        > "$work/route_check.oshmem.log" 2>&1 || true
    peers=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$work/route_check.oshmem.log" | grep -v 'self/' |
        sed 's/^ep_cfg\[[0-9]*\]: //' | sort -u | paste -sd ';' - || true)
    echo "   OSHMEM (UCX_LOG_LEVEL=info): peers over ${peers:-? (no ep_cfg line)}"
    if [ "$leg" = fabric ]; then
        tl=$(grep -o '[a-z0-9_]*/[a-z0-9_.:]*' <<< "$peers" | grep -v '^tcp/' | sort -u | tr '\n' ' ' || true)
        if [ -z "$peers" ] || [ -n "$tl" ]; then
            echo "   WARNING: OSHMEM's peers are not on tcp only${tl:+ (also ${tl% })}"; rc=1
        fi
    fi
    return "$rc"
}

# join_tables prints the two CSVs side by side, keyed by the first column, using
# the first value column; it records the summary figures in the file summary.
join_tables() { # name ushmem.csv oshmem.csv summary [title]
    awk -F, -v name="$1" -v summary="$4" -v title="$5" '
        { file = FILENAME == ARGV[1] ? 1 : 2 }
        /^#/ { next }
        file == 1 && !seen1++ { label = $2; next }
        file == 2 && !seen2++ { next }
        file == 1 { keys[++n] = $1; u[$1] = $2; next }
        file == 2 { o[$1] = $2 }
        END {
            # The first value column decides (reduce_bw leads with latency).
            bw = label != "" ? label ~ /bandwidth/ : name ~ /_bw$/
            printf "\n== %s%s, %s; ratio = ushmem / OSHMEM (%s is better)\n", name,
                   title == "" ? "" : " [" title "]",
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

# One line: small put/get latency and 1 MiB put/get bandwidth.
print_summary() { # summary [title]
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
                printf "\nsummary%s (ushmem vs OSHMEM, %d PEs): %s\n",
                       title == "" ? "" : " [" title "]", npes, line
        }' npes="$npes" title="$2" "$1"
}

if [ -n "$fabric" ]; then
    legs=(fabric direct)
else
    legs=(default)
fi
failed=0
for leg in "${legs[@]}"; do
    leg_setup "$leg"
    leg_dir=$csv_dir
    if [ "$leg" != default ]; then
        leg_dir=$csv_dir/$leg
        mkdir -p "$leg_dir"
        echo "== leg $leg_title"
        check_routes "$leg" || failed=1
    fi
    for b in "${benchmarks[@]}"; do
        u_csv=$leg_dir/$b.ushmem.csv
        o_csv=$leg_dir/$b.oshmem.csv
        : > "$o_csv"
        echo "== running $b: ushmem, $npes PEs"
        if ! ushmem_run "$npes" "$b" --csv $quick "${bench_args[@]}" > "$u_csv"; then
            echo "   $b failed with ushmem"; failed=1
        fi
        if [ -n "$use_oshmem" ] && [ -x "$work/$b" ]; then
            echo "== running $b: OSHMEM, $npes PEs"
            if ! (cd "$work" && env "${o_env[@]}" "$osh_run" "${osh_flags[@]}" "${o_leg_flags[@]}" \
                    -np "$npes" "./$b" --csv $quick "${bench_args[@]}") > "$o_csv" 2> "$work/$b.run.log"; then
                echo "   $b failed with OSHMEM:"; tail -5 "$work/$b.run.log" | sed 's/^/     /'
            fi
        fi
    done
done

for leg in "${legs[@]}"; do
    leg_setup "$leg"
    leg_dir=$csv_dir
    [ "$leg" = default ] || leg_dir=$csv_dir/$leg
    : > "$work/summary.$leg"
    for b in "${benchmarks[@]}"; do
        join_tables "$b" "$leg_dir/$b.ushmem.csv" "$leg_dir/$b.oshmem.csv" "$work/summary.$leg" \
            "$leg_title"
    done
done
for leg in "${legs[@]}"; do
    leg_setup "$leg"
    print_summary "$work/summary.$leg" "${leg_title%%:*}"
done
exit "$failed"
