#!/bin/sh
# Assembles the small stream collective's kernels (ptx_coll) with ptxas for
# the GPUs the driver JIT-compiles them for: the plain form for sm_80 and
# sm_90, the programmatic-launch form for sm_90; and the proxy's atomic
# kernel for sm_80 and sm_90. Exit 77 (skip) without ptxas.
# Usage: ptx_coll.sh PTX_COLL [PTXAS]
set -eu
prog=$1
ptxas=${2:-}
[ -n "$ptxas" ] || { echo "no ptxas: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$prog" >"$dir/plain.ptx"
"$prog" --pdl >"$dir/pdl.ptx"
for arch in sm_80 sm_90; do
    "$ptxas" -arch=$arch "$dir/plain.ptx" -o "$dir/plain_$arch.cubin"
done
"$ptxas" -arch=sm_90 "$dir/pdl.ptx" -o "$dir/pdl_sm_90.cubin"
"$prog" --amo >"$dir/amo.ptx"
for arch in sm_80 sm_90; do
    "$ptxas" -arch=$arch "$dir/amo.ptx" -o "$dir/amo_$arch.cubin"
done
echo "ushmemi_coll_small assembled for sm_80 and sm_90, ushmemi_coll_small_pdl for sm_90," \
     "ushmemi_amo for sm_80 and sm_90"
