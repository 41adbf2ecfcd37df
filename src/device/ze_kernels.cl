/* The ze backend's own kernels, in OpenCL C, compiled to SPIR-V at build
 * time (src/device/meson.build) and carried inside the library for Level
 * Zero drivers that take SPIR-V. ushmemi_ze_amo is the proxy thread's
 * device atomic: one work-item performs one atomic at all-devices scope on
 * a word of device memory (this device's heap or a peer's as mapped here)
 * and leaves the old value in host memory. The arguments, as ze.c sets them:
 * addr, operand, compare (a 4-byte word in the low half), old, op
 * (numbered as enum ushmem_ring_amo_op, include/ushmem/detail/ring.h), wide
 * (1 for 8 bytes, 0 for 4). Never run on Intel hardware: compiled and
 * checked with spirv-val only. */
#define SCOPE memory_scope_all_svm_devices

#define AMO(A, T, p, op, v, cmp, old)                                                        \
    do {                                                                                     \
        volatile __global A *a_ = (volatile __global A *)(p);                                \
        T c_ = (T)(cmp);                                                                     \
        switch (op) {                                                                        \
        case 0: (old) = atomic_load_explicit(a_, memory_order_acquire, SCOPE); break;        \
        case 1: atomic_store_explicit(a_, (T)(v), memory_order_release, SCOPE); break;       \
        case 2: (old) = atomic_exchange_explicit(a_, (T)(v), memory_order_acq_rel, SCOPE); break; \
        case 3:                                                                              \
            atomic_compare_exchange_strong_explicit(a_, &c_, (T)(v), memory_order_acq_rel,   \
                                                    memory_order_acquire, SCOPE);            \
            (old) = c_;                                                                      \
            break;                                                                           \
        case 4: (old) = atomic_fetch_add_explicit(a_, (T)(v), memory_order_acq_rel, SCOPE); break; \
        case 5: (old) = atomic_fetch_and_explicit(a_, (T)(v), memory_order_acq_rel, SCOPE); break; \
        case 6: (old) = atomic_fetch_or_explicit(a_, (T)(v), memory_order_acq_rel, SCOPE); break;  \
        default: (old) = atomic_fetch_xor_explicit(a_, (T)(v), memory_order_acq_rel, SCOPE); break; \
        }                                                                                    \
    } while (0)

kernel void ushmemi_ze_amo(ulong addr, ulong operand, ulong compare, __global ulong *old,
                           uint op, uint wide)
{
    ulong result = 0;
    if (wide) {
        AMO(atomic_ulong, ulong, addr, op, operand, compare, result);
    } else {
        uint narrow = 0;
        AMO(atomic_uint, uint, addr, op, operand, compare, narrow);
        result = narrow;
    }
    atomic_store_explicit((volatile __global atomic_ulong *)old, result, memory_order_release,
                          SCOPE);
}
