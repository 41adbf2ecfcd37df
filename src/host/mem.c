/* shmem_malloc and friends: collective, symmetric, from the heap allocator. */
#include <inttypes.h>
#include <shmem.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The arguments that size a collective allocation, as one PE passed them. */
struct request {
    uint64_t count; /* shmem_calloc's count; 1 for the others */
    uint64_t size;
    uint64_t align; /* shmem_align's alignment; 0 for the others */
};

/* What a mismatch message shows: the first runs of PEs of one request, and
 * the first distinct requests. */
#define RUNS_SHOWN 8
#define REQUESTS_SHOWN 4

static bool same_request(const struct request *a, const struct request *b)
{
    return a->count == b->count && a->size == b->size && a->align == b->align;
}

/* Appends to the string in buf (len bytes), as much as fits. */
__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* "PE 1" or "PEs 0, 2-3": the PEs that made the request all[first] made. */
static void append_pes(char *buf, size_t len, const struct request *all, int n, int first)
{
    int count = 0, runs = 0;
    for (int pe = first; pe < n; pe++)
        count += same_request(&all[pe], &all[first]);
    append(buf, len, count == 1 ? "PE " : "PEs ");
    for (int pe = first; pe < n; pe++) {
        if (!same_request(&all[pe], &all[first]))
            continue;
        if (runs == RUNS_SHOWN) {
            append(buf, len, ", ...");
            return;
        }
        int last = pe;
        while (last + 1 < n && same_request(&all[last + 1], &all[first]))
            last++;
        append(buf, len, "%s%d", runs > 0 ? ", " : "", pe);
        if (last > pe)
            append(buf, len, "-%d", last);
        runs++;
        pe = last;
    }
}

/* Ends the job with one sentence: which PEs asked for what. The count and
 * the alignment are shown where some PE passed one. */
static _Noreturn void requests_differ(const char *call, const struct request *all, int n)
{
    bool counted = false, aligned = false;
    for (int pe = 0; pe < n; pe++) {
        counted |= all[pe].count != 1;
        aligned |= all[pe].align != 0;
    }
    char msg[400] = "";
    int shown = 0;
    for (int pe = 0; pe < n; pe++) {
        bool seen = false;
        for (int q = 0; q < pe && !seen; q++)
            seen = same_request(&all[q], &all[pe]);
        if (seen)
            continue;
        if (shown == REQUESTS_SHOWN) {
            append(msg, sizeof(msg), ", other PEs for other sizes");
            break;
        }
        append(msg, sizeof(msg), shown == 0 ? "" : shown == 1 ? " but " : ", ");
        append_pes(msg, sizeof(msg), all, n, pe);
        append(msg, sizeof(msg), shown == 0 ? " asked for " : " for ");
        if (counted)
            append(msg, sizeof(msg), "%" PRIu64 " x ", all[pe].count);
        append(msg, sizeof(msg), "%" PRIu64 " bytes", all[pe].size);
        if (aligned)
            append(msg, sizeof(msg), " aligned to %" PRIu64, all[pe].align);
        shown++;
    }
    ushmemi_fatal(call, "%s, and a collective allocation must be the same on every PE", msg);
}

/* Every PE must make the same collective allocations in the same order:
 * the allocator is deterministic, so a PE that asks for another size or
 * alignment gets other offsets from then on, and every later block silently
 * stops being symmetric. The world barrier that each allocation ends with
 * carries no data (its counters only count), so comparing the requests
 * takes an exchange of its own, an allgather through the bootstrap at every
 * allocation: done only with SHMEM_DEBUG=1, which must then be set on every
 * PE (a PE without it would not join the exchange). */
static void check_same_request(const char *call, size_t count, size_t size, size_t align)
{
    int n = ushmemi_g.n_pes;
    if (!ushmemi_settings.debug || n == 1)
        return;
    struct request mine = {.count = count, .size = size, .align = align};
    struct request *all = malloc((size_t)n * sizeof(*all));
    if (all == NULL)
        ushmemi_fatal(call, "out of memory gathering the allocation requests of %d PEs", n);
    ushmem_status_t status = ushmemi_bootstrap_allgather(&ushmemi_g.bs, &mine, all, sizeof(mine));
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "gathering the PEs' allocation requests failed: %s",
                      ushmemi_status_string(status));
    for (int pe = 0; pe < n; pe++)
        if (!same_request(&all[pe], &mine))
            requests_differ(call, all, n);
    free(all);
}

/* A block from the allocator, the heap grown first on every PE when it does
 * not fit (heap_grow.c): collective, like every caller. *said_p: a NULL was
 * explained already (the growth's one line). */
