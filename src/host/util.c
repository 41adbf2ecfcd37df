/* Shared helpers of the host API: fatal errors, argument checks, address
 * translation, copies and polling. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "device_api.h"
#include "internal.h"
#include "watch.h"

_Noreturn void ushmemi_fatal(const char *call, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* A kernel that a device call ended is why the device failed: first. */
    ushmemi_device_api_fault_report();
    /* Always printed, whatever the log level: the job is about to end. */
    int saved = ushmemi_log_level;
    if (ushmemi_log_level < USHMEMI_LOG_ERROR)
        ushmemi_log_level = USHMEMI_LOG_ERROR;
    ushmemi_error("%s: %s; ending the job", call, msg);
    ushmemi_log_level = saved;
    /* The program's own buffered output would be lost by the abort. */
    fflush(NULL);
    ushmemi_bootstrap_abort(&ushmemi_g.bs, 1, msg);
}

void ushmemi_check_init(const char *call)
{
    if (__builtin_expect(ushmemi_g.initialized, 1))
        return;
    if (ushmemi_g.finalized)
        ushmemi_fatal(call, "called after shmem_finalize");
    ushmemi_fatal(call, "called before shmem_init");
}

static void check_pe(const char *call, int pe)
{
    if (__builtin_expect(pe < 0 || pe >= ushmemi_g.n_pes, 0))
        ushmemi_fatal(call, "PE %d is out of range (the job has %d PEs: 0 to %d)", pe,
                      ushmemi_g.n_pes, ushmemi_g.n_pes - 1);
}

/* Whether [p, p + len) overlaps [lo, lo + size). */
static bool overlaps(const char *p, size_t len, const char *lo, size_t size)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)lo;
    return a < b + size && (len > UINTPTR_MAX - a || a + len > b);
}

static _Noreturn __attribute__((cold)) void not_symmetric(const char *call, const void *addr,
                                                          size_t len, int pe)
{
    /* The heap a user sees is its user part; a stray index below the first
     * allocation lands in the reserved area, which the hint names. */
    const char *hint = overlaps(addr, len, ushmemi_g.heap_base,
                                (size_t)(ushmemi_g.user_base - ushmemi_g.heap_base))
                           ? "; it reaches into the library's reserved area at the start of "
                             "the heap, below the first allocation"
                           : "";
    if (ushmemi_g.static_size)
        ushmemi_fatal(call, "address %p (%zu bytes) to PE %d is not symmetric: it is neither in "
                      "the symmetric heap [%p, %p) nor in the data segment [%p, %p)%s",
                      addr, len, pe, (void *)ushmemi_g.user_base,
                      (void *)(ushmemi_g.user_base + ushmemi_g.user_size),
                      (void *)ushmemi_g.static_base,
                      (void *)(ushmemi_g.static_base + ushmemi_g.static_size), hint);
    ushmemi_fatal(call, "address %p (%zu bytes) to PE %d is not symmetric: it is not in the "
                  "symmetric heap [%p, %p)%s",
                  addr, len, pe, (void *)ushmemi_g.user_base,
                  (void *)(ushmemi_g.user_base + ushmemi_g.user_size), hint);
}

void ushmemi_locate(const char *call, const void *addr, size_t len, int pe,
                    struct ushmemi_loc *loc_p)
{
    check_pe(call, pe);
    const char *base;
    uint64_t offset;
    if (__builtin_expect(ushmemi_in_user_heap(addr, len), 1)) {
        offset = (uint64_t)((const char *)addr - ushmemi_g.heap_base);
        loc_p->sym = ushmemi_sym_offset(USHMEMI_SEG_HEAP, offset);
        base = ushmemi_g.peers[pe].base;
    } else if (ushmemi_in_static(addr, len)) {
        offset = (uint64_t)((const char *)addr - ushmemi_g.static_base);
        loc_p->sym = ushmemi_sym_offset(USHMEMI_SEG_STATIC, offset);
        base = ushmemi_g.static_peers != NULL ? ushmemi_g.static_peers[pe].base : NULL;
    } else {
        not_symmetric(call, addr, len, pe);
    }
    loc_p->mapped = base != NULL ? (char *)base + offset : NULL;
}

