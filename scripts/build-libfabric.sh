#!/usr/bin/env bash
# Builds the vendored libfabric release into a prefix outside the tree, with
# GPU support where the machine has it, so that ushmem can be built against it
# instead of the distribution's (Debian 12 ships 1.17, without GPU-RMA).
#
# Usage: scripts/build-libfabric.sh [PREFIX]
#   PREFIX            where to install (default: $HOME/.local/ushmem-libfabric)
#   LIBFABRIC_TARBALL the release tarball (default: ../shared/vendor/libfabric-2.6.0.tar.gz)
#   CUDA_PATH         the CUDA toolkit (default: /usr/local/cuda); CUDA support needs its
#                     nvml.h, which some toolkits lack: without it libfabric is built without CUDA
#   LIBFABRIC_CUDA    auto (default), yes (fail without nvml.h) or no
#   LIBFABRIC_ZE      auto (default: when level_zero/ze_api.h is installed), yes or no
#   LIBFABRIC_FABTESTS=1 also builds fabtests into the prefix
#   JOBS              make's parallelism (default: nproc)
#
# Then build ushmem against it (meson finds libfabric through pkg-config):
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig meson setup build-ofi
# The libraries are loaded from PREFIX/lib at run time (see
# docs/guide/libfabric-hmem.md, "Loading libfabric").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-${HOME:-/tmp}/.local/ushmem-libfabric}
tarball=${LIBFABRIC_TARBALL:-$root/../shared/vendor/libfabric-2.6.0.tar.gz}
cuda=${CUDA_PATH:-/usr/local/cuda}
want_cuda=${LIBFABRIC_CUDA:-auto}
want_ze=${LIBFABRIC_ZE:-auto}
jobs=${JOBS:-$(nproc)}

case "$prefix" in
    /*) ;;
    *) prefix=$PWD/$prefix ;;
esac
case "$prefix/" in
    "$root"/*)
        # Not inside the source tree: a build of third-party code must never
        # end up committed with it. An ignored folder is fine.
        if ! git -C "$root" check-ignore -q "$prefix"; then
            echo "build-libfabric: $prefix is inside the source tree and not ignored by git" >&2
            exit 2
        fi
        ;;
esac
if [ ! -f "$tarball" ]; then
    echo "build-libfabric: no release tarball at $tarball (set LIBFABRIC_TARBALL)" >&2
    exit 2
fi

opts=(--prefix="$prefix" --disable-static --enable-only
      --enable-shm --enable-tcp --enable-rxm --enable-sockets --enable-udp --enable-rxd)
case "$want_cuda" in
    no) cuda_note="no (LIBFABRIC_CUDA=no)" ;;
    *)
        if [ -f "$cuda/include/cuda.h" ] && [ -f "$cuda/include/nvml.h" ]; then
            opts+=(--with-cuda="$cuda" --enable-cuda-dlopen)
            cuda_note="yes ($cuda, loaded at run time)"
        elif [ "$want_cuda" = yes ]; then
            echo "build-libfabric: CUDA asked for, but $cuda/include has no cuda.h and nvml.h" >&2
            exit 2
        else
            cuda_note="no ($cuda/include/nvml.h missing)"
        fi
        ;;
esac
case "$want_ze" in
    no) ze_note="no (LIBFABRIC_ZE=no)" ;;
    *)
        if [ -f /usr/include/level_zero/ze_api.h ]; then
            opts+=(--with-ze=/usr --enable-ze-dlopen)
            ze_note="yes (loader loaded at run time)"
        elif [ "$want_ze" = yes ]; then
            echo "build-libfabric: Level Zero asked for, but level_zero/ze_api.h is missing" >&2
            exit 2
        else
            ze_note="no (level_zero/ze_api.h missing)"
        fi
        ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/ushmem-libfabric.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
echo "build-libfabric: $(basename "$src") into $prefix; CUDA: $cuda_note; Level Zero: $ze_note"
(cd "$src" && ./configure "${opts[@]}" >"$work/configure.log" 2>&1) || {
    tail -n 40 "$work/configure.log" >&2
    exit 1
}
make -C "$src" -j"$jobs" >"$work/make.log" 2>&1 || { tail -n 40 "$work/make.log" >&2; exit 1; }
make -C "$src" install >"$work/install.log" 2>&1 || { tail -n 20 "$work/install.log" >&2; exit 1; }
if [ "${LIBFABRIC_FABTESTS:-0}" = 1 ]; then
    fabtests_opts=(--prefix="$prefix" --with-libfabric="$prefix")
    case "$cuda_note" in yes*) fabtests_opts+=(--with-cuda="$cuda") ;; esac
    (cd "$src/fabtests" && ./configure "${fabtests_opts[@]}" >"$work/fabtests.log" 2>&1 &&
        make -j"$jobs" >>"$work/fabtests.log" 2>&1 && make install >>"$work/fabtests.log" 2>&1) || {
        tail -n 40 "$work/fabtests.log" >&2
        exit 1
    }
fi
"$prefix/bin/fi_info" --version | head -n 2
echo "build-libfabric: done; build ushmem with PKG_CONFIG_PATH=$prefix/lib/pkgconfig"
