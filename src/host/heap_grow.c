/* Growth of the symmetric heap. Each PE's heap starts at SHMEM_SYMMETRIC_SIZE
 * (plus the reserved area) at the start of a reserve of address space as
 * large as it may ever grow (USHMEM_HEAP_MAX, else what the device holds),
 * which every local peer that maps the heap holds behind its mapping too.
 * An allocation that does not fit grows every PE's heap at once, inside the
 * call, which is collective: the heaps stay one size, every block keeps one
 * offset on every PE, and a peer's copy of an address is still its heap's
 * base plus that offset.
 *
 * Steps, each ending in an exchange that every PE joins whatever happened to
 * it, so that all PEs take the same branch: this PE maps its chunk (device
 * ops heap_grow); the local peers map each other's chunks (ushmemi_ipc_grow);
 * the fabric registers the grown heap (only the new chunk, where it registers
 * GPU memory with FI_HMEM) and learns the peers' keys; then the
 * allocator, the host's bounds and the proxy's roads take the new size. A
 * refusal at any step undoes the steps before it on every PE, and the PE
 * that refused says why in one line for the job. The device state's bounds
 * are the whole reserve from the start, so device calls cost what they
 * cost before and no module is written again.
 *
 * USHMEMI_FAULT_GROW_MAP=PE:PEER:GROWTH (test only, read here and nowhere
 * else): at the GROWTH-th growth (1 the first, refused ones counted), PE's
 * taking of PEER's new chunk fails: its mapping where PE maps PEER's heap,
 * else the fabric's taking of PEER's new key; the steps then undo
 * themselves as for a real failure (test/unit/mpe/mpe_heap_grow.c --fault). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_api.h"
#include "internal.h"

/* Heaps grow in whole multiples of this (the granularity of GPU mappings). */
#define GROW_UNIT USHMEMI_HEAP_ALIGNMENT
/* Address space all of one process's heap reserves may take by default (its
 * own and its local peers'), well inside the 128 TiB of x86-64's user half:
 * a default reserve is capped at this divided by the node's PEs. */
#define RESERVE_BUDGET ((size_t)1 << 45)

static size_t round_up(size_t size, size_t to) { return (size + to - 1) / to * to; }

size_t ushmemi_heap_reserve_for(size_t start, const char **from_p)
{
    const struct ushmemi_device_ops *ops = ushmemi_g.dev_ops;
    size_t max = start, bytes = 0;
    const char *from;

    if (ops->heap_reserve == NULL || ops->heap_grow == NULL) {
        static char why[96];
        snprintf(why, sizeof(why), "the %s backend cannot grow a heap: SHMEM_SYMMETRIC_SIZE is "
                 "its size", ops->name);
        *from_p = why;
        return start;
    }
    if (ushmemi_settings.heap_max != 0) {
        size_t room = SIZE_MAX - USHMEMI_RESERVED_SIZE;
        max = ushmemi_settings.heap_max > room ? SIZE_MAX
                                              : USHMEMI_RESERVED_SIZE + ushmemi_settings.heap_max;
        from = "USHMEM_HEAP_MAX";
    } else if (ops->memory_size != NULL && ops->memory_size(ushmemi_g.dev, &bytes) == USHMEM_OK) {
        size_t budget = RESERVE_BUDGET / (size_t)(ushmemi_g.local_size > 0 ? ushmemi_g.local_size : 1);
        max = bytes < budget ? bytes : budget;
        from = bytes >= budget                   ? "the address space for the node's heaps"
               : strcmp(ops->name, "cpu") == 0 ? "the machine's memory"
                                               : "the device's memory";
    } else {
        *from_p = "the start size: the device backend does not say how much memory it holds";
        return start;
    }
    /* The heap is addressed by the offset part of a symmetric offset. */
    if (max > USHMEMI_SEG_OFFSET_MASK / 2)
        max = (size_t)(USHMEMI_SEG_OFFSET_MASK / 2);
    max = max / GROW_UNIT * GROW_UNIT;
    if (max <= start) {
        *from_p = "SHMEM_SYMMETRIC_SIZE, which the maximum does not exceed";
        return start;
    }
    *from_p = from;
    return max;
}

/* One PE's answer to "did your step work", gathered by every PE. */
struct vote {
    uint32_t ok;
    char why[188];
};

/* Gathers every PE's answer; true when all said ok. Otherwise the first PE
 * that did not says so, in one line for the job, naming itself and why. */
