/* Host point-to-point synchronisation: wait_until and test with their
 * _all/_any/_some and _vector forms, the deprecated wait names, and
 * shmem_signal_wait_until.
 *
 * The variables are this PE's symmetric objects, updated by other PEs
 * through their mappings; they are read with acquire loads so that data put
 * before the update is visible once the condition holds. On a heap in
 * device memory each read is a copy-engine copy of the element into host
 * memory instead, which completes the copies queued before it. A wait polls and,
 * after a short spin, yields the CPU: PEs often outnumber cores. The _any
 * forms resume their scan after the index they last returned, so that no
 * index is starved. */
#include <assert.h>
#include <shmem.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

struct wait_set;

/* True when element i of w->ivars satisfies w->cmp against
 * w->values[i * w->vstride]: vstride is 0 for one comparison value, 1 for a
 * vector of them. */
typedef bool (*satisfied_fn)(const struct wait_set *w, size_t i);

struct wait_set {
    satisfied_fn satisfied;
    const char *call;
    bool device; /* ivars are in a device heap: read through the copy engine */
    void *ivars;
    size_t nelems;
    const int *status; /* NULL, or nonzero entries exclude that element */
    int cmp;
    const void *values;
    size_t vstride;
};

static bool included(const struct wait_set *w, size_t i)
{
    return w->status == NULL || w->status[i] == 0;
}

static bool element_ok(const struct wait_set *w, size_t i)
{
    return w->satisfied(w, i);
}

/* Checks what every entry point requires and returns the local address the
 * loads go to. The variables must be symmetric (remote PEs update them), so
 * the range check is the one a remote access to this PE would get. */
static void *check_ivars(const char *call, void *ivars, size_t nelems, size_t elem, int cmp)
{
    ushmemi_check_init(call);
    if (__builtin_expect(cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE, 0))
        ushmemi_fatal(call, "comparison %d is not one of SHMEM_CMP_EQ..SHMEM_CMP_LE (%d..%d)",
                      cmp, SHMEM_CMP_EQ, SHMEM_CMP_LE);
    if (nelems == 0)
        return ivars;
    if (__builtin_expect(nelems > SIZE_MAX / elem, 0))
        ushmemi_fatal(call, "%zu variables of %zu bytes overflow size_t", nelems, elem);
    void *local = ushmemi_remote_addr(call, ivars, nelems * elem, ushmemi_g.my_pe);
    if (__builtin_expect((uintptr_t)ivars % elem != 0, 0))
        ushmemi_fatal(call, "variable address %p is not aligned to %zu bytes", ivars, elem);
    return local;
}

/* The variables are in a heap the CPU must not load from. */
static bool in_device_heap(const void *ivars)
{
    return !ushmemi_g.heap_host_accessible && ushmemi_in_heap(ivars, 1);
}

/* Waits for each included element in turn: once an element has satisfied
 * the condition it is not checked again, so a condition that later stops
 * holding cannot keep the caller waiting forever. */
static void wait_all(const struct wait_set *w)
{
    unsigned spins = 0;
    for (size_t i = 0; i < w->nelems; i++) {
        if (!included(w, i))
            continue;
        while (!element_ok(w, i))
            ushmemi_poll_pause_in(w->call, 0, &spins);
    }
}

static bool test_all(const struct wait_set *w)
{
    for (size_t i = 0; i < w->nelems; i++)
        if (included(w, i) && !element_ok(w, i))
            return false;
    return true;
}

/* Where the next _any scan of an array starts: just after the index the
 * last one returned, so an element that keeps satisfying the condition
 * cannot hide the others (OpenSHMEM 1.5 asks that no index be starved).
 * The cursors are per thread, so concurrent callers need no atomics and do
 * not disturb each other's rotation, and keyed by the array's address, so a
 * thread polling several arrays in turn keeps one rotation per array (a
 * single cursor would let the other array's answers pick where this one
 * starts, which can starve an index again). A thread polling more arrays
 * than there are slots only loses fairness, never correctness: an evicted
 * array starts again at 0, and a cursor is always taken modulo nelems. */
#define ANY_CURSORS 16

struct any_cursor {
    const void *ivars;
    size_t next;
};

static _Thread_local struct any_cursor any_cursors[ANY_CURSORS];
static _Thread_local unsigned any_victim;

static struct any_cursor *any_cursor_of(const void *ivars)
{
    for (unsigned i = 0; i < ANY_CURSORS; i++)
        if (any_cursors[i].ivars == ivars)
            return &any_cursors[i];
    struct any_cursor *c = &any_cursors[any_victim++ % ANY_CURSORS];
    *c = (struct any_cursor){ivars, 0};
    return c;
}

