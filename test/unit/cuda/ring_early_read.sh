#!/bin/sh
# Past the ring's first lap every request from a GPU thread needs the
# counter's copy to find its slot free; device code reads it before taking
# its ticket (a relaxed load issued ahead of the ticket's atomic), so that
# the two overlap rather than add up (docs/performance/proxy.md). Checks
# that order in the PTX of a user's kernel (no GPU needed), and that the
# check tells the former code (-DUSHMEMI_RING_EARLY_READ=0) apart.
# Usage: ring_early_read.sh NVCC INCLUDE_DIR KERNEL.cu ARCH
set -eu
nvcc=$1 inc=$2 src=$3 arch=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The line of the first relaxed load at system scope, and of the first
# ticket atomic; "early" when the load comes first.
order() {
    "$nvcc" -arch="$arch" -I"$inc" "$@" -ptx "$src" -o "$dir/k.ptx"
    awk '/ld\.relaxed\.sys\.u64/ && !l { l = NR }
         /atom\.add\.relaxed\.sys\.u64/ && !a { a = NR }
         END { if (!a) print "no-ticket"; else if (l && l < a) print "early"; else print "late" }' \
        "$dir/k.ptx"
}
now=$(order)
former=$(order -DUSHMEMI_RING_EARLY_READ=0)
echo "the counter's copy is read: $now the ticket's atomic (the former code: $former)"
[ "$now" = early ] || { echo "FAIL: the read must be issued before the ticket's atomic"; exit 1; }
[ "$former" = late ] || { echo "FAIL: the check does not tell the former code apart"; exit 1; }
