/* The route policy for one (me, peer) pair, and the USHMEM_SIM_CAPS override
 * that replays it on machines without the hardware.
 *
 * Policy, in order ("mapped" means same node, USHMEM_IPC on, and either one
 * device or GPU peer access):
 *
 *  1. me == peer: every class SELF.
 *  2. RMA: DIRECT when mapped. Otherwise PROXY_OFI when the fabric has FI_RMA
 *     and can reach the heap (host heap, or device heap with FI_HMEM), else
 *     STAGED when USHMEM_FABRIC_STAGING=1 and the fabric has FI_RMA, else NONE.
 *  3. AMO: DIRECT when mapped and the pair is one device, or when mapped, the
 *     backend reports peer atomics, and the link is not PCIe or the PCIe path
 *     has AtomicOps. An unverifiable PCIe path (config space unreadable) counts
 *     as yes only with USHMEM_STRICT=0, and then says so in a warning: GPU
 *     atomics over a path without AtomicOps are silently not atomic. Otherwise
 *     the fabric, as for RMA but with FI_ATOMIC.
 *  4. SIGNAL takes AMO's road, always: a signal word must never be updated by
 *     GPU atomics from one side and NIC atomics from the other, because the
 *     two are not atomic with respect to each other.
 *  5. SYNC takes AMO's road (collectives synchronise with atomics), except for
 *     two mapped PEs on one device, where it is HOST_SYNC: a kernel spinning on a flag
 *     that another process's kernel on the same device must set can wait
 *     forever if the device does not run the two at once, so those PEs wait
 *     on the host. HOST_SYNC is a route value of its own, not DIRECT with a
 *     comment, so that the collectives can switch on it.
 *  6. Any class with NONE: `error` is one sentence naming the pair, the
 *     classes, what is missing and how it was found, and the remedies.
 *
 * Every `why` is static text; only `error` and `warning` are formatted. */
#include "decide.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"

/* Why a pair cannot take the direct road for a class. */
enum blocker {
    BLOCK_NONE = 0,
    BLOCK_OTHER_NODE,
    BLOCK_IPC_OFF,
    BLOCK_NO_P2P_ACCESS,
    BLOCK_NO_P2P_ATOMICS,
    BLOCK_PCIE_NO,
    BLOCK_PCIE_UNVERIFIED,
};

struct blocker_text {
    const char *why;       /* for the route table */
    const char *clause;    /* for the error: what is missing and how it was found */
    const char *remedy[2]; /* NULL when nothing local helps */
};

static const struct blocker_text blocker_texts[] = {
    [BLOCK_NONE] = {"", "", {NULL, NULL}},
    [BLOCK_OTHER_NODE] = {"peer on another node", "the peer is on another node", {NULL, NULL}},
    [BLOCK_IPC_OFF] = {"USHMEM_IPC=0: peer heap not mapped",
                       "peer heaps are not mapped because USHMEM_IPC=0",
                       {"set USHMEM_IPC=1", NULL}},
    [BLOCK_NO_P2P_ACCESS] = {"no GPU peer access",
                             "the device backend reports no peer access between the two GPUs",
                             {"enable GPU peer access (IOMMU and ACS settings)", NULL}},
    [BLOCK_NO_P2P_ATOMICS] = {"no GPU peer atomics",
                              "the device backend reports no native atomics between the two GPUs",
                              {"connect the GPUs by NVLink/Xe Link", NULL}},
    [BLOCK_PCIE_NO] = {"PCIe path without AtomicOps",
                       "the GPUs are linked by PCIe without AtomicOps (the config-space probe "
                       "found a requester not enabled, a port that does not route AtomicOps, "
                       "egress blocking or no 64-bit completer on the path)",
                       {"enable AtomicOps in the BIOS", "connect the GPUs by NVLink/Xe Link"}},
    [BLOCK_PCIE_UNVERIFIED] = {"PCIe AtomicOps unverified and USHMEM_STRICT=1",
                               "the GPUs are linked by PCIe and AtomicOps on the path could not "
                               "be verified (config space unreadable or the path not visible in "
                               "sysfs) while USHMEM_STRICT=1",
                               {"set USHMEM_STRICT=0 to trust the path",
                                "connect the GPUs by NVLink/Xe Link"}},
};

static const char *const why_self = "this PE";
static const char *const why_rma_direct = "peer heap mapped through IPC";
static const char *const why_one_device = "two PEs on one device: same memory";
static const char *const why_amo_one_device = "two PEs on one device: native atomics on the same memory";
static const char *const why_amo_link = "native peer atomics, no PCIe hop (NVLink, Xe Link or host memory)";
static const char *const why_amo_pcie = "GPU peer atomics, PCIe AtomicOps verified on the path";
static const char *const why_amo_trusted = "GPU peer atomics, PCIe AtomicOps unverified (USHMEM_STRICT=0)";
static const char *const why_host_sync = "two PEs on one device: host-side synchronisation";

