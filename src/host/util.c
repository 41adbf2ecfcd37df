/* Shared helpers of the host API: fatal errors, argument checks, address
 * translation, copies and polling. */
#include <sched.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

_Noreturn void ushmemi_fatal(const char *call, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
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

void ushmemi_locate(const char *call, const void *addr, size_t len, int pe,
                    struct ushmemi_loc *loc_p)
{
    if (__builtin_expect(pe < 0 || pe >= ushmemi_g.n_pes, 0))
        ushmemi_fatal(call, "PE %d is out of range (the job has %d PEs: 0 to %d)", pe,
                      ushmemi_g.n_pes, ushmemi_g.n_pes - 1);
    const char *base;
    uint64_t offset;
    if (__builtin_expect(ushmemi_in_heap(addr, len), 1)) {
        offset = (uint64_t)((const char *)addr - ushmemi_g.heap_base);
        loc_p->sym = ushmemi_sym_offset(USHMEMI_SEG_HEAP, offset);
        base = ushmemi_g.peers[pe].base;
    } else if (ushmemi_in_static(addr, len)) {
        offset = (uint64_t)((const char *)addr - ushmemi_g.static_base);
        loc_p->sym = ushmemi_sym_offset(USHMEMI_SEG_STATIC, offset);
        base = ushmemi_g.static_peers != NULL ? ushmemi_g.static_peers[pe].base : NULL;
    } else if (ushmemi_g.static_size) {
        ushmemi_fatal(call, "address %p (%zu bytes) to PE %d is not symmetric: it is neither in the "
                      "symmetric heap [%p, %p) nor in the data segment [%p, %p)",
                      addr, len, pe, (void *)ushmemi_g.heap_base,
                      (void *)(ushmemi_g.heap_base + ushmemi_g.heap_size),
                      (void *)ushmemi_g.static_base,
                      (void *)(ushmemi_g.static_base + ushmemi_g.static_size));
    } else {
        ushmemi_fatal(call, "address %p (%zu bytes) to PE %d is not symmetric: it is not in the "
                      "symmetric heap [%p, %p)",
                      addr, len, pe, (void *)ushmemi_g.heap_base,
                      (void *)(ushmemi_g.heap_base + ushmemi_g.heap_size));
    }
    loc_p->mapped = base != NULL ? (char *)base + offset : NULL;
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

void ushmemi_poll_pause(unsigned *spins)
{
    /* A short spin keeps latency low when the peer runs on another core;
     * then yield, because PEs often outnumber cores; after a millisecond of
     * real waiting, sleep in growing steps so that a PE waiting a long time
     * (for slow I/O on a peer, say) stops burning a core. The threshold is
     * time, not a count: yields return at once when nobody else runs. */
    static _Thread_local int64_t yield_start;
    unsigned n = ++*spins;
    /* What this PE waits for may be a peer's put or atomic over the fabric,
     * which a provider with manual progress lands only when called. */
    if (ushmemi_g.fabric != NULL)
        ushmemi_g.fabric_ops->progress(ushmemi_g.fabric);
    if (n < 128) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
        return;
    }
    if (n == 128)
        yield_start = now_ns();
    int64_t waited = now_ns() - yield_start;
    if (waited < 1000000) {
        sched_yield();
        return;
    }
    /* 1 ms of waiting: sleep 10 us, growing to 200 us after 20 ms. */
    long ns = waited < 20000000 ? 10000 : 200000;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

void ushmemi_host_copy_zero(void *dst, size_t len)
{
    if (ushmemi_g.heap_host_accessible) {
        memset(dst, 0, len);
        return;
    }
    ushmem_status_t status = ushmemi_g.dev_ops->memset(ushmemi_g.dev, dst, 0, len);
    if (status == USHMEM_OK)
        status = ushmemi_g.dev_ops->sync(ushmemi_g.dev);
    if (status != USHMEM_OK)
        ushmemi_fatal("shmem_calloc", "device memset of %zu bytes at %p failed: %s", len, dst,
                      ushmemi_status_string(status));
}
