#!/usr/bin/env bash
# Compiles the SYCL test programs and benchmark for NVIDIA GPUs (AdaptiveCpp's
# cuda target) on this machine, and bundles what they load at run time, so
# that scripts/gpu_run.sh (part "sycl") runs them on a GPU machine, which has
# neither acpp nor LLVM.
#
# Usage: scripts/build-sycl-gpu.sh [OUT]      (default OUT: .sycl-gpu, git-ignored)
#   ACPP         acpp built with its CUDA backend: scripts/build-adaptivecpp.sh
#                with ACPP_CUDA=yes (default: $HOME/.local/ushmem-adaptivecpp-cuda/bin/acpp)
#   ACPP_RT      the same release's runtime built without LLVM: scripts/build-adaptivecpp.sh
#                with ACPP_CUDA=yes ACPP_RUNTIME_ONLY=yes (default: $ACPP's prefix + "-rt")
#   SYCL_GPU_ARCH  the GPUs' architecture (default sm_90: H100, H200)
#   BUILD_DIR    a configured ushmem build whose libushmem the programs link
#                against at build time (default: build-sycl-gpu, set up here)
#
# OUT holds bin/ (sycl_device_api, sycl_device_api_ring, sycl_ishmem_shape,
# sycl_bench) and lib/ (acpp's runtime, its cuda and OpenMP backends, and the
# Debian libraries they need: libomp, Boost context and fiber). On the GPU
# machine the programs load libushmem from that machine's build, and
# LD_LIBRARY_PATH=OUT/lib.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-.sycl-gpu}
acpp=${ACPP:-${HOME:-/tmp}/.local/ushmem-adaptivecpp-cuda/bin/acpp}
acpp_prefix=$(cd "$(dirname "$acpp")/.." && pwd)
rt=${ACPP_RT:-$acpp_prefix-rt}
arch=${SYCL_GPU_ARCH:-sm_90}
build=${BUILD_DIR:-build-sycl-gpu}

if [ ! -x "$acpp" ] || [ ! -f "$acpp_prefix/etc/AdaptiveCpp/acpp-cuda.json" ]; then
    echo "build-sycl-gpu: $acpp is not an acpp with the CUDA backend (ACPP_CUDA=yes scripts/build-adaptivecpp.sh)" >&2
    exit 2
fi
if [ ! -f "$rt/lib/libacpp-rt.so" ] || [ ! -f "$rt/lib/hipSYCL/librt-backend-cuda.so" ]; then
    echo "build-sycl-gpu: no LLVM-free runtime at $rt (ACPP_CUDA=yes ACPP_RUNTIME_ONLY=yes scripts/build-adaptivecpp.sh $rt)" >&2
    exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dsycl="$acpp" >/dev/null
fi
meson compile -C "$build" ushmem:shared_library >/dev/null
[ -x "$build/tools/oshsycl" ] || { echo "build-sycl-gpu: $build has no tools/oshsycl" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/hipSYCL"
export OSHCC_INCDIR=$root/include OSHCC_LIBDIR=$root/$build/src/host ACPP=$acpp
flags=(--acpp-targets="cuda:$arch" -O2 -Wall -Wextra -Werror -Wno-unknown-cuda-version)
compile() {
    local name=$1 src=$2
    shift 2
    echo "build-sycl-gpu: $name"
    "$build/tools/oshsycl" "${flags[@]}" "$@" -o "$out/bin/$name" "$src"
}
compile sycl_device_api test/unit/sycl/sycl_device_api.cpp
compile sycl_device_api_ring test/unit/sycl/sycl_device_api.cpp -DUSHMEMI_DEV_SYCL_ALL_IN_RING=1
compile sycl_ishmem_shape test/unit/sycl/sycl_ishmem_shape.cpp
compile sycl_bench test/perf/sycl/sycl_bench.cpp

cp "$rt/lib/libacpp-rt.so" "$rt/lib/libacpp-common.so" "$out/lib/"
cp "$rt/lib/hipSYCL/librt-backend-cuda.so" "$rt/lib/hipSYCL/librt-backend-omp.so" "$out/lib/hipSYCL/"
# The Debian libraries the programs and backends name that the GPU
# machines lack.
for lib in libomp.so.5 libboost_context.so.1.74.0 libboost_fiber.so.1.74.0; do
    path=$(ldd "$out/bin/sycl_bench" "$out/lib/hipSYCL/librt-backend-omp.so" |
               awk -v l="$lib" '$1 == l { print $3; exit }')
    if [ -z "$path" ] || [ ! -f "$path" ]; then
        echo "build-sycl-gpu: cannot find $lib" >&2
        exit 1
    fi
    cp -L "$path" "$out/lib/$lib"
done
du -sh "$out"
echo "build-sycl-gpu: done; on the GPU machine: LD_LIBRARY_PATH=$out/lib:BUILD/src/host oshrun -n 2 $out/bin/sycl_device_api"