void ushmemi_locate_reserved(const char *call, const void *addr, size_t len, int pe,
                             struct ushmemi_loc *loc_p)
{
    check_pe(call, pe);
    const char *p = addr;
    if (__builtin_expect(p < ushmemi_g.heap_base || len > USHMEMI_RESERVED_SIZE ||
                             (size_t)(p - ushmemi_g.heap_base) > USHMEMI_RESERVED_SIZE - len,
                         0))
        ushmemi_fatal(call, "internal error: %p (%zu bytes) to PE %d is not in the reserved "
                      "heap area [%p, %p)",
                      addr, len, pe, (void *)ushmemi_g.heap_base, (void *)ushmemi_g.user_base);
    uint64_t offset = (uint64_t)(p - ushmemi_g.heap_base);
    const char *base = ushmemi_g.peers[pe].base;
    loc_p->sym = ushmemi_sym_offset(USHMEMI_SEG_HEAP, offset);
    loc_p->mapped = base != NULL ? (char *)base + offset : NULL;
}

bool ushmemi_private_mapped(const void *addr, size_t len)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)addr & ~(page - 1);
    /* msync with MS_ASYNC writes nothing back (the kernel tracks dirty
     * pages itself) and walks only the mappings: ENOMEM says some page of
     * the range has none. It reads no byte, so it cannot fault. */
    return msync((void *)start, (uintptr_t)addr + len - start, MS_ASYNC) == 0 || errno != ENOMEM;
}

_Noreturn void ushmemi_bad_private(const char *call, const char *what, const void *addr,
                                   size_t len, int pe)
{
    uintptr_t a = (uintptr_t)addr;
    if (addr == NULL)
        ushmemi_fatal(call, "%s is NULL (%zu bytes, PE %d)", what, len, pe);
    if (a < ushmemi_g.addr_min)
        ushmemi_fatal(call, "%s %p (%zu bytes, PE %d) lies in the lowest %zu bytes of the "
                      "address space, where nothing is mapped (NULL plus an offset?)",
                      what, addr, len, pe, (size_t)ushmemi_g.addr_min);
    if (len > USHMEMI_USER_ADDR_END || a > USHMEMI_USER_ADDR_END - len)
        ushmemi_fatal(call, "%s %p (%zu bytes, PE %d) runs past the highest user-space address",
                      what, addr, len, pe);
    if (overlaps(addr, len, ushmemi_g.heap_base,
                 (size_t)(ushmemi_g.user_base - ushmemi_g.heap_base)))
        ushmemi_fatal(call, "%s %p (%zu bytes, PE %d) overlaps the library's reserved area [%p, "
                      "%p) at the start of the symmetric heap, below the first allocation",
                      what, addr, len, pe, (void *)ushmemi_g.heap_base,
                      (void *)ushmemi_g.user_base);
    ushmemi_fatal(call, "%s %p (%zu bytes, PE %d) is not mapped memory of this process",
                  what, addr, len, pe);
}

void *ushmemi_remote_addr(const char *call, const void *addr, size_t len, int pe)
{
    struct ushmemi_loc loc;
    ushmemi_locate(call, addr, len, pe, &loc);
    if (__builtin_expect(loc.mapped == NULL, 0))
        ushmemi_fatal(call, "PE %d's memory is not mapped in this PE: %s", pe,
                      ushmemi_g.peers[pe].map_why ? ushmemi_g.peers[pe].map_why : "no route");
    return loc.mapped;
}

/* Copies queued on the copy engine and not waited for yet: puts whose
 * source the caller may already reuse (see ushmemi_host_put_copy). */
static bool copies_pending;

void ushmemi_host_copy(const char *call, void *dst, const void *src, size_t len)
{
    if (len == 0)
        return;
    if (__builtin_expect(ushmemi_g.heap_host_accessible, 1)) {
        memcpy(dst, src, len);
        return;
    }
    ushmem_status_t status = ushmemi_g.dev_ops->copy(ushmemi_g.dev, dst, src, len);
    if (status == USHMEM_OK)
        status = ushmemi_g.dev_ops->sync(ushmemi_g.dev);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "device copy of %zu bytes from %p to %p failed: %s", len, src, dst,
                      ushmemi_status_string(status));
    copies_pending = false; /* the sync waited for them too */
}

