#!/usr/bin/env bash
# Installs the dependencies, builds and runs the main benchmark job: put
# bandwidth and alltoall bandwidth on 4 PEs with the default (cpu) backend.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build=${BUILD_DIR:-build}
npes=${NPES:-4}
"$build/tools/oshrun" -n "$npes" "$build/test/perf/put_bw" --pairs "$@"
"$build/tools/oshrun" -n "$npes" "$build/test/perf/alltoall_bw" "$@"
