/* The ze backend's own kernels for the Level Zero CPU test driver, whose
 * native modules are host shared objects (test/ze_driver/ze_test_kernel.h):
 * the proxy's device atomic, ushmemi_ze_amo, which src/device/ze.c loads
 * from USHMEM_ZE_KERNELS and launches with one work-item. A driver for a
 * real GPU would take the same kernel as SPIR-V, with the same arguments:
 * addr, operand, compare (64-bit each; a 4-byte word in the low half), old
 * (where the old value goes, in host memory), op (numbered as enum
 * ushmem_ring_amo_op), wide (1 for 8 bytes, 0 for 4). */
#include <stdatomic.h>
#include <stdint.h>

#include <ushmem/detail/ring.h>

#include "ze_test_kernel.h"

#define ARG(T, i) (*(T *)args[i])

#define AMO(T, p, op, v, cmp, old)                                                          \
    do {                                                                                    \
        _Atomic T *a_ = (_Atomic T *)(p);                                                   \
        T c_ = (T)(cmp);                                                                    \
        switch (op) {                                                                       \
        case USHMEM_RING_AMO_FETCH: (old) = atomic_load(a_); break;                         \
        case USHMEM_RING_AMO_SET: atomic_store(a_, (T)(v)); break;                          \
        case USHMEM_RING_AMO_SWAP: (old) = atomic_exchange(a_, (T)(v)); break;              \
        case USHMEM_RING_AMO_CSWAP:                                                         \
            atomic_compare_exchange_strong(a_, &c_, (T)(v));                                \
            (old) = c_;                                                                     \
            break;                                                                          \
        case USHMEM_RING_AMO_ADD: (old) = atomic_fetch_add(a_, (T)(v)); break;              \
        case USHMEM_RING_AMO_AND: (old) = atomic_fetch_and(a_, (T)(v)); break;              \
        case USHMEM_RING_AMO_OR: (old) = atomic_fetch_or(a_, (T)(v)); break;                \
        default: (old) = atomic_fetch_xor(a_, (T)(v)); break;                               \
        }                                                                                   \
    } while (0)

__attribute__((visibility("default"))) void ushmemi_ze_amo(const struct uzt_item *item,
                                                           void *const *args)
{
    (void)item;
    void *addr = ARG(void *, 0);
    uint64_t operand = ARG(uint64_t, 1), compare = ARG(uint64_t, 2), old = 0;
    uint64_t *old_p = ARG(uint64_t *, 3);
    uint32_t op = ARG(uint32_t, 4), wide = ARG(uint32_t, 5);
    if (wide) {
        AMO(uint64_t, addr, op, operand, compare, old);
    } else {
        uint32_t narrow = 0;
        AMO(uint32_t, addr, op, operand, compare, narrow);
        old = narrow;
    }
    atomic_store((_Atomic uint64_t *)old_p, old);
}