static bool vote(const char *call, size_t size, size_t old_size, size_t new_size,
                 const struct vote *mine)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    struct vote *all = malloc((size_t)n * sizeof(*all));
    if (all == NULL)
        ushmemi_fatal(call, "out of memory gathering the heap growth answers of %d PEs", n);
    ushmem_status_t status = ushmemi_bootstrap_allgather(&ushmemi_g.bs, mine, all, sizeof(*mine));
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "gathering the PEs' heap growth answers failed: %s",
                      ushmemi_status_string(status));
    int first = -1, others = 0;
    for (int pe = 0; pe < n; pe++) {
        if (all[pe].ok)
            continue;
        if (first < 0)
            first = pe;
        else
            others++;
    }
    if (first == me) {
        char more[48] = "";
        if (others > 0)
            snprintf(more, sizeof(more), " (and %d other PE%s)", others, others > 1 ? "s" : "");
        ushmemi_error("%s: %zu bytes do not fit the symmetric heap, which cannot grow from %zu "
                      "to %zu bytes: PE %d: %.*s%s; the heap keeps its size, and the call "
                      "returns NULL on every PE",
                      call, size, old_size, new_size, me, (int)sizeof(all[me].why),
                      all[me].why, more);
    }
    free(all);
    return first < 0;
}

/* A step that reaches the peers' chunks failed on every PE (it is all or
 * none); the PEs where it failed said why in step->why: one line for the
 * job, as for a refusal to grow. */
static void step_failed(const char *call, size_t size, size_t old_size, size_t new_size,
                        const char *what, const struct ushmemi_grow_step *step)
{
    struct vote mine = {.ok = step->why[0] == '\0'};
    snprintf(mine.why, sizeof(mine.why), "%s", step->why);
    if (vote(call, size, old_size, new_size, &mine) && ushmemi_g.my_pe == 0)
        ushmemi_error("%s: %zu bytes do not fit the symmetric heap, which cannot grow from %zu "
                      "to %zu bytes: %s failed without a PE saying why; the heap keeps its "
                      "size, and the call returns NULL on every PE", call, size, old_size,
                      new_size, what);
}

/* The peer whose new chunk this PE fails to take at growth number `growth`
 * (USHMEMI_FAULT_GROW_MAP), else -1. */
static int fault_peer(const char *call, unsigned long growth)
{
    const char *text = getenv("USHMEMI_FAULT_GROW_MAP"); /* test switch */
    if (text == NULL || text[0] == '\0')
        return -1;
    char *end = NULL;
    long pe = strtol(text, &end, 10), peer = -1, at = 0;
    bool good = end != text && *end == ':';
    if (good) {
        const char *from = end + 1;
        peer = strtol(from, &end, 10);
        good = end != from && *end == ':';
    }
    if (good) {
        const char *from = end + 1;
        at = strtol(from, &end, 10);
        good = end != from && *end == '\0';
    }
    if (!good || pe < 0 || pe >= ushmemi_g.n_pes || peer < 0 || peer >= ushmemi_g.n_pes ||
        peer == pe || at < 1)
        ushmemi_fatal(call, "USHMEMI_FAULT_GROW_MAP=%s (a test switch) is not PE:PEER:GROWTH "
                      "with two different PEs of the %d and a growth from 1", text,
                      ushmemi_g.n_pes);
    if (pe != ushmemi_g.my_pe || (unsigned long)at != growth)
        return -1;
    ushmemi_debug("%s: USHMEMI_FAULT_GROW_MAP: growth %lu fails where this PE takes PE %ld's new "
                  "heap chunk", call, growth, peer);
    return (int)peer;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* USHMEM_FD_PASSING as ushmemi_ipc_grow takes it (checked at shmem_init). */
static enum ushmemi_fd_method fd_method(void)
{
    const char *text = ushmemi_settings.fd_passing;
    return strcmp(text, "pidfd") == 0    ? USHMEMI_FD_PIDFD
           : strcmp(text, "socket") == 0 ? USHMEMI_FD_SOCKET
                                         : USHMEMI_FD_AUTO;
}

static ushmem_status_t oob_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    return ushmemi_bootstrap_allgather(ctx, mine, all, len);
}

static ushmem_status_t oob_barrier(void *ctx) { return ushmemi_bootstrap_barrier(ctx); }

