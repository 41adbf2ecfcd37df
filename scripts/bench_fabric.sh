#!/usr/bin/env bash
# Measures ushmem's two routes between 2 PEs of one node: the direct route
# (peer heaps mapped, the default) and the fabric route (USHMEM_IPC=0: every
# peer over libfabric, as between nodes) with each of the providers tcp, shm
# and sockets. For each route it runs put and get latency, put and get
# bandwidth (8 B to 1 MiB) and long fetch-add latency under the build's
# oshrun, then prints one summary table at 8 B and 1 MiB and the same as CSV.
# Before a route's runs, one tiny run with USHMEM_LOG_LEVEL=debug shows the
# route and the provider that PE 0 really uses towards PE 1.
#
#   scripts/bench_fabric.sh [options] [BUILD_DIR]
#
#   BUILD_DIR       ushmem build directory (default ./build); set up as a
#                   release build if it does not exist, then brought up to
#                   date with ninja
#   --quick         only 8 B and 1 MiB, with a tenth of the iterations
#   --routes LIST   comma-separated routes out of direct,tcp,shm,sockets
#                   (default: all four)
#   --csv-dir DIR   keep every run's CSV and stderr in DIR
#   --timeout S     end a run after S seconds (default 120, 30 with --quick);
#                   its figures show as '-'
#
# A failed or timed-out run leaves '-' in the table, is named under it and
# makes the exit status 1.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
all_routes=(direct tcp shm sockets)
benchmarks=(put_latency get_latency put_bw get_bw atomic_latency)

build=
quick=
routes=("${all_routes[@]}")
csv_dir=
run_timeout=

die() { echo "bench_fabric.sh: $*" >&2; exit 2; }
say() { echo "== $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=yes; shift ;;
    --routes) [ $# -ge 2 ] || die "--routes needs a list"; IFS=, read -r -a routes <<< "$2"; shift 2 ;;
    --csv-dir) [ $# -ge 2 ] || die "--csv-dir needs a directory"; csv_dir=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; run_timeout=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) [ -z "$build" ] || die "two build directories given: '$build' and '$1'"; build=$1; shift ;;
    esac
done
build=${build:-$root/build}
for r in "${routes[@]}"; do
    case $r in direct|tcp|shm|sockets) ;; *) die "unknown route '$r' (direct, tcp, shm, sockets)" ;; esac
done
run_timeout=${run_timeout:-$([ -n "$quick" ] && echo 30 || echo 120)}
case $run_timeout in ''|*[!0-9]*|0) die "invalid timeout '$run_timeout'" ;; esac

# --- build ---------------------------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
    say "setting up $build (release)"
    meson setup "$build" "$root" --buildtype=release >/dev/null
fi
targets=(tools/oshrun)
for b in "${benchmarks[@]}"; do targets+=("test/perf/$b"); done
say "building the benchmarks in $build"
ninja -C "$build" "${targets[@]}" >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_fabric.XXXXXX")
trap 'rm -rf "$work"' EXIT
csv_dir=${csv_dir:-$work}
mkdir -p "$csv_dir"

# route_env ROUTE: the environment of a route's runs, as env(1) arguments. The
# direct route drops the variables that would turn the fabric route on.
route_env() {
    case $1 in
    direct) echo "-u USHMEM_IPC -u FI_PROVIDER" ;;
    sockets) echo "USHMEM_IPC=0 FI_PROVIDER=sockets FI_SOCKETS_PE_WAITTIME=0" ;;
    *) echo "USHMEM_IPC=0 FI_PROVIDER=$1" ;;
    esac
}
route_label() { [ "$1" = direct ] && echo direct || echo "ofi/$1"; }

# Sizes: the whole sweep, or with --quick one run per summary size.
if [ -n "$quick" ]; then
    size_runs=("--min-size 8 --max-size 8 --quick" "--min-size 1M --max-size 1M --quick")
else
    size_runs=("--min-size 8 --max-size 1M")
fi

bench() { # route benchmark args...: one oshrun of 2 PEs in the route's environment
    local route=$1 b=$2
    shift 2
    # shellcheck disable=SC2046  # route_env is a list of words by design
    env $(route_env "$route") "$build/tools/oshrun" -n 2 --timeout "$run_timeout" \
        "$build/test/perf/$b" "$@"
}

