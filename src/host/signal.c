/* Host put-with-signal (typed, sized and byte forms, blocking and
 * non-blocking) and shmem_signal_fetch.
 *
 * The data is copied into the peer's mapping, then the 64-bit signal is
 * updated with release ordering, so a PE that observes the signal with an
 * acquire load (signal_fetch, wait_until) also observes the data. The
 * non-blocking forms complete at once. shmem_signal_wait_until lives in
 * wait.c beside the other waits. */
#include <shmem.h>
#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

static void put_signal(const char *call, void *dest, const void *source, size_t nelems,
                       size_t elem, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    ushmemi_check_init(call);
    if (__builtin_expect(sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD, 0))
        ushmemi_fatal(call, "sig_op %d to PE %d is neither SHMEM_SIGNAL_SET (%d) nor "
                      "SHMEM_SIGNAL_ADD (%d)", sig_op, pe, SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD);
    /* Checked before any data moves, so a bad signal address leaves the
     * destination untouched. */
    _Atomic uint64_t *sig = ushmemi_remote_addr(call, sig_addr, sizeof(*sig_addr), pe);
    if (__builtin_expect((uintptr_t)sig_addr % sizeof(*sig_addr) != 0, 0))
        ushmemi_fatal(call, "signal address %p to PE %d is not aligned to 8 bytes", sig_addr,
                      pe);
    if (__builtin_expect(!ushmemi_g.heap_host_accessible, 0))
        ushmemi_fatal(call, "signal to PE %d at %p: the symmetric heap is device memory, which "
                      "host atomics cannot reach", pe, (void *)sig_addr);

    if (nelems != 0) {
        if (__builtin_expect(nelems > SIZE_MAX / elem, 0))
            ushmemi_fatal(call, "%zu elements of %zu bytes to PE %d overflow size_t", nelems,
                          elem, pe);
        size_t len = nelems * elem;
        ushmemi_host_copy(call, ushmemi_remote_addr(call, dest, len, pe), source, len);
    }

    if (sig_op == SHMEM_SIGNAL_SET)
        atomic_store_explicit(sig, signal, memory_order_release);
    else
        atomic_fetch_add_explicit(sig, signal, memory_order_release);
}

#define DEFINE_SIGNAL(NAME, T)                                                                \
    USHMEMI_API void shmem_##NAME##_put_signal(T *dest, const T *source, size_t nelems,      \
                                               uint64_t *sig_addr, uint64_t signal,           \
                                               int sig_op, int pe)                            \
    {                                                                                         \
        put_signal("shmem_" #NAME "_put_signal", dest, source, nelems, sizeof(T), sig_addr,   \
                   signal, sig_op, pe);                                                       \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_put_signal_nbi(T *dest, const T *source, size_t nelems,  \
                                                   uint64_t *sig_addr, uint64_t signal,       \
                                                   int sig_op, int pe)                        \
    {                                                                                         \
        put_signal("shmem_" #NAME "_put_signal_nbi", dest, source, nelems, sizeof(T),         \
                   sig_addr, signal, sig_op, pe);                                             \
    }
USHMEMI_RMA_TYPES(DEFINE_SIGNAL)
#undef DEFINE_SIGNAL

#define DEFINE_SIGNAL_SIZED(BITS, BYTES)                                                      \
    USHMEMI_API void shmem_put##BITS##_signal(void *dest, const void *source, size_t nelems, \
                                              uint64_t *sig_addr, uint64_t signal,            \
                                              int sig_op, int pe)                             \
    {                                                                                         \
        put_signal("shmem_put" #BITS "_signal", dest, source, nelems, BYTES, sig_addr,        \
                   signal, sig_op, pe);                                                       \
    }                                                                                         \
    USHMEMI_API void shmem_put##BITS##_signal_nbi(void *dest, const void *source,            \
                                                  size_t nelems, uint64_t *sig_addr,          \
                                                  uint64_t signal, int sig_op, int pe)        \
    {                                                                                         \
        put_signal("shmem_put" #BITS "_signal_nbi", dest, source, nelems, BYTES, sig_addr,    \
                   signal, sig_op, pe);                                                       \
    }
USHMEMI_SIZED_TYPES(DEFINE_SIGNAL_SIZED)
#undef DEFINE_SIGNAL_SIZED

USHMEMI_API void shmem_putmem_signal(void *dest, const void *source, size_t nelems,
                                     uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    put_signal("shmem_putmem_signal", dest, source, nelems, 1, sig_addr, signal, sig_op, pe);
}

USHMEMI_API void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems,
                                         uint64_t *sig_addr, uint64_t signal, int sig_op,
                                         int pe)
{
    put_signal("shmem_putmem_signal_nbi", dest, source, nelems, 1, sig_addr, signal, sig_op,
               pe);
}

USHMEMI_API uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    static const char call[] = "shmem_signal_fetch";
    ushmemi_check_init(call);
    /* The signal must be symmetric, like any target of put_signal. */
    _Atomic uint64_t *sig =
        ushmemi_remote_addr(call, sig_addr, sizeof(*sig_addr), ushmemi_g.my_pe);
    if (__builtin_expect((uintptr_t)sig_addr % sizeof(*sig_addr) != 0, 0))
        ushmemi_fatal(call, "signal address %p is not aligned to 8 bytes", (const void *)sig_addr);
    if (__builtin_expect(!ushmemi_g.heap_host_accessible, 0))
        ushmemi_fatal(call, "signal at %p: the symmetric heap is device memory, which host "
                      "loads cannot reach", (const void *)sig_addr);
    return atomic_load_explicit(sig, memory_order_acquire);
}
