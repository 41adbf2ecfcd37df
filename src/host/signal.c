/* Host put-with-signal (typed, sized and byte forms, blocking and
 * non-blocking) and shmem_signal_fetch.
 *
 * The data takes the RMA road, then the 64-bit signal is updated on the
 * SIGNAL road: on a mapped road with release ordering, so a PE that observes
 * the signal with an acquire load (signal_fetch, wait_until) also observes
 * the data; over the fabric after the data is delivered. On mapped roads the
 * non-blocking forms complete at once. shmem_signal_wait_until lives in
 * wait.c beside the other waits. */
#include <shmem.h>
#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

static void put_signal(const char *call, void *dest, const void *source, size_t nelems,
                       size_t elem, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                       bool nbi)
{
    ushmemi_check_init(call);
    if (__builtin_expect(sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD, 0))
        ushmemi_fatal(call, "sig_op %d to PE %d is neither SHMEM_SIGNAL_SET (%d) nor "
                      "SHMEM_SIGNAL_ADD (%d)", sig_op, pe, SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD);
    /* Checked before any data moves, so a bad signal address leaves the
     * destination untouched. */
    _Atomic uint64_t *sig =
        ushmemi_amo_direct(call, USHMEMI_CLASS_SIGNAL, sig_addr, sizeof(*sig_addr), pe);

    if (nelems != 0) {
        if (__builtin_expect(nelems > SIZE_MAX / elem, 0))
            ushmemi_fatal(call, "%zu elements of %zu bytes to PE %d overflow size_t", nelems,
                          elem, pe);
        ushmemi_put(call, dest, source, nelems * elem, pe, nbi);
    }

    if (sig != NULL) {
        if (sig_op == SHMEM_SIGNAL_SET)
            atomic_store_explicit(sig, signal, memory_order_release);
        else
            atomic_fetch_add_explicit(sig, signal, memory_order_release);
        return;
    }
    /* The data must be in place before the signal: a blocking fabric put
     * is delivered when it returns; anything else needs the fence. */
    if (nbi || ushmemi_g.peers[pe].route[USHMEMI_CLASS_RMA] != USHMEMI_ROUTE_PROXY_OFI)
        ushmemi_road_fence(call);
    ushmemi_amo_indirect(call, USHMEMI_CLASS_SIGNAL, sig_addr, pe,
                         sig_op == SHMEM_SIGNAL_SET ? USHMEMI_AMO_SET : USHMEMI_AMO_ADD,
                         USHMEMI_AMO_UINT64, &signal, NULL, NULL);
}

/* Each routine beside its context form (PE numbered in the context's team). */
#define SIGNAL_PE(CALL, CTX) ushmemi_ctx_pe(CALL, CTX, pe)
#define DEFINE_SIGNAL_CTX(NAME, T, CTX, CTXP, PREFIX)                                         \
    USHMEMI_API void PREFIX##NAME##_put_signal(CTXP() T *dest, const T *source,               \
                                               size_t nelems, uint64_t *sig_addr,             \
                                               uint64_t signal, int sig_op, int pe)           \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_put_signal";                               \
        put_signal(call, dest, source, nelems, sizeof(T), sig_addr, signal, sig_op,           \
                   SIGNAL_PE(call, CTX), false);                                              \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_put_signal_nbi(CTXP() T *dest, const T *source,           \
                                                   size_t nelems, uint64_t *sig_addr,         \
                                                   uint64_t signal, int sig_op, int pe)       \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_put_signal_nbi";                           \
        put_signal(call, dest, source, nelems, sizeof(T), sig_addr, signal, sig_op,           \
                   SIGNAL_PE(call, CTX), true);                                               \
    }
#define DEFINE_SIGNAL(NAME, T)                                                                \
    DEFINE_SIGNAL_CTX(NAME, T, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)                            \
    DEFINE_SIGNAL_CTX(NAME, T, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_RMA_TYPES(DEFINE_SIGNAL)
#undef DEFINE_SIGNAL
#undef DEFINE_SIGNAL_CTX

#define DEFINE_SIGNAL_SIZED_CTX(BITS, BYTES, CTX, CTXP, PREFIX)                               \
    USHMEMI_API void PREFIX##put##BITS##_signal(CTXP() void *dest, const void *source,        \
                                                size_t nelems, uint64_t *sig_addr,            \
                                                uint64_t signal, int sig_op, int pe)          \
    {                                                                                         \
        static const char call[] = #PREFIX "put" #BITS "_signal";                             \
        put_signal(call, dest, source, nelems, BYTES, sig_addr, signal, sig_op,               \
                   SIGNAL_PE(call, CTX), false);                                              \
    }                                                                                         \
    USHMEMI_API void PREFIX##put##BITS##_signal_nbi(CTXP() void *dest, const void *source,    \
                                                    size_t nelems, uint64_t *sig_addr,        \
                                                    uint64_t signal, int sig_op, int pe)      \
    {                                                                                         \
        static const char call[] = #PREFIX "put" #BITS "_signal_nbi";                         \
        put_signal(call, dest, source, nelems, BYTES, sig_addr, signal, sig_op,               \
                   SIGNAL_PE(call, CTX), true);                                               \
    }