static size_t test_any_from(const struct wait_set *w, struct any_cursor *c)
{
    size_t start = c->next < w->nelems ? c->next : 0;
    for (size_t k = 0; k < w->nelems; k++) {
        size_t i = k < w->nelems - start ? start + k : start + k - w->nelems;
        if (included(w, i) && element_ok(w, i)) {
            c->next = i + 1;
            return i;
        }
    }
    return SIZE_MAX;
}

static size_t test_any(const struct wait_set *w)
{
    return test_any_from(w, any_cursor_of(w->ivars));
}

/* The _some forms report every element that satisfies the condition, so
 * none can be starved; they keep ascending order and need no cursor. */
static size_t test_some(const struct wait_set *w, size_t *indices)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nelems; i++)
        if (included(w, i) && element_ok(w, i))
            indices[n++] = i;
    return n;
}

static bool any_included(const struct wait_set *w)
{
    for (size_t i = 0; i < w->nelems; i++)
        if (included(w, i))
            return true;
    return false;
}

/* SIZE_MAX when every element is excluded, as the specification says. */
static size_t wait_any(const struct wait_set *w)
{
    if (!any_included(w))
        return SIZE_MAX;
    struct any_cursor *c = any_cursor_of(w->ivars);
    unsigned spins = 0;
    size_t found;
    while ((found = test_any_from(w, c)) == SIZE_MAX)
        ushmemi_poll_pause_in(w->call, 0, &spins);
    return found;
}

/* 0 when every element is excluded. */
static size_t wait_some(const struct wait_set *w, size_t *indices)
{
    if (!any_included(w))
        return 0;
    unsigned spins = 0;
    size_t found;
    while ((found = test_some(w, indices)) == 0)
        ushmemi_poll_pause_in(w->call, 0, &spins);
    return found;
}