static void *alloc_growing(const char *call, size_t align, size_t size, bool *said_p)
{
    *said_p = false;
    void *ptr = ushmemi_heap_alloc(align, size);
    if (ptr != NULL || size == 0)
        return ptr;
    /* The allocator is deterministic: every PE fails here together. */
    if (!ushmemi_heap_grow(call, align, size, said_p))
        return NULL;
    return ushmemi_heap_alloc(align, size);
}

/* The heap's user part as it may grow: its maximum, for messages. */
static size_t user_max(void) { return ushmemi_g.heap_reserve - USHMEMI_RESERVED_SIZE; }

/* The allocation, once every PE is known to ask for the same. */
static void *alloc_agreed(const char *call, size_t align, size_t size)
{
    bool said;
    if (size == 0) {
        ushmemi_barrier_world();
        return NULL;
    }
    void *ptr = alloc_growing(call, align, size, &said);
    if (ptr != NULL || said) {
        /* done, or the growth said why not */
    } else if (align != 0) {
        ushmemi_error("%s(%zu, %zu): the symmetric heap has no free block of that size at that "
                      "alignment (%zu of %zu bytes in use, %zu at most: USHMEM_HEAP_MAX)",
                      call, align, size, ushmemi_heap_bytes_in_use(), ushmemi_g.user_size,
                      user_max());
    } else {
        ushmemi_error("%s(%zu): the symmetric heap cannot hold it (%zu of %zu bytes in use, %zu "
                      "at most: USHMEM_HEAP_MAX)",
                      call, size, ushmemi_heap_bytes_in_use(), ushmemi_g.user_size, user_max());
    }
    /* Allocation is a synchronisation point: no PE writes into the new block
     * before every PE owns it. */
    ushmemi_barrier_world();
    return ptr;
}

static void *alloc_collective(const char *call, size_t size)
{
    ushmemi_check_init(call);
    check_same_request(call, 1, size, 0);
    return alloc_agreed(call, 0, size);
}

USHMEMI_API void *shmem_malloc(size_t size) { return alloc_collective("shmem_malloc", size); }

USHMEMI_API void *shmem_malloc_with_hints(size_t size, long hints)
{
    /* Every hint is valid on host memory; they matter for device backends.
     * Unknown bits are said once per job: programs pass their hints in a
     * loop, and every PE the same ones (a collective call), so PE 0 says it
     * the first time and the others only at debug level. */
    static atomic_bool said;
    unsigned long unknown = (unsigned long)hints & ~(unsigned long)(SHMEM_MALLOC_ATOMICS_REMOTE |
                                                                    SHMEM_MALLOC_SIGNAL_REMOTE);
    if (unknown != 0 && !atomic_exchange(&said, true))
        ushmemi_log(ushmemi_g.my_pe == 0 ? USHMEMI_LOG_WARN : USHMEMI_LOG_DEBUG,
                    "shmem_malloc_with_hints: unknown hint bits 0x%lx ignored (said once, by "
                    "PE 0)",
                    unknown);
    return alloc_collective("shmem_malloc_with_hints", size);
}

USHMEMI_API void *shmem_calloc(size_t count, size_t size)
{
    ushmemi_check_init("shmem_calloc");
    check_same_request("shmem_calloc", count, size, 0);
    if (size != 0 && count > SIZE_MAX / size) {
        ushmemi_error("shmem_calloc(%zu, %zu): the size overflows", count, size);
        ushmemi_barrier_world();
        return NULL;
    }
    bool said;
    void *ptr = alloc_growing("shmem_calloc", 0, count * size, &said);
    if (ptr)
        ushmemi_host_copy_zero(ptr, count * size);
    else if (count * size != 0 && !said)
        ushmemi_error("shmem_calloc(%zu, %zu): the symmetric heap cannot hold it (%zu of %zu "
                      "bytes in use, %zu at most: USHMEM_HEAP_MAX)",
                      count, size, ushmemi_heap_bytes_in_use(), ushmemi_g.user_size, user_max());
    ushmemi_barrier_world();
    return ptr;
}

/* The largest alignment that one symmetric offset can give on every PE.
 *
 * The allocator hands out one offset for all PEs, so an offset is A-aligned
 * on every PE only when every PE's heap base has the same residue modulo A.
 * The device backends place each heap on a boundary of
 * ushmemi_heap_alignment_for(its size) (at least USHMEMI_HEAP_ALIGNMENT),
 * which settles every alignment up to that when the PEs' heaps have one
 * size; this asks, once, at the first larger request (shmem_align is
 * collective, so every PE asks at the same call). The answer is the lowest
 * bit in which some PE's base differs from this one's, the same on every
 * PE, or no limit when all bases are equal (one PE). Backends that align
 * their bases further raise it with no change here. */
