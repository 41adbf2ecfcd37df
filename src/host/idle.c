/* How this PE waits when nothing comes.
 *
 * Its helper threads (the proxy, the fabric's progress
 * thread): USHMEM_PROXY_IDLE. A sleeping thread
 * costs almost no CPU but takes the first request after a quiet spell up
 * to a sleep late (1 ms); device code cannot wake it, having no system
 * calls, and the host cannot tell when the program launches a kernel that
 * will post one. A spinning thread takes every request at once, for one
 * CPU core. auto spins where that core is there to give: the heap is on a
 * GPU (the cpu backend's PEs need their CPUs for the work itself) and the
 * CPUs this PE may use number at least twice the node's PEs (one for each
 * PE's program, one for its helpers); or, where the PE is bound to one CPU
 * (oshrun's default), its helper threads run on CPUs that no PE of the
 * machine is bound to (the PEs' masks are exchanged here, and the helpers
 * are placed off them) and within those the launcher was given
 * (USHMEM_HELPER_CPUS): one of those at least for each of the node's PEs,
 * and a cgroup quota, if any, of two CPUs a PE. The fabric's progress
 * thread, a second helper, spins too only where there are two a PE.
 * Counting only the bound CPU there, auto took the sleeps under oshrun on
 * every GPU node, and a kernel's first request after a quiet spell waited
 * up to a millisecond.
 *
 * Its own waits (USHMEM_CORES_SHARED): where the PEs that may run on this
 * PE's CPUs outnumber them, the PE it waits for may need the very CPU it
 * spins on, and a yield beside a busy thread gives the CPU away for a whole
 * scheduler slice (EEVDF). Such a PE blocks on the word instead (util.c).
 * The PEs of one machine compare their CPU masks through the bootstrap:
 * oshrun binds each PE to one CPU by default, so neither the mask alone
 * (one CPU for each of several PEs, not shared) nor the PE count alone
 * tells. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/cpus.h"
#include "../common/log.h"
#include "../common/threads.h"
#include "internal.h"

/* What each PE tells the others about where it runs. */
struct cpu_card {
    uint64_t host;     /* a hash of the host name: PEs of one machine match */
    uint32_t has_mask; /* 0: the mask could not be read (more than CPU_SETSIZE CPUs) */
    uint32_t pad;
    uint64_t mask[CPU_SETSIZE / 64];
};

