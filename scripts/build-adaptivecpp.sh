#!/usr/bin/env bash
# Builds the vendored AdaptiveCpp release (a SYCL 2020 implementation) into a
# prefix outside the tree, so that `oshsycl` can compile SYCL kernels that call
# ushmem. Debian 12 packages no SYCL compiler.
#
# Usage: scripts/build-adaptivecpp.sh [PREFIX]
#   PREFIX              where to install (default: $HOME/.local/ushmem-adaptivecpp)
#   ACPP_TARBALL        the release tarball (default: ../shared/vendor/AdaptiveCpp-24.06.0.tar.gz)
#   ACPP_CUDA           no (default) or yes: the CUDA backend, for NVIDIA GPUs; the
#                       patches in scripts/adaptivecpp/ are applied first (24.06 predates
#                       CUDA 13: cudaMemPrefetchAsync and cudaMemAdvise take a
#                       cudaMemLocation, cudaDeviceProp lost clockRate), and acpp is
#                       pointed at a view of the toolkit that clang 16 can use (below)
#   ACPP_RUNTIME_ONLY   no (default) or yes: only acpp's runtime and its backends, built
#                       without LLVM (no generic target, no accelerated CPU compiler),
#                       for machines that run programs compiled elsewhere (a GPU machine
#                       without LLVM: scripts/build-sycl-gpu.sh bundles it); a few minutes
#   CUDA_PATH           the CUDA toolkit for ACPP_CUDA=yes (default: /usr/local/cuda)
#   ACPP_DEPS=1         installs the Debian packages it needs first (root)
#   JOBS                build parallelism (default: nproc)
#
# It needs clang-16 llvm-16-dev libclang-16-dev libomp-16-dev libboost-fiber-dev
# libboost-context-dev cmake. The OpenMP backend (kernels as host threads) is always
# built; SPIR-V output for Level Zero is not (AdaptiveCpp fetches its LLVM-SPIR-V
# translator from the network at configure time). Then:
#   ACPP=PREFIX/bin/acpp oshsycl prog.cpp -o prog
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-${HOME:-/tmp}/.local/ushmem-adaptivecpp}
tarball=${ACPP_TARBALL:-$root/../shared/vendor/AdaptiveCpp-24.06.0.tar.gz}
want_cuda=${ACPP_CUDA:-no}
runtime_only=${ACPP_RUNTIME_ONLY:-no}
cuda=${CUDA_PATH:-/usr/local/cuda}
jobs=${JOBS:-$(nproc)}
packages=(clang-16 llvm-16-dev libclang-16-dev libomp-16-dev
          libboost-fiber-dev libboost-context-dev cmake)

