#!/bin/bash
# The ze backend's own kernels as built into the library (src/device/
# ze_kernels.cl, compiled to SPIR-V at build time): spirv-val accepts the
# module, it has the kernel ushmemi_ze_amo, and every atomic in it is at
# CrossDevice scope (constant 0), each kind the proxy needs among them.
# usage: check_ze_kernels.sh MODULE.spv
# Exits 77 (skipped) without spirv-val and spirv-dis (Debian: spirv-tools).
set -euo pipefail
spv=$1
command -v spirv-val >/dev/null && command -v spirv-dis >/dev/null || {
    echo "spirv-val or spirv-dis missing: skipped"
    exit 77
}
spirv-val "$spv"
asm=$(spirv-dis "$spv")
grep -q 'OpEntryPoint Kernel %[^ ]* "ushmemi_ze_amo"' <<<"$asm" || {
    echo "no kernel ushmemi_ze_amo in $spv"
    exit 1
}
awk '
/= OpConstant %u?int 0$/ { zero[$1] = 1 }
/OpAtomic/ {
    if ($2 == "=") { op = $3; scope = $6 } else { op = $1; scope = $3 }
    count[op]++
    if (!(scope in zero)) { print "not at CrossDevice scope: " $0; bad++ }
}
END {
    n = split("OpAtomicLoad OpAtomicStore OpAtomicExchange OpAtomicCompareExchange " \
              "OpAtomicIAdd OpAtomicAnd OpAtomicOr OpAtomicXor", need, " ")
    for (i = 1; i <= n; i++)
        if (!(need[i] in count)) { print "no " need[i] " in the module"; bad++ }
        else printf "%s: %d\n", need[i], count[need[i]]
    exit bad > 0
}' <<<"$asm"
echo "ze kernels: valid SPIR-V, every atomic at CrossDevice scope"