static size_t shared_base_alignment(void)
{
    static size_t shared;      /* 0 until asked */
    static const void *asked;  /* the heap it was asked for: a new init asks again */
    if (shared != 0 && asked == ushmemi_g.heap_base)
        return shared;
    asked = ushmemi_g.heap_base;
    uint64_t mine = (uint64_t)(uintptr_t)ushmemi_g.heap_base;
    uint64_t *bases = malloc((size_t)ushmemi_g.n_pes * sizeof(*bases));
    if (bases == NULL)
        ushmemi_fatal("shmem_align", "out of memory gathering the heap bases of %d PEs",
                      ushmemi_g.n_pes);
    ushmem_status_t status = ushmemi_bootstrap_allgather(&ushmemi_g.bs, &mine, bases,
                                                         sizeof(mine));
    if (status != USHMEM_OK)
        ushmemi_fatal("shmem_align", "gathering the PEs' heap bases failed: %s",
                      ushmemi_status_string(status));
    uint64_t differ = 0;
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
        differ |= bases[pe] ^ mine;
    free(bases);
    shared = differ == 0 ? SIZE_MAX : (size_t)(differ & (~differ + 1));
    return shared;
}

USHMEMI_API void *shmem_align(size_t alignment, size_t size)
{
    ushmemi_check_init("shmem_align");
    check_same_request("shmem_align", 1, size, alignment);
    /* Every PE passes the same arguments and learns the same shared
     * alignment, so every PE refuses together and stays collective. */
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        ushmemi_error("shmem_align(%zu, %zu): the alignment %zu is not a power of two", alignment,
                      size, alignment);
    } else if (alignment > user_max()) {
        ushmemi_error("shmem_align(%zu, %zu): the alignment %zu is larger than the symmetric heap "
                      "may grow (%zu bytes at most: %s)",
                      alignment, size, alignment, user_max(), ushmemi_g.heap_max_from);
    } else if (alignment > USHMEMI_HEAP_ALIGNMENT && alignment > shared_base_alignment()) {
        ushmemi_error("shmem_align(%zu, %zu): the alignment %zu cannot hold on every PE: a "
                      "symmetric block has one offset on all PEs, and their heaps lie at "
                      "addresses that agree only modulo %zu bytes (the device backend aligns "
                      "each heap to %zu bytes)",
                      alignment, size, alignment, shared_base_alignment(),
                      ushmemi_heap_alignment_for(ushmemi_g.heap_reserve));
    } else {
        return alloc_agreed("shmem_align", alignment, size);
    }
    ushmemi_barrier_world();
    return NULL;
}

static void free_checked(const char *call, void *ptr)
{
    if (!ushmemi_in_user_heap(ptr, 1) || !ushmemi_heap_free(ptr))
        ushmemi_fatal(call, "%p is not the start of a live symmetric heap allocation", ptr);
}

USHMEMI_API void shmem_free(void *ptr)
{
    ushmemi_check_init("shmem_free");
    /* Nobody may still be writing into the block when it is reused. */
    shmem_quiet();
    ushmemi_barrier_world();
    if (ptr != NULL)
        free_checked("shmem_free", ptr);
}

USHMEMI_API void *shmem_realloc(void *ptr, size_t size)
{
    ushmemi_check_init("shmem_realloc");
    check_same_request("shmem_realloc", 1, size, 0);
    if (ptr == NULL)
        return shmem_malloc(size);
    if (size == 0) {
        shmem_free(ptr);
        return NULL;
    }
    size_t old = ushmemi_in_user_heap(ptr, 1) ? ushmemi_heap_block_size(ptr) : 0;
    if (old == 0)
        ushmemi_fatal("shmem_realloc", "%p is not the start of a live symmetric heap allocation",
                      ptr);
    shmem_quiet();
    ushmemi_barrier_world();
    /* In place when possible: shrinking then never fails for lack of room. */
    if (ushmemi_heap_resize(ptr, size)) {
        ushmemi_barrier_world();
        return ptr;
    }
    bool said;
    void *fresh = alloc_growing("shmem_realloc", 0, size, &said);
    if (fresh == NULL) {
        if (!said)
            ushmemi_error("shmem_realloc(%p, %zu): the symmetric heap cannot hold it; the old "
                          "block is kept",
                          ptr, size);
        ushmemi_barrier_world();
        return NULL;
    }
    ushmemi_host_copy("shmem_realloc", fresh, ptr, old < size ? old : size);
    free_checked("shmem_realloc", ptr);
    ushmemi_barrier_world();
    return fresh;
}

USHMEMI_API void *shmalloc(size_t size) { return shmem_malloc(size); }
USHMEMI_API void shfree(void *ptr) { shmem_free(ptr); }
USHMEMI_API void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
USHMEMI_API void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