#define DEFINE_COMPARE(NAME, T)                                                               \
    static_assert(__atomic_always_lock_free(sizeof(T), 0),                                    \
                  #T " loads must be lock-free to see other processes' stores");              \
    static bool NAME##_compare(T value, int cmp, T cmp_value)                                 \
    {                                                                                         \
        switch (cmp) {                                                                        \
        case SHMEM_CMP_EQ: return value == cmp_value;                                         \
        case SHMEM_CMP_NE: return value != cmp_value;                                         \
        case SHMEM_CMP_GT: return value > cmp_value;                                          \
        case SHMEM_CMP_GE: return value >= cmp_value;                                         \
        case SHMEM_CMP_LT: return value < cmp_value;                                          \
        case SHMEM_CMP_LE: return value <= cmp_value;                                         \
        default: return false;                                                                \
        }                                                                                     \
    }                                                                                         \
    static bool NAME##_satisfied(const struct wait_set *w, size_t i)                          \
    {                                                                                         \
        T value;                                                                              \
        if (w->device) {                                                                      \
            ushmemi_host_copy(w->call, &value, (const T *)w->ivars + i, sizeof(T));           \
            atomic_thread_fence(memory_order_acquire);                                        \
        } else {                                                                              \
            value = atomic_load_explicit((_Atomic T *)w->ivars + i, memory_order_acquire);    \
        }                                                                                     \
        return NAME##_compare(value, w->cmp, ((const T *)w->values)[i * w->vstride]);         \
    }                                                                                         \
    static struct wait_set NAME##_set(const char *call, T *ivars, size_t nelems,              \
                                      const int *status, int cmp, const T *values,            \
                                      size_t vstride)                                         \
    {                                                                                         \
        struct wait_set w = {NAME##_satisfied, call, in_device_heap(ivars),                   \
                             check_ivars(call, ivars, nelems, sizeof(T), cmp), nelems, status, \
                             cmp, values, vstride};                                           \
        return w;                                                                             \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_wait_until(T *ivar, int cmp, T cmp_value)                \
    {                                                                                         \
        struct wait_set w =                                                                   \
            NAME##_set("shmem_" #NAME "_wait_until", ivar, 1, NULL, cmp, &cmp_value, 0);      \
        wait_all(&w);                                                                         \
    }                                                                                         \
    USHMEMI_API int shmem_##NAME##_test(T *ivar, int cmp, T cmp_value)                       \
    {                                                                                         \
        struct wait_set w =                                                                   \
            NAME##_set("shmem_" #NAME "_test", ivar, 1, NULL, cmp, &cmp_value, 0);            \
        return test_all(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_wait(T *ivar, T cmp_value)                               \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait", ivar, 1, NULL, SHMEM_CMP_NE,   \
                                       &cmp_value, 0);                                        \
        wait_all(&w);                                                                         \
    }

#define DEFINE_SYNC(NAME, T)                                                                  \
    DEFINE_COMPARE(NAME, T)                                                                   \
    USHMEMI_API void shmem_##NAME##_wait_until_all(T *ivars, size_t nelems,                  \
                                                   const int *status, int cmp, T cmp_value)   \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait_until_all", ivars, nelems,       \
                                       status, cmp, &cmp_value, 0);                           \
        wait_all(&w);                                                                         \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_wait_until_any(T *ivars, size_t nelems,                \
                                                     const int *status, int cmp, T cmp_value) \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait_until_any", ivars, nelems,       \
                                       status, cmp, &cmp_value, 0);                           \
        return wait_any(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_wait_until_some(                                       \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value)   \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait_until_some", ivars, nelems,      \
                                       status, cmp, &cmp_value, 0);                           \
        return wait_some(&w, indices);                                                        \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_wait_until_all_vector(                                   \
        T *ivars, size_t nelems, const int *status, int cmp, const T *cmp_values)                   \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait_until_all_vector", ivars,        \
                                       nelems, status, cmp, cmp_values, 1);                   \
        wait_all(&w);                                                                         \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_wait_until_any_vector(                                 \
        T *ivars, size_t nelems, const int *status, int cmp, const T *cmp_values)                   \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait_until_any_vector", ivars,        \
                                       nelems, status, cmp, cmp_values, 1);                   \
        return wait_any(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_wait_until_some_vector(                                \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,                 \
        const T *cmp_values)                                                                        \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_wait_until_some_vector", ivars,       \
                                       nelems, status, cmp, cmp_values, 1);                   \
        return wait_some(&w, indices);                                                        \
    }                                                                                         \
    USHMEMI_API int shmem_##NAME##_test_all(T *ivars, size_t nelems, const int *status,      \
                                            int cmp, T cmp_value)                             \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_test_all", ivars, nelems, status,     \
                                       cmp, &cmp_value, 0);                                   \
        return test_all(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_test_any(T *ivars, size_t nelems, const int *status,   \
                                               int cmp, T cmp_value)                          \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_test_any", ivars, nelems, status,     \
                                       cmp, &cmp_value, 0);                                   \
        return test_any(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_test_some(T *ivars, size_t nelems, size_t *indices,    \
                                                const int *status, int cmp, T cmp_value)      \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_test_some", ivars, nelems, status,    \
                                       cmp, &cmp_value, 0);                                   \
        return test_some(&w, indices);                                                        \
    }                                                                                         \
    USHMEMI_API int shmem_##NAME##_test_all_vector(T *ivars, size_t nelems,                  \
                                                   const int *status, int cmp,                \
                                                   const T *cmp_values)                             \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_test_all_vector", ivars, nelems,      \
                                       status, cmp, cmp_values, 1);                           \
        return test_all(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_test_any_vector(T *ivars, size_t nelems,               \
                                                      const int *status, int cmp,             \
                                                      const T *cmp_values)                          \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_test_any_vector", ivars, nelems,      \
                                       status, cmp, cmp_values, 1);                           \
        return test_any(&w);                                                                  \
    }                                                                                         \
    USHMEMI_API size_t shmem_##NAME##_test_some_vector(                                      \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,                 \
        const T *cmp_values)                                                                        \
    {                                                                                         \
        struct wait_set w = NAME##_set("shmem_" #NAME "_test_some_vector", ivars, nelems,     \
                                       status, cmp, cmp_values, 1);                           \
        return test_some(&w, indices);                                                        \
    }

USHMEMI_SYNC_TYPES(DEFINE_SYNC)
USHMEMI_SYNC_OLD_TYPES(DEFINE_SYNC)
#undef DEFINE_SYNC
#undef DEFINE_COMPARE

USHMEMI_API void shmem_wait(long *ivar, long cmp_value)
{
    struct wait_set w = long_set("shmem_wait", ivar, 1, NULL, SHMEM_CMP_NE, &cmp_value, 0);
    wait_all(&w);
}

/* The parentheses keep the C11 generic macro of the same name from expanding. */
USHMEMI_API void(shmem_wait_until)(long *ivar, int cmp, long cmp_value)
{
    struct wait_set w = long_set("shmem_wait_until", ivar, 1, NULL, cmp, &cmp_value, 0);
    wait_all(&w);
}

/* Returns the value that satisfied the condition, which a second load could
 * not promise when other PEs keep adding to the signal. */
USHMEMI_API uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    static const char call[] = "shmem_signal_wait_until";
    _Atomic uint64_t *sig = check_ivars(call, sig_addr, 1, sizeof(*sig_addr), cmp);
    bool device = in_device_heap(sig_addr);
    unsigned spins = 0;
    for (;;) {
        uint64_t value;
        if (device) {
            ushmemi_host_copy(call, &value, (const void *)sig, sizeof(value));
            atomic_thread_fence(memory_order_acquire);
        } else {
            value = atomic_load_explicit(sig, memory_order_acquire);
        }
        if (uint64_compare(value, cmp, cmp_value))
            return value;
        ushmemi_poll_pause_in(call, 0, &spins);
    }
}