notes=()
failed=0
start=$SECONDS
for route in "${routes[@]}"; do
    label=$(route_label "$route")
    # What PE 0 uses towards PE 1, from its own debug log.
    USHMEM_LOG_LEVEL=debug bench "$route" put_latency --min-size 8 --max-size 8 --iters 100 \
        > /dev/null 2> "$work/check.log" || true
    rma=$(sed -n 's/.*\[PE 0\] DEBUG: routes to PE 1: RMA \([^,]*\),.*/\1/p' "$work/check.log" | head -1)
    prov=$(sed -n 's/.*\[PE 0\] DEBUG: ofi: PE 0 uses provider \([^ ]*\) .*/\1/p' "$work/check.log" | head -1)
    notes+=("$label: PE 0 -> PE 1 RMA ${rma:-?}${prov:+, provider $prov}")
    if [ "$route" != direct ] && [ "${prov%%;*}" != "$route" ]; then
        notes+=("$label: WARNING: asked for provider $route, the log shows '${prov:-nothing}'")
        failed=1
    fi

    for b in "${benchmarks[@]}"; do
        csv=$csv_dir/$route.$b.csv
        : > "$csv"
        say "$label: $b"
        for sizes in "${size_runs[@]}"; do
            [ "$b" = atomic_latency ] && [ "$sizes" != "${size_runs[0]}" ] && continue
            # shellcheck disable=SC2086  # sizes is a list of options
            if bench "$route" "$b" --csv $sizes >> "$csv" 2>> "$csv_dir/$route.$b.err"; then
                continue
            else
                rc=$?
            fi
            if [ "$rc" -eq 124 ]; then
                notes+=("$label $b: timed out after $run_timeout s")
            else
                notes+=("$label $b: failed with status $rc: $(tail -1 "$csv_dir/$route.$b.err")")
            fi
            failed=1
        done
    done
done
elapsed=$((SECONDS - start))

# --- summary -------------------------------------------------------------------
# value route benchmark key: the first value column of the row named key.
value() {
    awk -F, -v key="$3" '!/^#/ && $1 == key { v = $2 } END { if (v != "") print v }' \
        "$csv_dir/$1.$2.csv" 2>/dev/null
}
columns=(put_latency:8 put_latency:1048576 get_latency:8 get_latency:1048576
         put_bw:8 put_bw:1048576 get_bw:8 get_bw:1048576 atomic_latency:fetch_add)
labels=(put_lat_8B put_lat_1MiB get_lat_8B get_lat_1MiB put_bw_8B put_bw_1MiB get_bw_8B get_bw_1MiB
        fadd_lat)
csv_labels=(put_lat_8B_us put_lat_1MiB_us get_lat_8B_us get_lat_1MiB_us
            put_bw_8B_mbs put_bw_1MiB_mbs get_bw_8B_mbs get_bw_1MiB_mbs fetch_add_lat_us)

table=()
for route in "${routes[@]}"; do
    row=$(route_label "$route")
    for c in "${columns[@]}"; do
        v=$(value "$route" "${c%%:*}" "${c#*:}")
        row+=",${v:--}"
    done
    table+=("$row")
done

echo "# bench_fabric: ushmem, 2 PEs, $(nproc) cores${quick:+, --quick}; latency in us, bandwidth in MB/s; fadd: long fetch-add latency (us)"
printf "# %-12s" Route
for l in "${labels[@]}"; do printf "%13s" "$l"; done
printf "\n"
for row in "${table[@]}"; do
    IFS=, read -r -a cells <<< "$row"
    printf "%-14s" "${cells[0]}"
    for v in "${cells[@]:1}"; do
        if [ "$v" = - ]; then printf "%13s" -; else printf "%13.3f" "$v"; fi
    done
    printf "\n"
done
for n in "${notes[@]}"; do echo "# $n"; done
echo "# $elapsed s in all"
echo
echo "# bench_fabric,ushmem,2"
(IFS=,; echo "route,${csv_labels[*]}")
for row in "${table[@]}"; do echo "$row"; done
exit "$failed"
