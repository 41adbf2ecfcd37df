#!/bin/bash
# Compiles all_calls.cl (every device call of include/ushmem/device.h) as
# OpenCL C to SPIR-V and checks the result:
#   - spirv-val accepts it;
#   - every atomic and memory barrier is at CrossDevice scope (constant 0),
#     each kind of atomic the header uses is there, and the state is an
#     exported CrossWorkgroup variable named ushmem_device_state (the name
#     the ze backend looks up with zeModuleGetGlobalPointer);
#   - the kernels call each ushmem_ and ushmemx_ function of the header
#     directly, so that a new call cannot go untested.
# usage: check_spirv.sh SOURCE INCLUDE_DIR WORK_DIR CL_STD [clang flags...]
# Exits 77 (skipped) when clang, llvm-spirv or spirv-val is missing;
# CLANG, LLVM_SPIRV, SPIRV_VAL and SPIRV_DIS override the programs found.
set -euo pipefail

src=$1 inc=$2 work=$3 std=$4
shift 4

# The first of the names that is installed.
find_tool() {
    for name in "$@"; do
        if command -v "$name" >/dev/null 2>&1; then
            echo "$name"
            return 0
        fi
    done
    return 1
}
# clang and llvm-spirv of one LLVM version: a translator older than the
# compiler cannot read its bitcode.
clang=${CLANG:-$(find_tool clang-15 clang || true)}
llvm_spirv=${LLVM_SPIRV:-$(find_tool llvm-spirv-15 llvm-spirv || true)}
spirv_val=${SPIRV_VAL:-$(find_tool spirv-val || true)}
spirv_dis=${SPIRV_DIS:-$(find_tool spirv-dis || true)}
for tool in "clang:$clang" "llvm-spirv:$llvm_spirv" "spirv-val:$spirv_val" \
            "spirv-dis:$spirv_dis"; do
    if [ -z "${tool#*:}" ]; then
        echo "${tool%%:*} not found (Debian: apt-get install clang-15 llvm-spirv-15" \
             "spirv-tools); skipping"
        exit 77
    fi
done

mkdir -p "$work"
bc=$work/all_calls.bc spv=$work/all_calls.spv asm=$work/all_calls.spvasm
cl_flags=(-cl-std="$std" -target spir64 -I"$inc" "$@")
echo "$clang ${cl_flags[*]} -O2 -emit-llvm -c $src"

"$clang" "${cl_flags[@]}" -O2 -Wall -Wextra -Wshadow -Werror -emit-llvm -c "$src" -o "$bc"
# SPIR-V 1.4 wants every global an entry point uses in its interface list;
# llvm-spirv 15 leaves out the constant arrays it makes for memset, which
# spirv-val rejects. Up to 1.3 the list holds only inputs and outputs.
"$llvm_spirv" --spirv-max-version=1.3 "$bc" -o "$spv"
"$spirv_val" "$spv"
"$spirv_dis" "$spv" -o "$asm"
echo "spirv-val: valid"

# Scope is the operand after the pointer (after the result type and id when
# there is a result); OpMemoryBarrier's first operand. Constant 0 of an
# integer type is CrossDevice.
awk '
/= OpConstant %u?int 0$/ { zero[$1] = 1 }
/OpAtomic|OpMemoryBarrier/ {
    if ($2 == "=") { op = $3; scope = $6 }
    else if ($1 == "OpMemoryBarrier") { op = $1; scope = $2 }
    else { op = $1; scope = $3 }
    count[op]++
    if (!(scope in zero)) { print "not at CrossDevice scope: " $0; other[op]++; bad++ }
}
END {
    n = split("OpAtomicLoad OpAtomicStore OpAtomicExchange OpAtomicCompareExchange OpAtomicIAdd " \
              "OpAtomicAnd OpAtomicOr OpAtomicXor OpMemoryBarrier", need, " ")
    for (i = 1; i <= n; i++) {
        if (!(need[i] in count)) { print "no " need[i] " in the module"; bad++ }
        else printf "%s: %d, %d of them at another scope than CrossDevice\n", need[i],
                    count[need[i]], other[need[i]]
    }
    exit bad > 0
}' "$asm"

export_line='OpDecorate %ushmem_device_state LinkageAttributes "ushmem_device_state" Export'
if ! grep -qF "$export_line" "$asm" ||
   ! grep -qE '^ *%ushmem_device_state = OpVariable [^ ]+ CrossWorkgroup' "$asm"; then
    echo "ushmem_device_state is not an exported CrossWorkgroup variable"
    exit 1
fi
echo "ushmem_device_state: exported, CrossWorkgroup"

# Every device call, from the preprocessed header, against the functions
# each kernel calls at -O0 (nothing inlined). ushmem_ring_* are ring.h's.
"$clang" "${cl_flags[@]}" -E -P -x cl "$inc/ushmem/device.h" |
    grep -oE 'static inline [^;{(]*\bushmemx?_[a-z0-9_]+ *\(' |
    sed -E 's/.*\b(ushmemx?_[a-z0-9_]+) *\($/\1/' | grep -v '^ushmem_ring_' |
    sort -u >"$work/api.txt"
if [ ! -s "$work/api.txt" ]; then
    echo "found no device calls in the preprocessed device.h"
    exit 1
fi
"$clang" "${cl_flags[@]}" -O0 -emit-llvm -S "$src" -o "$work/all_calls_O0.ll"
awk '/^define .*spir_kernel/ { k = 1; next } /^}/ { k = 0 } k' "$work/all_calls_O0.ll" |
    grep -oE '@ushmemx?_[a-z0-9_]+' | sed 's/^@//' | sort -u >"$work/called.txt"
missing=$(comm -23 "$work/api.txt" "$work/called.txt")
if [ -n "$missing" ]; then
    echo "device calls that no kernel of $(basename "$src") calls:"
    echo "$missing"
    exit 1
fi
echo "device calls: $(wc -l <"$work/api.txt"), each called by a kernel"