bool ushmemi_heap_grow(const char *call, size_t align, size_t size, bool *said_p)
{
    const struct ushmemi_device_ops *ops = ushmemi_g.dev_ops;
    size_t old_size = ushmemi_g.heap_size, need = ushmemi_heap_grow_need(align, size);
    size_t new_size = need <= SIZE_MAX - old_size - GROW_UNIT ? round_up(old_size + need, GROW_UNIT)
                                                              : SIZE_MAX;
    struct vote mine = {.ok = 1};
    bool grew = false;
    static unsigned long growths; /* tried, on every PE alike */

    *said_p = false;
    /* Fits at the end already (no growth helps), or no heap could hold it:
     * the caller says so, as every PE sees the same. */
    if (need == 0 || need == SIZE_MAX)
        return false;
    *said_p = true;
    struct ushmemi_grow_step step = {.fail_peer = fault_peer(call, ++growths)};
    double t0 = seconds();
    /* Every PE sees the same sizes (the allocator is deterministic); only
     * the maximum and the device's answer may differ between PEs. */
    if (ops->heap_grow == NULL || ushmemi_g.heap_reserve <= ushmemi_g.heap_start) {
        snprintf(mine.why, sizeof(mine.why),
                 "the heap's maximum is its start size of %zu bytes (%s)", ushmemi_g.heap_start,
                 ushmemi_g.heap_max_from);
    } else if (new_size > ushmemi_g.heap_reserve) {
        snprintf(mine.why, sizeof(mine.why), "that passes the heap's maximum of %zu bytes (%s)",
                 ushmemi_g.heap_reserve, ushmemi_g.heap_max_from);
    } else {
        char why[sizeof(mine.why) - 32] = "";
        ushmem_status_t status =
            ops->heap_grow(ushmemi_g.dev, ushmemi_g.heap_base, old_size, new_size, why, sizeof(why));
        grew = status == USHMEM_OK;
        if (!grew)
            snprintf(mine.why, sizeof(mine.why), "the %s backend: %s", ops->name, why);
    }
    mine.ok = mine.why[0] == '\0';
    if (!vote(call, size, old_size, new_size, &mine))
        goto shrink;
    double t1 = seconds();

    /* The local peers map the new chunks; they said why, where one failed. */
    if (ushmemi_settings.ipc) {
        struct ushmemi_ipc_config config = {
            .fd_method = fd_method(),
            .timeout_s = (int)ushmemi_settings.bootstrap_timeout,
        };
        static struct ushmemi_oob oob;
        oob = (struct ushmemi_oob){.rank = ushmemi_g.my_pe, .size = ushmemi_g.n_pes,
                                   .local_rank = ushmemi_g.local_rank,
                                   .local_size = ushmemi_g.local_size,
                                   .ctx = &ushmemi_g.bs,
                                   .allgather = oob_allgather,
                                   .barrier = oob_barrier};
        if (ushmemi_ipc_grow(&oob, ops, ushmemi_g.dev, ushmemi_g.heap_base, old_size, new_size,
                             &config, ushmemi_g.peers, &step) != USHMEM_OK) {
            step_failed(call, size, old_size, new_size, "mapping the local peers' new chunks",
                        &step);
            goto shrink;
        }
    }
    double t2 = seconds();
    if (ushmemi_g.fabric != NULL) {
        /* Every PE has the fabric's heap_grow or none has: it is the
         * transport's, which every PE runs alike. */
        if (ushmemi_g.fabric_ops->heap_grow == NULL) {
            if (ushmemi_g.my_pe == 0)
                ushmemi_error("%s: %zu bytes do not fit the symmetric heap, which cannot grow: "
                              "the fabric (%s) cannot follow a heap that grows; the heap keeps "
                              "its size of %zu bytes, and the call returns NULL on every PE",
                              call, size, ushmemi_g.fabric_ops->name, old_size);
            goto unmap_peers;
        }
        if (ushmemi_g.fabric_ops->heap_grow(ushmemi_g.fabric, new_size, &step) != USHMEM_OK) {
            step_failed(call, size, old_size, new_size, "the fabric's step", &step);
            goto unmap_peers;
        }
    }

    /* Everyone has everything mapped and registered: the new bytes are heap. */
    if (ushmemi_heap_extend(ushmemi_heap_size() + (new_size - old_size)) != USHMEM_OK)
        ushmemi_fatal(call, "out of memory for the allocator's record of %zu new heap bytes",
                      new_size - old_size);
    ushmemi_g.user_size += new_size - old_size;
    ushmemi_g.heap_size = new_size;
    ushmemi_device_api_heap_grown(new_size);
    double t3 = seconds();
    ushmemi_debug("%s: the symmetric heap grew from %zu to %zu bytes in %.3f ms (this PE's chunk "
                  "%.3f ms, the local peers' %.3f ms, the fabric %.3f ms)",
                  call, old_size, new_size, (t3 - t0) * 1e3, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                  (t3 - t2) * 1e3);
    return true;

unmap_peers:
    if (ushmemi_settings.ipc)
        ushmemi_ipc_ungrow(ops, ushmemi_g.dev, ushmemi_g.peers, ushmemi_g.n_pes, ushmemi_g.my_pe,
                           old_size, new_size);
shrink:
    if (grew)
        ops->heap_shrink(ushmemi_g.dev, ushmemi_g.heap_base, old_size, new_size);
    return false;
}
