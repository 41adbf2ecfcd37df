/* Host atomic memory operations: the standard, extended and bitwise AMO
 * families, their fetching non-blocking forms, and the deprecated 1.3 names.
 *
 * On the direct road the peer's heap is a MAP_SHARED mapping in this
 * process, and lock-free C11 atomics on shared memory are atomic across
 * processes (they are plain locked instructions, with no process-private
 * lock). Every type below is therefore required to be lock-free at compile
 * time. float and double are operated on through integers of the same
 * width, so that exchange and store never need a compare loop or libatomic.
 * Otherwise the fabric carries the atomic; routes.c makes sure that every
 * PE reaches one word the same way, so the two kinds never mix. */
#include <assert.h>
#include <shmem.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

#define CHECK_ATOMIC_LAYOUT(T)                                                                \
    static_assert(sizeof(_Atomic T) == sizeof(T) && alignof(_Atomic T) == alignof(T),        \
                  "_Atomic " #T " must have the layout of " #T " to alias it");              \
    static_assert(__atomic_always_lock_free(sizeof(T), 0),                                    \
                  #T " atomics must be lock-free to work across processes");

/* One atomic on an integer type: on the mapped word when the AMO route to pe
 * is direct, else over the fabric. op is a constant at every call site, so
 * the switch folds away once inlined. */
#define DEFINE_INT_OPS(NAME, T)                                                               \
    CHECK_ATOMIC_LAYOUT(T)                                                                    \
    static inline T NAME##_amo(const char *call, const T *addr, int pe,                       \
                               enum ushmemi_amo_op op, T operand, T compare)                  \
    {                                                                                         \
        ushmemi_check_init(call);                                                             \
        _Atomic T *p = ushmemi_amo_direct(call, USHMEMI_CLASS_AMO, addr, sizeof(T), pe);      \
        if (__builtin_expect(p != NULL, 1)) {                                                 \
            switch (op) {                                                                     \
            case USHMEMI_AMO_FETCH:                                                           \
                return atomic_load(p);                                                        \
            case USHMEMI_AMO_SET:                                                             \
                atomic_store(p, operand);                                                     \
                return 0;                                                                     \
            case USHMEMI_AMO_SWAP:                                                            \
                return atomic_exchange(p, operand);                                           \
            case USHMEMI_AMO_CSWAP:                                                           \
                atomic_compare_exchange_strong(p, &compare, operand);                         \
                return compare;                                                               \
            case USHMEMI_AMO_ADD:                                                             \
                return atomic_fetch_add(p, operand);                                          \
            case USHMEMI_AMO_AND:                                                             \
                return atomic_fetch_and(p, operand);                                          \
            case USHMEMI_AMO_OR:                                                              \
                return atomic_fetch_or(p, operand);                                           \
            case USHMEMI_AMO_XOR:                                                             \
                return atomic_fetch_xor(p, operand);                                          \
            }                                                                                 \
        }                                                                                     \
        T result = 0;                                                                         \
        ushmemi_amo_indirect(call, USHMEMI_CLASS_AMO, addr, pe, op, USHMEMI_AMO_TYPE_OF(T),   \
                             &operand, &compare, &result);                                    \
        return result;                                                                        \
    }                                                                                         \
    static T NAME##_fetch(const char *call, const T *source, int pe)                          \
    {                                                                                         \
        return NAME##_amo(call, source, pe, USHMEMI_AMO_FETCH, 0, 0);                         \
    }                                                                                         \
    static void NAME##_set(const char *call, T *dest, T value, int pe)                        \
    {                                                                                         \
        NAME##_amo(call, dest, pe, USHMEMI_AMO_SET, value, 0);                                \
    }                                                                                         \
    static T NAME##_swap(const char *call, T *dest, T value, int pe)                          \
    {                                                                                         \
        return NAME##_amo(call, dest, pe, USHMEMI_AMO_SWAP, value, 0);                        \
    }                                                                                         \
    static T NAME##_cswap(const char *call, T *dest, T cond, T value, int pe)                 \
    {                                                                                         \
        return NAME##_amo(call, dest, pe, USHMEMI_AMO_CSWAP, value, cond);                    \
    }                                                                                         \
    static T NAME##_fetch_add(const char *call, T *dest, T value, int pe)                     \
    {                                                                                         \
        return NAME##_amo(call, dest, pe, USHMEMI_AMO_ADD, value, 0);                         \
    }
USHMEMI_AMO_STD_TYPES(DEFINE_INT_OPS)
#undef DEFINE_INT_OPS

/* float and double through their bit patterns. */
#define DEFINE_FP_OPS(NAME, T, BITS, TYPE)                                                    \
    static_assert(sizeof(T) == sizeof(BITS), #T " and " #BITS " must have one size");         \
    CHECK_ATOMIC_LAYOUT(BITS)                                                                 \
    static T NAME##_from_bits(BITS bits)                                                      \
    {                                                                                         \
        T value;                                                                              \
        memcpy(&value, &bits, sizeof(value));                                                 \
        return value;                                                                         \
    }                                                                                         \
    static BITS NAME##_to_bits(T value)                                                       \
    {                                                                                         \
        BITS bits;                                                                            \
        memcpy(&bits, &value, sizeof(bits));                                                  \
        return bits;                                                                          \
    }                                                                                         \
    static inline T NAME##_amo(const char *call, const T *addr, int pe,                       \
                               enum ushmemi_amo_op op, T operand)                             \
    {                                                                                         \
        ushmemi_check_init(call);                                                             \
        _Atomic BITS *p = ushmemi_amo_direct(call, USHMEMI_CLASS_AMO, addr, sizeof(T), pe);   \
        if (__builtin_expect(p != NULL, 1)) {                                                 \
            if (op == USHMEMI_AMO_SET) {                                                      \
                atomic_store(p, NAME##_to_bits(operand));                                     \
                return 0;                                                                     \
            }                                                                                 \
            if (op == USHMEMI_AMO_SWAP)                                                       \
                return NAME##_from_bits(atomic_exchange(p, NAME##_to_bits(operand)));         \
            return NAME##_from_bits(atomic_load(p));                                          \
        }                                                                                     \
        T result = 0;                                                                         \
        ushmemi_amo_indirect(call, USHMEMI_CLASS_AMO, addr, pe, op, TYPE, &operand, NULL,     \
                             &result);                                                        \
        return result;                                                                        \
    }                                                                                         \
    static T NAME##_fetch(const char *call, const T *source, int pe)                          \
    {                                                                                         \
        return NAME##_amo(call, source, pe, USHMEMI_AMO_FETCH, 0);                            \
    }                                                                                         \
    static void NAME##_set(const char *call, T *dest, T value, int pe)                        \
    {                                                                                         \
        NAME##_amo(call, dest, pe, USHMEMI_AMO_SET, value);                                   \
    }                                                                                         \
    static T NAME##_swap(const char *call, T *dest, T value, int pe)                          \
    {                                                                                         \
        return NAME##_amo(call, dest, pe, USHMEMI_AMO_SWAP, value);                           \
    }
DEFINE_FP_OPS(float, float, uint32_t, USHMEMI_AMO_FLOAT)
DEFINE_FP_OPS(double, double, uint64_t, USHMEMI_AMO_DOUBLE)
#undef DEFINE_FP_OPS

/* The fetching non-blocking forms store the old value through `fetch`, a
 * private pointer checked before the atomic runs. */
static inline void check_fetch(const char *call, const void *fetch, size_t size, int pe)
{
    ushmemi_check_init(call);
    ushmemi_check_private(call, "fetch", fetch, size, pe);
}

/* Every routine has a context form (PE numbered in the context's team) and
 * the plain form on SHMEM_CTX_DEFAULT: PREFIX is shmem_ctx_ or shmem_, CTXP
 * the leading parameter or nothing, CTX the context used. */
#define AMO_PE(CALL, CTX) ushmemi_ctx_pe(CALL, CTX, pe)

/* fetch, set, swap: standard and extended types. Non-blocking forms complete
 * at once, which satisfies "complete by the next quiet". */
#define DEFINE_AMO_EXT_CTX(NAME, T, CTX, CTXP, PREFIX)                                        \
    USHMEMI_API T PREFIX##NAME##_atomic_fetch(CTXP() const T *source, int pe)                   \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch";                             \
        return NAME##_fetch(call, source, AMO_PE(call, CTX));                                 \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_set(CTXP() T *dest, T value, int pe)                 \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_set";                               \
        NAME##_set(call, dest, value, AMO_PE(call, CTX));                                     \
    }                                                                                         \
    USHMEMI_API T PREFIX##NAME##_atomic_swap(CTXP() T *dest, T value, int pe)                   \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_swap";                              \
        return NAME##_swap(call, dest, value, AMO_PE(call, CTX));                             \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_fetch_nbi(CTXP() T *fetch, const T *source, int pe)  \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_nbi";                         \
        check_fetch(call, fetch, sizeof(T), pe);                                              \
        *fetch = NAME##_fetch(call, source, AMO_PE(call, CTX));                               \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_swap_nbi(CTXP() T *fetch, T *dest, T value, int pe)  \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_swap_nbi";                          \
        check_fetch(call, fetch, sizeof(T), pe);                                              \
        *fetch = NAME##_swap(call, dest, value, AMO_PE(call, CTX));                           \
    }