#define DEFINE_SIGNAL_SIZED(BITS, BYTES)                                                      \
    DEFINE_SIGNAL_SIZED_CTX(BITS, BYTES, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)                  \
    DEFINE_SIGNAL_SIZED_CTX(BITS, BYTES, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_SIZED_TYPES(DEFINE_SIGNAL_SIZED)
#undef DEFINE_SIGNAL_SIZED
#undef DEFINE_SIGNAL_SIZED_CTX

#define DEFINE_SIGNAL_MEM_CTX(CTX, CTXP, PREFIX)                                              \
    USHMEMI_API void PREFIX##putmem_signal(CTXP() void *dest, const void *source,             \
                                           size_t nelems, uint64_t *sig_addr,                 \
                                           uint64_t signal, int sig_op, int pe)               \
    {                                                                                         \
        static const char call[] = #PREFIX "putmem_signal";                                   \
        put_signal(call, dest, source, nelems, 1, sig_addr, signal, sig_op,                   \
                   SIGNAL_PE(call, CTX), false);                                              \
    }                                                                                         \
    USHMEMI_API void PREFIX##putmem_signal_nbi(CTXP() void *dest, const void *source,         \
                                               size_t nelems, uint64_t *sig_addr,             \
                                               uint64_t signal, int sig_op, int pe)           \
    {                                                                                         \
        static const char call[] = #PREFIX "putmem_signal_nbi";                               \
        put_signal(call, dest, source, nelems, 1, sig_addr, signal, sig_op,                   \
                   SIGNAL_PE(call, CTX), true);                                               \
    }
DEFINE_SIGNAL_MEM_CTX(ctx, USHMEMI_CTX_PARAM, shmem_ctx_)
DEFINE_SIGNAL_MEM_CTX(&ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
#undef DEFINE_SIGNAL_MEM_CTX

/* OpenSHMEM 1.6: the signal alone, as an atomic on the SIGNAL road. The
 * parentheses keep shmem.h's macros of the same names from expanding. */
static void signal_only(const char *call, shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                        int sig_op, int pe)
{
    put_signal(call, NULL, NULL, 0, 1, sig_addr, signal, sig_op, ushmemi_ctx_pe(call, ctx, pe),
               false);
}

USHMEMI_API void(shmem_signal_add)(uint64_t *sig_addr, uint64_t signal, int pe)
{
    signal_only("shmem_signal_add", SHMEM_CTX_DEFAULT, sig_addr, signal, SHMEM_SIGNAL_ADD, pe);
}

USHMEMI_API void(shmem_signal_set)(uint64_t *sig_addr, uint64_t signal, int pe)
{
    signal_only("shmem_signal_set", SHMEM_CTX_DEFAULT, sig_addr, signal, SHMEM_SIGNAL_SET, pe);
}

USHMEMI_API void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                                      int pe)
{
    signal_only("shmem_ctx_signal_add", ctx, sig_addr, signal, SHMEM_SIGNAL_ADD, pe);
}

USHMEMI_API void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                                      int pe)
{
    signal_only("shmem_ctx_signal_set", ctx, sig_addr, signal, SHMEM_SIGNAL_SET, pe);
}

USHMEMI_API uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    static const char call[] = "shmem_signal_fetch";
    ushmemi_check_init(call);
    /* The signal must be symmetric, like any target of put_signal. */
    int me = ushmemi_g.my_pe;
    _Atomic uint64_t *sig =
        ushmemi_amo_direct(call, USHMEMI_CLASS_SIGNAL, sig_addr, sizeof(*sig_addr), me);
    if (sig != NULL)
        return atomic_load_explicit(sig, memory_order_acquire);
    uint64_t value = 0, zero = 0;
    ushmemi_amo_indirect(call, USHMEMI_CLASS_SIGNAL, sig_addr, me, USHMEMI_AMO_FETCH,
                         USHMEMI_AMO_UINT64, &zero, NULL, &value);
    return value;
}