/* A put onto the mapped heap. With the copy engine, the copy is waited for
 * only when the caller could otherwise change the data before the engine
 * has read it: a blocking put from memory the driver reads in place
 * (device or pinned memory). A source in ordinary (pageable) host memory
 * is staged by the driver before the copy call returns, and a non-blocking
 * put's source is the caller's until quiet; both complete at the next
 * quiet, wait or copy, which all use the same engine queue, in order. */
void ushmemi_host_put_copy(const char *call, void *dst, const void *src, size_t len, bool nbi)
{
    struct ushmemi_ptr_attr attr;

    if (len == 0)
        return;
    if (__builtin_expect(ushmemi_g.heap_host_accessible, 1)) {
        memcpy(dst, src, len);
        return;
    }
    if (!nbi && (ushmemi_g.dev_ops->pointer_query(ushmemi_g.dev, src, &attr) != USHMEM_OK ||
                 attr.kind != USHMEMI_MEM_UNKNOWN)) {
        ushmemi_host_copy(call, dst, src, len);
        return;
    }
    ushmem_status_t status = ushmemi_g.dev_ops->copy(ushmemi_g.dev, dst, src, len);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "device copy of %zu bytes from %p to %p failed: %s", len, src, dst,
                      ushmemi_status_string(status));
    copies_pending = true;
}

void ushmemi_host_copies_complete(const char *call)
{
    if (!copies_pending)
        return;
    ushmem_status_t status = ushmemi_g.dev_ops->sync(ushmemi_g.dev);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "completing the queued device copies failed: %s",
                      ushmemi_status_string(status));
    copies_pending = false;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins before a wait starts to yield or sleep: where cores are not
 * shared, and where they are (ushmemi_g.cores_shared), when the PE waited
 * for may need this very CPU and each spin delays it. */
#define POLL_SPINS 128
#define POLL_SPINS_SHARED 8
/* Where cores are shared: how long a wait yields before it blocks, what
 * yield took a slice (a busy thread beside), and for how long after such a
 * yield waits block at once. */
#define SHARED_YIELD_NS 200000
#define SHARED_SLOW_YIELD_NS 1000000
#define SHARED_COSTLY_NS 100000000

static void pause_on(const char *call, uint64_t world_epoch, const _Atomic uint64_t *word,
                     uint64_t seen, _Atomic uint32_t *sleepers, unsigned *spins);

void ushmemi_poll_pause(unsigned *spins) { pause_on(NULL, 0, NULL, 0, NULL, spins); }

void ushmemi_poll_pause_in(const char *call, uint64_t world_epoch, unsigned *spins)
{
    pause_on(call, world_epoch, NULL, 0, NULL, spins);
}

void ushmemi_poll_wait_ge(const char *call, uint64_t world_epoch, const _Atomic uint64_t *word,
                          uint64_t target)
{
    unsigned spins = 0;
    uint64_t seen;
    while ((seen = atomic_load_explicit(word, memory_order_acquire)) < target)
        pause_on(call, world_epoch, word, seen, NULL, &spins);
}

void ushmemi_poll_wait_reserved(const char *call, uint64_t world_epoch,
                                const _Atomic uint64_t *word, uint64_t target)
{
    unsigned spins = 0;
    uint64_t seen;
    while ((seen = atomic_load_explicit(word, memory_order_acquire)) < target)
        pause_on(call, world_epoch, word, seen, &ushmemi_g.reserved->sleepers, &spins);
}

/* The futex word of a counter: its low 32 bits, which every increment
 * changes. Futexes on MAP_SHARED memory (the heaps, the sync segments) are
 * keyed by the file and offset, so they work across processes. */
static uint32_t *low_half(const _Atomic uint64_t *word)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)(uintptr_t)word + 1;
#else
    return (uint32_t *)(uintptr_t)word;
#endif
}