#define DEFINE_AMO_EXT(NAME, T)                                                               \
    DEFINE_AMO_EXT_CTX(NAME, T, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)               \
    DEFINE_AMO_EXT_CTX(NAME, T, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_AMO_STD_TYPES(DEFINE_AMO_EXT)
USHMEMI_AMO_EXT_TYPES(DEFINE_AMO_EXT)
#undef DEFINE_AMO_EXT
#undef DEFINE_AMO_EXT_CTX

#define DEFINE_AMO_STD_CTX(NAME, T, CTX, CTXP, PREFIX)                                        \
    USHMEMI_API T PREFIX##NAME##_atomic_compare_swap(CTXP() T *dest, T cond, T value, int pe)   \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_compare_swap";                      \
        return NAME##_cswap(call, dest, cond, value, AMO_PE(call, CTX));                      \
    }                                                                                         \
    USHMEMI_API T PREFIX##NAME##_atomic_fetch_inc(CTXP() T *dest, int pe)                       \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_inc";                         \
        return NAME##_fetch_add(call, dest, 1, AMO_PE(call, CTX));                            \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_inc(CTXP() T *dest, int pe)                          \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_inc";                               \
        NAME##_fetch_add(call, dest, 1, AMO_PE(call, CTX));                                   \
    }                                                                                         \
    USHMEMI_API T PREFIX##NAME##_atomic_fetch_add(CTXP() T *dest, T value, int pe)              \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_add";                         \
        return NAME##_fetch_add(call, dest, value, AMO_PE(call, CTX));                        \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_add(CTXP() T *dest, T value, int pe)                 \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_add";                               \
        NAME##_fetch_add(call, dest, value, AMO_PE(call, CTX));                               \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_compare_swap_nbi(CTXP() T *fetch, T *dest, T cond,   \
                                                            T value, int pe)                  \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_compare_swap_nbi";                  \
        check_fetch(call, fetch, sizeof(T), pe);                                              \
        *fetch = NAME##_cswap(call, dest, cond, value, AMO_PE(call, CTX));                    \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_fetch_inc_nbi(CTXP() T *fetch, T *dest, int pe)      \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_inc_nbi";                     \
        check_fetch(call, fetch, sizeof(T), pe);                                              \
        *fetch = NAME##_fetch_add(call, dest, 1, AMO_PE(call, CTX));                          \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_fetch_add_nbi(CTXP() T *fetch, T *dest, T value,     \
                                                         int pe)                              \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_add_nbi";                     \
        check_fetch(call, fetch, sizeof(T), pe);                                              \
        *fetch = NAME##_fetch_add(call, dest, value, AMO_PE(call, CTX));                      \
    }