case "$prefix" in
    /*) ;;
    *) prefix=$PWD/$prefix ;;
esac
case "$prefix/" in
    "$root"/*)
        if ! git -C "$root" check-ignore -q "$prefix"; then
            echo "build-adaptivecpp: $prefix is inside the source tree and not ignored by git" >&2
            exit 2
        fi
        ;;
esac
if [ ! -f "$tarball" ]; then
    echo "build-adaptivecpp: no release tarball at $tarball (set ACPP_TARBALL)" >&2
    exit 2
fi
if [ "${ACPP_DEPS:-0}" = 1 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi
for tool in /usr/bin/clang++-16 /usr/lib/llvm-16/lib/cmake/llvm/LLVMConfig.cmake \
            /usr/include/boost/fiber/all.hpp; do
    if [ ! -e "$tool" ]; then
        echo "build-adaptivecpp: $tool is missing; install ${packages[*]} (or set ACPP_DEPS=1)" >&2
        exit 2
    fi
done

opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix"
      -DLLVM_DIR=/usr/lib/llvm-16/lib/cmake/llvm
      -DCLANG_EXECUTABLE_PATH=/usr/bin/clang++-16
      -DCMAKE_C_COMPILER=/usr/bin/clang-16 -DCMAKE_CXX_COMPILER=/usr/bin/clang++-16
      -DWITH_LLVM_TO_SPIRV=OFF -DWITH_OPENCL_BACKEND=OFF -DWITH_LEVEL_ZERO_BACKEND=OFF
      -DWITH_ROCM_BACKEND=OFF)
case "$want_cuda" in
    yes)
        if [ ! -f "$cuda/include/cuda.h" ]; then
            echo "build-adaptivecpp: ACPP_CUDA=yes, but $cuda/include/cuda.h is missing" >&2
            exit 2
        fi
        opts+=(-DWITH_CUDA_BACKEND=ON -DCUDAToolkit_ROOT="$cuda" -DCUDA_TOOLKIT_ROOT_DIR="$cuda")
        ;;
    no) opts+=(-DWITH_CUDA_BACKEND=OFF) ;;
    *) echo "build-adaptivecpp: ACPP_CUDA must be yes or no, not '$want_cuda'" >&2; exit 2 ;;
esac
targets=(rt-backend-omp)
[ "$want_cuda" = yes ] && targets+=(rt-backend-cuda)
case "$runtime_only" in
    yes) opts+=(-DACPP_COMPILER_FEATURE_PROFILE=minimal) ;;
    no) ;;
    *) echo "build-adaptivecpp: ACPP_RUNTIME_ONLY must be yes or no, not '$runtime_only'" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/ushmem-adaptivecpp.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
if [ "$want_cuda" = yes ]; then
    for p in "$root"/scripts/adaptivecpp/*.patch; do
        [ -e "$p" ] || continue
        patch -d "$src" -p1 -s <"$p"
    done
fi
echo "build-adaptivecpp: $(basename "$src") into $prefix; CUDA backend: $want_cuda; runtime only: $runtime_only"
cmake -S "$src" -B "$work/build" "${opts[@]}" >"$work/cmake.log" 2>&1 || {
    tail -n 40 "$work/cmake.log" >&2
    exit 1
}
if [ "$runtime_only" = yes ]; then
    cmake --build "$work/build" -j"$jobs" --target "${targets[@]}" >"$work/build.log" 2>&1 || {
        grep -m 20 -E "error|Error" "$work/build.log" >&2 || true
        exit 1
    }
    mkdir -p "$prefix/lib/hipSYCL"
    cp "$work/build/src/runtime/libacpp-rt.so" "$work/build/src/common/libacpp-common.so" "$prefix/lib/"
    for t in "${targets[@]}"; do cp "$work/build/src/runtime/lib$t.so" "$prefix/lib/hipSYCL/"; done
    echo "build-adaptivecpp: done; the runtime (${targets[*]}) is in $prefix/lib"
    exit 0
fi
cmake --build "$work/build" -j"$jobs" >"$work/build.log" 2>&1 || {
    grep -m 20 -E "error|Error" "$work/build.log" >&2 || true
    tail -n 20 "$work/build.log" >&2
    exit 1
}
cmake --install "$work/build" >"$work/install.log" 2>&1 || { tail -n 20 "$work/install.log" >&2; exit 1; }
if [ "$want_cuda" = yes ]; then
    # clang 16 compiles acpp's CUDA kernels but expects an older toolkit: its
    # CUDA wrapper includes texture_fetch_functions.h (gone since CUDA 12), and
    # it names fatbinary images --image=profile=sm_NN|compute_NN,file=F (CUDA
    # 13's fatbinary takes --image3=kind=elf|ptx,sm=NN,file=F). So acpp gets a
    # view of the toolkit: links to every file, an empty header, and a
    # fatbinary that rewrites those arguments.
    view=$prefix/lib/ushmem-cuda-view
    rm -rf "$view"
    mkdir -p "$view/bin" "$view/include"
    for e in "$cuda"/*; do
        case $(basename "$e") in bin | include) ;; *) ln -s "$e" "$view/" ;; esac
    done
    for e in "$cuda"/bin/* "$cuda"/include/*; do
        ln -s "$e" "$view/$(basename "$(dirname "$e")")/"
    done
    [ -e "$view/include/texture_fetch_functions.h" ] || : >"$view/include/texture_fetch_functions.h"
    rm -f "$view/bin/fatbinary"
    {
        echo '#!/bin/sh'
        echo 'for a in "$@"; do'
        echo '    shift'
        echo '    case $a in'
        echo '    --image=profile=sm_*,file=*)'
        echo '        r=${a#--image=profile=sm_}'
        echo '        set -- "$@" "--image3=kind=elf,sm=${r%%,file=*},file=${r#*,file=}" ;;'
        echo '    --image=profile=compute_*,file=*)'
        echo '        r=${a#--image=profile=compute_}'
        echo '        set -- "$@" "--image3=kind=ptx,sm=${r%%,file=*},file=${r#*,file=}" ;;'
        echo '    *) set -- "$@" "$a" ;;'
        echo '    esac'
        echo 'done'
        echo "exec '$cuda/bin/fatbinary' \"\$@\""
    } >"$view/bin/fatbinary"
    chmod +x "$view/bin/fatbinary"
    sed -i "s|\"default-cuda-path\" *: *\"[^\"]*\"|\"default-cuda-path\" : \"$view\"|" \
        "$prefix/etc/AdaptiveCpp/acpp-cuda.json"
fi
"$prefix/bin/acpp" --acpp-version 2>/dev/null | head -n 3 || true
echo "build-adaptivecpp: done; compile with ACPP=$prefix/bin/acpp oshsycl prog.cpp"