void ushmemi_poll_wake_slow(const _Atomic uint64_t *word)
{
    syscall(SYS_futex, low_half(word), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Where cores are shared: blocks until the counter's low half changes from
 * seen's, it is woken, or a timeout passes. The timeout is what ends the
 * wait when the writer does not wake: a store over the fabric (which this
 * PE's own progress may have to land, hence short then), or a peer that
 * decided otherwise (USHMEM_CORES_SHARED set differently). */
static void futex_wait(const _Atomic uint64_t *word, uint64_t seen)
{
    struct timespec ts = {0, ushmemi_g.fabric != NULL ? 50000 : 1000000};
    syscall(SYS_futex, low_half(word), FUTEX_WAIT, (uint32_t)seen, &ts, NULL, 0);
}

static void pause_on(const char *call, uint64_t world_epoch, const _Atomic uint64_t *word,
                     uint64_t seen, _Atomic uint32_t *sleepers, unsigned *spins)
{
    /* A short spin keeps latency low when the peer runs on another core;
     * then yield, because PEs often outnumber cores; after a millisecond of
     * real waiting, sleep in growing steps so that a PE waiting a long time
     * (for slow I/O on a peer, say) stops burning a core. The threshold is
     * time, not a count: yields return at once when nobody else runs. A
     * wait of USHMEM_HANG_CHECK seconds looks for a peer that will never
     * come (watch.c), between sleeps.
     *
     * Where cores are shared, a yield beside a busy thread gives the CPU
     * away for the rest of a scheduler slice (about a millisecond under
     * EEVDF), not to the peer alone: such a wait spins less, then blocks on
     * the counter it waits for (the writer wakes it: ushmemi_poll_wake), or
     * naps, and never yields. */
    static _Thread_local int64_t yield_start, watch_at, costly_until;
    bool shared = ushmemi_g.cores_shared;
    unsigned n = ++*spins, spin_for = shared ? POLL_SPINS_SHARED : POLL_SPINS;
    /* What this PE waits for may be a peer's put or atomic over the fabric,
     * which a provider with manual progress lands only when called. */
    if (ushmemi_g.fabric != NULL)
        ushmemi_g.fabric_ops->progress(ushmemi_g.fabric);
    if (n < spin_for) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
        return;
    }
    if (n == spin_for) {
        yield_start = now_ns();
        watch_at = ushmemi_watch_after_ns();
    }
    int64_t waited = now_ns() - yield_start;
    if (!shared && waited < 1000000) {
        sched_yield();
        return;
    }
    if (shared && waited < SHARED_YIELD_NS && yield_start > costly_until) {
        /* Beside other waiting PEs a yield hands the CPU over at once and
         * costs less than a futex's sleep and wake-up; beside a busy
         * thread it costs a slice: then block for a while instead. */
        int64_t before = now_ns();
        sched_yield();
        if (now_ns() - before > SHARED_SLOW_YIELD_NS)
            costly_until = before + SHARED_COSTLY_NS;
        return;
    }
    if (watch_at > 0 && waited >= watch_at)
        watch_at = ushmemi_watch_check(call, world_epoch, waited);
    if (shared && word != NULL) {
        /* Counted before the futex reads the counter (see
         * ushmemi_poll_wake_reserved). */
        if (sleepers != NULL)
            atomic_fetch_add_explicit(sleepers, 1, memory_order_seq_cst);
        futex_wait(word, seen);
        if (sleepers != NULL)
            atomic_fetch_sub_explicit(sleepers, 1, memory_order_relaxed);
        return;
    }
    /* Sleep 10 us, growing to 200 us after 20 ms. */
    long ns = waited < 20000000 ? 10000 : 200000;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

void ushmemi_host_fill(void *dst, int byte, size_t len)
{
    if (ushmemi_g.heap_host_accessible) {
        memset(dst, byte, len);
        return;
    }
    ushmem_status_t status = ushmemi_g.dev_ops->memset(ushmemi_g.dev, dst, byte, len);
    if (status == USHMEM_OK)
        status = ushmemi_g.dev_ops->sync(ushmemi_g.dev);
    if (status != USHMEM_OK)
        ushmemi_fatal("shmem_calloc", "device memset of %zu bytes at %p to 0x%02x failed: %s",
                      len, dst, (unsigned)byte & 0xffu, ushmemi_status_string(status));
}

void ushmemi_host_copy_zero(void *dst, size_t len)
{
    ushmemi_host_fill(dst, 0, len);
}