#define DEFINE_AMO_STD(NAME, T)                                                               \
    DEFINE_AMO_STD_CTX(NAME, T, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)               \
    DEFINE_AMO_STD_CTX(NAME, T, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_AMO_STD_TYPES(DEFINE_AMO_STD)
#undef DEFINE_AMO_STD
#undef DEFINE_AMO_STD_CTX

#define DEFINE_AMO_BIT_OP(NAME, T, OP, AMO, CTX, CTXP, PREFIX)                                \
    USHMEMI_API T PREFIX##NAME##_atomic_fetch_##OP(CTXP() T *dest, T value, int pe)             \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_" #OP;                        \
        return NAME##_amo(call, dest, AMO_PE(call, CTX), AMO, value, 0);                      \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_##OP(CTXP() T *dest, T value, int pe)                \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_" #OP;                              \
        NAME##_amo(call, dest, AMO_PE(call, CTX), AMO, value, 0);                             \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_atomic_fetch_##OP##_nbi(CTXP() T *fetch, T *dest, T value,  \
                                                            int pe)                           \
    {                                                                                         \
        static const char call[] = #PREFIX #NAME "_atomic_fetch_" #OP "_nbi";                 \
        check_fetch(call, fetch, sizeof(T), pe);                                              \
        *fetch = NAME##_amo(call, dest, AMO_PE(call, CTX), AMO, value, 0);                    \
    }