/* A bounded string builder: output is truncated, never overrun. */
struct text {
    char *buf;
    size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void text_add(struct text *t, const char *fmt, ...)
{
    if (t->len + 1 >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    t->len += (size_t)n;
    if (t->len >= t->cap)
        t->len = t->cap - 1;
}

/* Joins items as "a", "a and b", "a, b and c" (conj "and") or with "or". */
static void text_join(struct text *t, const char *const *items, int n, const char *conj)
{
    for (int i = 0; i < n; i++) {
        if (i > 0 && i == n - 1)
            text_add(t, n > 2 ? ", %s " : " %s ", conj);
        else if (i > 0)
            text_add(t, ", ");
        text_add(t, "%s", items[i]);
    }
}

static bool is_local(const struct ushmemi_pair_caps *caps)
{
    return caps->same_node || caps->same_device;
}

static enum blocker map_blocker(const struct ushmemi_pair_caps *caps)
{
    if (!is_local(caps))
        return BLOCK_OTHER_NODE;
    if (!caps->ipc_enabled)
        return BLOCK_IPC_OFF;
    if (!caps->same_device && !caps->p2p_access)
        return BLOCK_NO_P2P_ACCESS;
    return BLOCK_NONE;
}

static enum blocker atomic_blocker(const struct ushmemi_pair_caps *caps)
{
    enum blocker b = map_blocker(caps);
    if (b != BLOCK_NONE || caps->same_device)
        return b;
    if (!caps->p2p_atomics)
        return BLOCK_NO_P2P_ATOMICS;
    if (!caps->link_is_pcie || caps->pcie_atomics == USHMEMI_YES)
        return BLOCK_NONE;
    if (caps->pcie_atomics == USHMEMI_UNKNOWN && !caps->strict)
        return BLOCK_NONE;
    return caps->pcie_atomics == USHMEMI_UNKNOWN ? BLOCK_PCIE_UNVERIFIED : BLOCK_PCIE_NO;
}

static bool fabric_reaches_heap(const struct ushmemi_pair_caps *caps)
{
    return !caps->heap_is_device || caps->fabric_hmem;
}

/* The fabric road for a class whose fabric capability is `cap`. */
static enum ushmemi_route fabric_route(bool cap, const struct ushmemi_pair_caps *caps)
{
    if (cap && fabric_reaches_heap(caps))
        return USHMEMI_ROUTE_PROXY_OFI;
    if (cap && caps->staging_allowed)
        return USHMEMI_ROUTE_STAGED;
    return USHMEMI_ROUTE_NONE;
}

static const char *amo_direct_why(const struct ushmemi_pair_caps *caps)
{
    if (caps->same_device)
        return why_amo_one_device;
    if (!caps->link_is_pcie)
        return why_amo_link;
    return caps->pcie_atomics == USHMEMI_YES ? why_amo_pcie : why_amo_trusted;
}

static void write_error(int me, int peer, const struct ushmemi_pair_caps *caps,
                        const struct ushmemi_route_plan *plan, char *out, size_t cap)
{
    bool rma_fail = plan->cls[USHMEMI_CLASS_RMA].route == USHMEMI_ROUTE_NONE;
    bool amo_fail = plan->cls[USHMEMI_CLASS_AMO].route == USHMEMI_ROUTE_NONE;
    struct text t = {out, cap, 0};

    const char *classes[USHMEMI_CLASS_COUNT];
    int nclasses = 0;
    for (int c = 0; c < USHMEMI_CLASS_COUNT; c++)
        if (plan->cls[c].route == USHMEMI_ROUTE_NONE)
            classes[nclasses++] = ushmemi_op_class_name((enum ushmemi_op_class)c);

    text_add(&t, "PE %d -> PE %d: ", me, peer);
    text_join(&t, classes, nclasses, "and");
    text_add(&t, " %s no route: ", nclasses == 1 && rma_fail ? "has" : "have");

    /* When RMA fails the heap is not mapped, which is also what stops the
     * atomics, so one local clause covers both. */
    const struct blocker_text *local =
        &blocker_texts[rma_fail ? map_blocker(caps) : atomic_blocker(caps)];
    text_add(&t, "%s, and the fabric offers ", local->clause);

    const char *missing[2];
    const char *needs[2];
    int nmissing = 0;
    bool hmem_short = caps->heap_is_device && !caps->fabric_hmem;
    if (rma_fail) {
        missing[nmissing] = !caps->fabric_rma ? "no FI_RMA" : "no RMA on device memory";
        needs[nmissing++] = hmem_short ? "GPU RMA" : "FI_RMA";
    }
    if (amo_fail) {
        missing[nmissing] = !caps->fabric_atomics ? "no FI_ATOMIC" : "no FI_ATOMIC on device memory";
        needs[nmissing++] = hmem_short ? "GPU atomics" : "FI_ATOMIC";
    }
    text_join(&t, missing, nmissing, "and");
    /* The provider's own account: which provider, and where others are listed. */
    if (amo_fail && !caps->fabric_atomics && caps->fabric_atomics_why != NULL)
        text_add(&t, " (%s)", caps->fabric_atomics_why);

    const char *remedies[5];
    int nremedies = 0;
    for (int i = 0; i < 2; i++)
        if (local->remedy[i] != NULL)
            remedies[nremedies++] = local->remedy[i];
    char fabric_remedy[64];
    struct text f = {fabric_remedy, sizeof(fabric_remedy), 0};
    text_add(&f, "use a fabric with ");
    text_join(&f, needs, nmissing, "and");
    remedies[nremedies++] = fabric_remedy;
    /* Staging is offered only when it would give every failing class a road. */
    bool staging_fixes = (!rma_fail || caps->fabric_rma) && (!amo_fail || caps->fabric_atomics);
    if (staging_fixes && !caps->staging_allowed)
        remedies[nremedies++] = "set USHMEM_FABRIC_STAGING=1";
    text_add(&t, "; ");
    text_join(&t, remedies, nremedies, "or");
}

void ushmemi_route_decide(int me, int peer, const struct ushmemi_pair_caps *caps,
                          struct ushmemi_route_plan *plan_p)
{
    struct ushmemi_route_choice *cls = plan_p->cls;
    plan_p->error[0] = '\0';
    plan_p->warning[0] = '\0';

    if (me == peer) {
        for (int c = 0; c < USHMEMI_CLASS_COUNT; c++)
            cls[c] = (struct ushmemi_route_choice){USHMEMI_ROUTE_SELF, why_self};
        return;
    }

    enum blocker rma_block = map_blocker(caps);
    if (rma_block == BLOCK_NONE)
        cls[USHMEMI_CLASS_RMA] = (struct ushmemi_route_choice){
            USHMEMI_ROUTE_DIRECT, caps->same_device ? why_one_device : why_rma_direct};
    else
        cls[USHMEMI_CLASS_RMA] = (struct ushmemi_route_choice){
            fabric_route(caps->fabric_rma, caps), blocker_texts[rma_block].why};

    enum blocker amo_block = atomic_blocker(caps);
    if (amo_block == BLOCK_NONE)
        cls[USHMEMI_CLASS_AMO] =
            (struct ushmemi_route_choice){USHMEMI_ROUTE_DIRECT, amo_direct_why(caps)};
    else
        cls[USHMEMI_CLASS_AMO] = (struct ushmemi_route_choice){
            fabric_route(caps->fabric_atomics, caps), blocker_texts[amo_block].why};

    cls[USHMEMI_CLASS_SIGNAL] = cls[USHMEMI_CLASS_AMO];
    /* Waiting on the host needs the host sync segments, mapped with the heaps. */
    if (caps->same_device && rma_block == BLOCK_NONE)
        cls[USHMEMI_CLASS_SYNC] =
            (struct ushmemi_route_choice){USHMEMI_ROUTE_HOST_SYNC, why_host_sync};
    else
        cls[USHMEMI_CLASS_SYNC] = cls[USHMEMI_CLASS_AMO];

    /* The probe's own words say why: unreadable config space, or a device
     * that sysfs does not show. */
    const char *probe = caps->pcie_why != NULL ? caps->pcie_why : "";
    bool pcie_unknown = !caps->same_device && caps->link_is_pcie && caps->p2p_atomics &&
                        caps->pcie_atomics == USHMEMI_UNKNOWN && rma_block == BLOCK_NONE;
    if (pcie_unknown && amo_block == BLOCK_NONE)
        snprintf(plan_p->warning, sizeof(plan_p->warning),
                 "PE %d -> PE %d: could not verify AtomicOps on the PCIe path%s%s%s; GPU atomics "
                 "are used because USHMEM_STRICT=0, and they are not atomic if the path lacks "
                 "AtomicOps",
                 me, peer, probe[0] ? " (" : "", probe, probe[0] ? ")" : "");
    else if (pcie_unknown && cls[USHMEMI_CLASS_AMO].route != USHMEMI_ROUTE_NONE)
        snprintf(plan_p->warning, sizeof(plan_p->warning),
                 "PE %d -> PE %d: could not verify AtomicOps on the PCIe path%s%s%s, so atomics go "
                 "through the proxy; set USHMEM_STRICT=0 to use GPU atomics if the path is known "
                 "to support them",
                 me, peer, probe[0] ? " (" : "", probe, probe[0] ? ")" : "");

    for (int c = 0; c < USHMEMI_CLASS_COUNT; c++) {
        if (cls[c].route == USHMEMI_ROUTE_NONE) {
            write_error(me, peer, caps, plan_p, plan_p->error, sizeof(plan_p->error));
            break;
        }
    }
}

/* USHMEM_SIM_CAPS */

struct sim_key {
    const char *name;
    size_t offset;
    bool tristate; /* enum ushmemi_tristate rather than bool */
};

#define SIM_BOOL(field) {#field, offsetof(struct ushmemi_pair_caps, field), false}
static const struct sim_key sim_keys[] = {
    SIM_BOOL(same_node),
    SIM_BOOL(same_device),
    SIM_BOOL(p2p_access),
    SIM_BOOL(p2p_atomics),
    {"pcie_atomics", offsetof(struct ushmemi_pair_caps, pcie_atomics), true},
    SIM_BOOL(link_is_pcie),
    SIM_BOOL(fabric_rma),
    SIM_BOOL(fabric_atomics),
    SIM_BOOL(fabric_hmem),
    SIM_BOOL(heap_is_device),
    SIM_BOOL(ipc_enabled),
    SIM_BOOL(staging_allowed),
    SIM_BOOL(strict),
};
#undef SIM_BOOL

static bool span_is(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && strncmp(s, word, len) == 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Parses one "key=value" item (already trimmed) into caps. */
static ushmem_status_t apply_item(const char *item, size_t len, struct ushmemi_pair_caps *caps)
{
    const char *eq = memchr(item, '=', len);
    if (eq == NULL) {
        ushmemi_error("USHMEM_SIM_CAPS: item '%.*s' is not key=value", (int)len, item);
        return USHMEM_ERR_INVALID_VALUE;
    }
    size_t klen = (size_t)(eq - item);
    const char *value = eq + 1;
    size_t vlen = len - klen - 1;

    const struct sim_key *key = NULL;
    for (size_t i = 0; i < sizeof(sim_keys) / sizeof(sim_keys[0]); i++)
        if (span_is(item, klen, sim_keys[i].name))
            key = &sim_keys[i];
    if (key == NULL) {
        ushmemi_error("USHMEM_SIM_CAPS: item '%.*s' has an unknown key; known keys: same_node, "
                      "same_device, p2p_access, p2p_atomics, pcie_atomics, link_is_pcie, "
                      "fabric_rma, fabric_atomics, fabric_hmem, heap_is_device, ipc_enabled, "
                      "staging_allowed, strict",
                      (int)len, item);
        return USHMEM_ERR_INVALID_VALUE;
    }

    enum ushmemi_tristate v;
    if (span_is(value, vlen, "yes") || span_is(value, vlen, "1"))
        v = USHMEMI_YES;
    else if (span_is(value, vlen, "no") || span_is(value, vlen, "0"))
        v = USHMEMI_NO;
    else if (key->tristate && span_is(value, vlen, "unknown"))
        v = USHMEMI_UNKNOWN;
    else {
        ushmemi_error("USHMEM_SIM_CAPS: item '%.*s' has a bad value; use yes, no, 1 or 0%s",
                      (int)len, item, key->tristate ? " or unknown" : "");
        return USHMEM_ERR_INVALID_VALUE;
    }

    char *field = (char *)caps + key->offset;
    if (key->tristate)
        *(enum ushmemi_tristate *)(void *)field = v;
    else
        *(bool *)(void *)field = v == USHMEMI_YES;
    return USHMEM_OK;
}

ushmem_status_t ushmemi_sim_caps_apply(const char *spec, struct ushmemi_pair_caps *caps)
{
    if (spec == NULL)
        return USHMEM_OK;
    /* Work on a copy so that a bad item late in the spec leaves caps as probed. */
    struct ushmemi_pair_caps next = *caps;
    const char *p = spec;
    while (is_blank(*p))
        p++;
    if (*p == '\0')
        return USHMEM_OK;

    for (;;) {
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        if (a == b) {
            ushmemi_error("USHMEM_SIM_CAPS='%s' has an empty item", spec);
            return USHMEM_ERR_INVALID_VALUE;
        }
        ushmem_status_t status = apply_item(a, (size_t)(b - a), &next);
        if (status != USHMEM_OK)
            return status;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *caps = next;
    return USHMEM_OK;
}