static uint64_t host_hash(void)
{
    char name[256] = "";
    gethostname(name, sizeof(name) - 1);
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */
    for (const char *p = name; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

static void fill_card(struct cpu_card *card)
{
    cpu_set_t set;
    memset(card, 0, sizeof(*card));
    card->host = host_hash();
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    card->has_mask = 1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            card->mask[c / 64] |= (uint64_t)1 << (c % 64);
}

/* Counts the PEs of this machine whose masks meet this PE's (itself
 * included) into *pes_p and the CPUs of those masks into *cpus_p; false
 * when a mask is missing. */
static bool sharing(const struct cpu_card *cards, int n, int me, int *pes_p, int *cpus_p)
{
    const struct cpu_card *mine = &cards[me];
    uint64_t all[CPU_SETSIZE / 64] = {0};
    int pes = 0, cpus = 0;
    if (!mine->has_mask)
        return false;
    for (int pe = 0; pe < n; pe++) {
        const struct cpu_card *c = &cards[pe];
        bool meets = false;
        if (c->host != mine->host)
            continue;
        if (!c->has_mask)
            return false;
        for (size_t w = 0; w < CPU_SETSIZE / 64; w++)
            meets |= (c->mask[w] & mine->mask[w]) != 0;
        if (!meets)
            continue;
        pes++;
        for (size_t w = 0; w < CPU_SETSIZE / 64; w++)
            all[w] |= c->mask[w];
    }
    for (size_t w = 0; w < CPU_SETSIZE / 64; w++)
        cpus += __builtin_popcountll(all[w]);
    *pes_p = pes;
    *cpus_p = cpus;
    return true;
}

/* Sets ushmemi_g.cores_shared. Collective: every PE calls it once. */
/* Every PE's card, gathered into *cards_p (freed by the caller); a
 * failure is said. Collective. */
static ushmem_status_t cards_exchange(struct cpu_card **cards_p)
{
    int n = ushmemi_g.n_pes;
    struct cpu_card *cards = calloc((size_t)n, sizeof(*cards));
    if (cards == NULL) {
        ushmemi_error("shmem_init: PE %d: cannot allocate %d CPU masks", ushmemi_g.my_pe, n);
        return USHMEM_ERR_NO_MEMORY;
    }
    fill_card(&cards[ushmemi_g.my_pe]);
    ushmem_status_t status = ushmemi_bootstrap_allgather(&ushmemi_g.bs, &cards[ushmemi_g.my_pe],
                                                         cards, sizeof(*cards));
    if (status != USHMEM_OK) {
        ushmemi_error("shmem_init: PE %d: exchanging CPU masks (%zu bytes each) failed: %s",
                      ushmemi_g.my_pe, sizeof(*cards), ushmemi_status_string(status));
        free(cards);
        return status;
    }
    *cards_p = cards;
    return USHMEM_OK;
}

/* The CPUs the PEs of this machine are bound to; false when a mask is
 * missing. */
static bool machine_pe_cpus(const struct cpu_card *cards, int n, int me, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int pe = 0; pe < n; pe++) {
        if (cards[pe].host != cards[me].host)
            continue;
        if (!cards[pe].has_mask)
            return false;
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (cards[pe].mask[c / 64] & ((uint64_t)1 << (c % 64)))
                CPU_SET(c, set);
    }
    return true;
}

/* Sets ushmemi_g.cores_shared from the gathered cards. Collective: every
 * PE calls it once. */
static ushmem_status_t cores_decide(const struct ushmemi_cpus *cpus, int local,
                                    const struct cpu_card *cards)
{
    const char *mode = ushmemi_settings.cores_shared;
    int n = ushmemi_g.n_pes, pes = local, avail = cpus->usable;
    const char *how = "the node's PEs against the CPUs this PE may use";
    ushmem_status_t status;
    int p, c;
    bool any = false; /* some PE of this machine decides so (auto) */
    if (sharing(cards, n, ushmemi_g.my_pe, &p, &c)) {
        pes = p;
        avail = cpus->quota > 0 && cpus->quota < c ? cpus->quota : c;
        how = "PEs of this machine whose CPU masks meet this PE's, against the CPUs of those "
              "masks";
        for (int pe = 0; pe < n && !any; pe++)
            if (cards[pe].host == cards[ushmemi_g.my_pe].host && sharing(cards, n, pe, &p, &c))
                any = p > (cpus->quota > 0 && cpus->quota < c ? cpus->quota : c);
    } else {
        any = pes > avail;
    }
    char quota[48] = "";
    if (cpus->quota > 0)
        snprintf(quota, sizeof(quota), ", a cgroup quota of %d", cpus->quota);
    if (strcmp(mode, "1") == 0 || strcmp(mode, "0") == 0) {
        ushmemi_g.cores_shared = mode[0] == '1';
        ushmemi_g.cores_wake = ushmemi_g.cores_shared;
        snprintf(ushmemi_g.cores_why, sizeof(ushmemi_g.cores_why), "%s (USHMEM_CORES_SHARED=%s)",
                 ushmemi_g.cores_shared ? "yes" : "no", mode);
    } else if (strcmp(mode, "auto") == 0) {
        ushmemi_g.cores_shared = pes > avail;
        ushmemi_g.cores_wake = any;
        snprintf(ushmemi_g.cores_why, sizeof(ushmemi_g.cores_why),
                 "%s (auto: %d PE%s on %d CPU%s%s; %s)", ushmemi_g.cores_shared ? "yes" : "no",
                 pes, pes == 1 ? "" : "s", avail, avail == 1 ? "" : "s", quota, how);
    } else {
        ushmemi_error("shmem_init: PE %d: USHMEM_CORES_SHARED=%s is not one of auto, 0, 1",
                      ushmemi_g.my_pe, mode);
        return USHMEM_ERR_INVALID_VALUE;
    }
    /* The collectives choose their algorithms by it (coll.h, barrier.c),
     * and every PE must choose alike, whatever each was told: the job's
     * answer is whether any PE wakes. */
    uint8_t mine = ushmemi_g.cores_wake, *all = calloc((size_t)n, 1);
    if (all == NULL) {
        ushmemi_error("shmem_init: PE %d: cannot allocate %d bytes", ushmemi_g.my_pe, n);
        return USHMEM_ERR_NO_MEMORY;
    }
    status = ushmemi_bootstrap_allgather(&ushmemi_g.bs, &mine, all, 1);
    if (status != USHMEM_OK) {
        ushmemi_error("shmem_init: PE %d: exchanging the cores-shared answers failed: %s",
                      ushmemi_g.my_pe, ushmemi_status_string(status));
        free(all);
        return status;
    }
    ushmemi_g.coll_wake = false;
    for (int pe = 0; pe < n; pe++)
        ushmemi_g.coll_wake |= all[pe] != 0;
    free(all);
    ushmemi_debug("cores shared: %s%s", ushmemi_g.cores_why,
                  ushmemi_g.cores_wake && !ushmemi_g.cores_shared
                      ? "; another PE of this machine shares its cores: this one wakes it"
                      : "");
    return USHMEM_OK;
}

ushmem_status_t ushmemi_idle_decide(void)
{
    const char *mode = ushmemi_settings.proxy_idle;
    struct ushmemi_cpus cpus;
    int local = ushmemi_g.host_local_size > 0 ? ushmemi_g.host_local_size : 1;
    bool gpu = ushmemi_g.heap_is_device && strcmp(ushmemi_g.dev_ops->name, "cpu") != 0;

    ushmemi_cpus_probe(&cpus);
    ushmemi_g.usable_cpus = cpus.usable;
    struct cpu_card *cards = NULL;
    ushmem_status_t status = cards_exchange(&cards);
    if (status != USHMEM_OK)
        return status;
    /* Helper threads go off every CPU a PE of this machine is bound to
     * (common/threads.c), known from the cards. */
    cpu_set_t pe_cpus;
    bool known = machine_pe_cpus(cards, ushmemi_g.n_pes, ushmemi_g.my_pe, &pe_cpus);
    ushmemi_helper_avoid(known ? &pe_cpus : NULL);
    char quota[48] = "";
    if (cpus.quota > 0)
        snprintf(quota, sizeof(quota), ", a cgroup quota of %d", cpus.quota);
    if (strcmp(mode, "spin") == 0) {
        ushmemi_g.idle_spin = ushmemi_g.idle_spin_fabric = true;
        snprintf(ushmemi_g.idle_why, sizeof(ushmemi_g.idle_why), "spin (USHMEM_PROXY_IDLE=spin)");
    } else if (strcmp(mode, "sleep") == 0) {
        ushmemi_g.idle_spin = ushmemi_g.idle_spin_fabric = false;
        snprintf(ushmemi_g.idle_why, sizeof(ushmemi_g.idle_why),
                 "sleep (USHMEM_PROXY_IDLE=sleep)");
    } else if (strcmp(mode, "auto") == 0) {
        /* Bound to one CPU (oshrun's default), the helper threads run on
         * others: those that no PE of this machine is bound to count. The
         * proxy spins where each PE's has one; the fabric's progress
         * thread too where there are two a PE. */
        int helpers = ushmemi_helper_cpu_count(ushmemi_g.host_local_rank, local,
                                               known ? &pe_cpus : NULL);
        char on[80] = "";
        if (helpers >= 0)
            snprintf(on, sizeof(on), ", its helper threads on %d CPU%s no PE is bound to",
                     helpers, helpers == 1 ? "" : "s");
        ushmemi_g.idle_spin =
            gpu && ushmemi_helpers_may_spin(cpus.usable, cpus.quota, helpers, local, 1);
        ushmemi_g.idle_spin_fabric = ushmemi_g.idle_spin &&
                                     ushmemi_helpers_may_spin(cpus.usable, cpus.quota, helpers,
                                                              local, 2);
        snprintf(ushmemi_g.idle_why, sizeof(ushmemi_g.idle_why),
                 "%s (auto: %s; %d usable CPUs (%d in the affinity mask%s)%s, for %d PE%s on "
                 "this node%s)",
                 ushmemi_g.idle_spin ? "spin" : "sleep",
                 gpu ? "the heap is on a GPU" : "the heap is host memory", cpus.usable,
                 cpus.affinity, quota, on, local, local == 1 ? "" : "s",
                 ushmemi_g.idle_spin && !ushmemi_g.idle_spin_fabric
                     ? "; the fabric's progress thread sleeps: no room for two spinning helpers a PE"
                     : "");
    } else {
        ushmemi_error("shmem_init: PE %d: USHMEM_PROXY_IDLE=%s is not one of auto, spin, sleep",
                      ushmemi_g.my_pe, mode);
        free(cards);
        return USHMEM_ERR_INVALID_VALUE;
    }
    ushmemi_debug("helper threads when idle: %s", ushmemi_g.idle_why);
    status = cores_decide(&cpus, local, cards);
    free(cards);
    return status;
}