#define DEFINE_AMO_BIT_CTX(NAME, T, CTX, CTXP, PREFIX)                                        \
    DEFINE_AMO_BIT_OP(NAME, T, and, USHMEMI_AMO_AND, CTX, CTXP, PREFIX)                       \
    DEFINE_AMO_BIT_OP(NAME, T, or, USHMEMI_AMO_OR, CTX, CTXP, PREFIX)                         \
    DEFINE_AMO_BIT_OP(NAME, T, xor, USHMEMI_AMO_XOR, CTX, CTXP, PREFIX)
#define DEFINE_AMO_BIT(NAME, T)                                                               \
    DEFINE_AMO_BIT_CTX(NAME, T, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)               \
    DEFINE_AMO_BIT_CTX(NAME, T, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_AMO_BIT_TYPES(DEFINE_AMO_BIT)
#undef DEFINE_AMO_BIT
#undef DEFINE_AMO_BIT_CTX
#undef DEFINE_AMO_BIT_OP

/* Deprecated names (OpenSHMEM 1.3), still used by the OSU benchmarks. */
#define DEFINE_AMO_OLD_EXT(NAME, T)                                                           \
    USHMEMI_API T shmem_##NAME##_swap(T *target, T value, int pe)                            \
    {                                                                                         \
        return NAME##_swap("shmem_" #NAME "_swap", target, value, pe);                        \
    }                                                                                         \
    USHMEMI_API T shmem_##NAME##_fetch(const T *target, int pe)                              \
    {                                                                                         \
        return NAME##_fetch("shmem_" #NAME "_fetch", target, pe);                             \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_set(T *target, T value, int pe)                          \
    {                                                                                         \
        NAME##_set("shmem_" #NAME "_set", target, value, pe);                                 \
    }
#define DEFINE_AMO_OLD(NAME, T)                                                               \
    DEFINE_AMO_OLD_EXT(NAME, T)                                                               \
    USHMEMI_API T shmem_##NAME##_fadd(T *target, T value, int pe)                            \
    {                                                                                         \
        return NAME##_fetch_add("shmem_" #NAME "_fadd", target, value, pe);                   \
    }                                                                                         \
    USHMEMI_API T shmem_##NAME##_finc(T *target, int pe)                                     \
    {                                                                                         \
        return NAME##_fetch_add("shmem_" #NAME "_finc", target, 1, pe);                       \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_add(T *target, T value, int pe)                          \
    {                                                                                         \
        NAME##_fetch_add("shmem_" #NAME "_add", target, value, pe);                           \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_inc(T *target, int pe)                                   \
    {                                                                                         \
        NAME##_fetch_add("shmem_" #NAME "_inc", target, 1, pe);                               \
    }                                                                                         \
    USHMEMI_API T shmem_##NAME##_cswap(T *target, T cond, T value, int pe)                   \
    {                                                                                         \
        return NAME##_cswap("shmem_" #NAME "_cswap", target, cond, value, pe);                \
    }
DEFINE_AMO_OLD(int, int)
DEFINE_AMO_OLD(long, long)
DEFINE_AMO_OLD(longlong, long long)
DEFINE_AMO_OLD_EXT(float, float)
DEFINE_AMO_OLD_EXT(double, double)
#undef DEFINE_AMO_OLD
#undef DEFINE_AMO_OLD_EXT

/* The parentheses keep the C11 generic macro of the same name from expanding. */
USHMEMI_API long(shmem_swap)(long *target, long value, int pe)
{
    return long_swap("shmem_swap", target, value, pe);
}
