/* The route table, built at shmem_init: for every peer and operation class,
 * which road a call takes (see road.c), decided per pair from probed facts
 * by ushmemi_route_decide (src/transport/decide.c, where the policy is
 * written down).
 *
 * Steps, all collective:
 *   1. every PE publishes a card: device identity (backend, UUID, PCI
 *      address, node) and whether its heap is device memory;
 *   2. each PE gathers the facts of each pair (device backend's p2p probe,
 *      PCIe AtomicOps along the path, USHMEM_* settings, USHMEM_SIM_CAPS)
 *      and asks the policy, assuming a fabric, whether any pair needs one;
 *   3. if any PE needs it, every PE opens the fabric (ofi), which is
 *      collective; its answers (RMA, atomics, device memory) complete the
 *      facts and the policy decides for real;
 *   4. atomics on one word must all be of one kind (CPU/GPU atomics through
 *      a mapping, or NIC atomics), or they are not atomic with respect to
 *      each other: when any PE reaches PE X's atomics over the fabric, every
 *      PE, X included, does so for X (atomics, signals and synchronisation);
 *   5. a class without a route to some peer fails init on every PE that has
 *      such a pair, each with one sentence per pair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../device/pcie.h"
#include "../transport/decide.h"
#include "../transport/ofi.h"
#include "internal.h"
#include "routes.h"

struct route_card {
    struct ushmemi_device_id id;
    uint8_t heap_is_device;
    uint8_t pad[7];
};

/* Facts of the pair (me, pe) that do not depend on the fabric. */
static ushmem_status_t pair_facts(const struct route_card *mine, const struct route_card *peer,
                                  struct ushmemi_pair_caps *caps_p)
{
    struct ushmemi_pair_caps caps;
    memset(&caps, 0, sizeof(caps));
    caps.same_node = mine->id.node_hash == peer->id.node_hash;
    caps.heap_is_device = ushmemi_g.heap_is_device;
    caps.ipc_enabled = ushmemi_settings.ipc;
    caps.staging_allowed = ushmemi_settings.fabric_staging;
    caps.strict = ushmemi_settings.strict;
    caps.pcie_atomics = USHMEMI_UNKNOWN;
    if (caps.same_node) {
        struct ushmemi_p2p_caps p2p;
        ushmem_status_t status = ushmemi_g.dev_ops->p2p_probe(ushmemi_g.dev, &peer->id, &p2p);
        if (status != USHMEM_OK) {
            ushmemi_error("shmem_init: the %s backend's peer probe failed: %s",
                          ushmemi_g.dev_ops->name, ushmemi_status_string(status));
            return status;
        }
        caps.same_device = p2p.same_device;
        caps.p2p_access = p2p.access;
        caps.p2p_atomics = p2p.native_atomics;
        caps.link_is_pcie = p2p.link == USHMEMI_LINK_PCIE;
        caps.link = p2p.link;
    }
    *caps_p = caps;
    return USHMEM_OK;
}

/* AtomicOps along the PCIe path between the two devices, read from sysfs
 * (USHMEM_SYSFS_ROOT), when the (possibly overridden) link is PCIe and an
 * override does not fix the answer itself. */
static void pcie_facts(const struct route_card *mine, const struct route_card *peer,
                       struct ushmemi_pair_caps *caps, char *why, size_t why_size)
{
    const char *sim = ushmemi_settings.sim_caps;
    if (!caps->link_is_pcie || mine->id.pci_bdf[0] == '\0' || peer->id.pci_bdf[0] == '\0' ||
        (sim != NULL && strstr(sim, "pcie_atomics") != NULL))
        return;
    struct ushmemi_pcie_atomics pcie;
    if (ushmemi_pcie_atomics_path(ushmemi_settings.sysfs_root, mine->id.pci_bdf,
                                  peer->id.pci_bdf, &pcie) != USHMEM_OK)
        return;
    caps->pcie_atomics = pcie.ok;
    snprintf(why, why_size, "%s", pcie.why);
    caps->pcie_why = why;
    if (pcie.ok != USHMEMI_YES)
        ushmemi_info("PCIe AtomicOps %s -> %s: %s", mine->id.pci_bdf, peer->id.pci_bdf, pcie.why);
    else
        ushmemi_debug("PCIe AtomicOps %s -> %s: %s", mine->id.pci_bdf, peer->id.pci_bdf,
                      pcie.why);
}

static bool is_fabric(enum ushmemi_route route)
{
    return route == USHMEMI_ROUTE_PROXY_OFI || route == USHMEMI_ROUTE_STAGED;
}

static ushmem_status_t open_fabric(const struct ushmemi_oob *oob)
{
    struct ushmemi_transport_params params = {
        .oob = oob,
        .dev_ops = ushmemi_g.dev_ops,
        .dev = ushmemi_g.dev,
        .heap = ushmemi_g.heap_base,
        .heap_size = ushmemi_g.heap_size,
        /* With staging, the fabric is only handed host memory: this PE's
         * own buffers are bounced by the copy engine, and peers' operations
         * on a device heap arrive as messages that this PE lands with its
         * copy engine and device atomic, so no provider and no CPU ever
         * touches the heap. */
        .heap_is_device = ushmemi_g.heap_is_device && !ushmemi_settings.fabric_staging,
        .heap_landing = ushmemi_g.heap_is_device && ushmemi_settings.fabric_staging,
        .static_base = ushmemi_g.static_base,
        .static_size = ushmemi_g.static_size,
        .static_skip = ushmemi_g.static_skip,
        .fabric_iface = ushmemi_settings.fabric_iface,
        .idle_spin = ushmemi_g.idle_spin_fabric,
        .cores_shared = ushmemi_g.cores_shared,
    };
    ushmem_status_t status = ushmemi_transport_ofi_ops.init(&params, &ushmemi_g.fabric);
    if (status != USHMEM_OK)
        return status;
    ushmemi_g.fabric_ops = &ushmemi_transport_ofi_ops;
    return USHMEM_OK;
}

/* Step 4: every PE reaches one PE's atomic words the same way. */
static ushmem_status_t unify_atomics(const struct ushmemi_oob *oob, struct ushmemi_route_plan *plans)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    uint8_t *mine = calloc((size_t)n, 1);
    uint8_t *all = calloc((size_t)n * (size_t)n, 1);
    ushmem_status_t status = USHMEM_ERR_NO_MEMORY;
    if (mine == NULL || all == NULL) {
        ushmemi_error("shmem_init: out of memory for the %d x %d atomics table", n, n);
        goto free_tables;
    }
    for (int pe = 0; pe < n; pe++)
        mine[pe] = is_fabric(plans[pe].cls[USHMEMI_CLASS_AMO].route);
    status = oob->allgather(oob->ctx, mine, all, (size_t)n);
    if (status != USHMEM_OK) {
        ushmemi_error("shmem_init: exchange of atomic routes failed: %s",
                      ushmemi_status_string(status));
        goto free_tables;
    }
    for (int target = 0; target < n; target++) {
        int via = -1;
        for (int src = 0; src < n && via < 0; src++)
            if (all[(size_t)src * (size_t)n + (size_t)target])
                via = src;
        if (via < 0 || is_fabric(plans[target].cls[USHMEMI_CLASS_AMO].route))
            continue;
        const char *why_not = "";
        bool can = ushmemi_g.fabric != NULL &&
                   ushmemi_g.fabric_ops->can_atomic(ushmemi_g.fabric, target, &why_not);
        if (!can) {
            ushmemi_error("shmem_init: PE %d -> PE %d: atomics have no route: PE %d reaches PE "
                          "%d's atomics through the fabric, so every PE must (GPU and NIC "
                          "atomics on one word are not atomic together), and this PE cannot: %s",
                          me, target, via, target,
                          ushmemi_g.fabric == NULL ? "no fabric is open" : why_not);
            status = USHMEM_ERR_NO_ROUTE;
            continue;
        }
        static const char why_unified[] =
            "fabric atomics: another PE reaches this PE's atomics only through the fabric";
        for (int c = USHMEMI_CLASS_AMO; c < USHMEMI_CLASS_COUNT; c++) {
            if (c == USHMEMI_CLASS_SYNC &&
                plans[target].cls[c].route == USHMEMI_ROUTE_HOST_SYNC)
                continue;
            plans[target].cls[c].route = USHMEMI_ROUTE_PROXY_OFI;
            plans[target].cls[c].why = why_unified;
        }
    }
free_tables:
    free(all);
    free(mine);
    return status;
}

ushmem_status_t ushmemi_routes_build(const struct ushmemi_oob *oob)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    ushmem_status_t status = USHMEM_ERR_NO_MEMORY;
    struct route_card mine;
    memset(&mine, 0, sizeof(mine));
    struct route_card *cards = calloc((size_t)n, sizeof(*cards));
    struct ushmemi_pair_caps *caps = calloc((size_t)n, sizeof(*caps));
    struct ushmemi_route_plan *plans = calloc((size_t)n, sizeof(*plans));
    uint8_t *need = calloc((size_t)n, 1);
    char (*pcie_why)[256] = calloc((size_t)n, sizeof(*pcie_why));
    if (cards == NULL || caps == NULL || plans == NULL || need == NULL || pcie_why == NULL) {
        ushmemi_error("shmem_init: out of memory for the route table of %d PEs", n);
        goto free_tables;
    }

    status = ushmemi_g.dev_ops->identity(ushmemi_g.dev, &mine.id);
    if (status != USHMEM_OK)
        goto free_tables;
    mine.heap_is_device = ushmemi_g.heap_is_device;
    status = oob->allgather(oob->ctx, &mine, cards, sizeof(mine));
    if (status != USHMEM_OK) {
        ushmemi_error("shmem_init: exchange of device identities failed: %s",
                      ushmemi_status_string(status));
        goto free_tables;
    }

    /* Step 2: facts, and whether a fabric would be used. */
    uint8_t need_fabric = 0;
    /* The first pair and class that would take the fabric, for messages. */
    int fabric_pe = -1;
    enum ushmemi_op_class fabric_cls = USHMEMI_CLASS_RMA;
    for (int pe = 0; pe < n && status == USHMEM_OK; pe++) {
        status = pair_facts(&cards[me], &cards[pe], &caps[pe]);
        if (status == USHMEM_OK)
            status = ushmemi_sim_caps_apply(ushmemi_settings.sim_caps, &caps[pe]);
        if (status == USHMEM_OK && pe != me)
            pcie_facts(&cards[me], &cards[pe], &caps[pe], pcie_why[pe], sizeof(pcie_why[pe]));
        if (status != USHMEM_OK || pe == me)
            continue;
        struct ushmemi_pair_caps assumed = caps[pe];
        assumed.fabric_rma = assumed.fabric_atomics = assumed.fabric_hmem = true;
        ushmemi_route_decide(me, pe, &assumed, &plans[pe]);
        for (int c = 0; c < USHMEMI_CLASS_COUNT; c++) {
            if (!is_fabric(plans[pe].cls[c].route))
                continue;
            need_fabric = 1;
            if (fabric_pe < 0) {
                fabric_pe = pe;
                fabric_cls = (enum ushmemi_op_class)c;
            }
        }
    }
    /* Joined even after a local failure, so that no PE waits for this one. */
    ushmem_status_t ex = oob->allgather(oob->ctx, &need_fabric, need, 1);
    if (status != USHMEM_OK)
        goto free_tables;
    if (ex != USHMEM_OK) {
        status = ex;
        goto free_tables;
    }
    need_fabric = 0;
    for (int pe = 0; pe < n; pe++)
        need_fabric |= need[pe];

    /* Step 3: the fabric, then the real decision. */
    if (need_fabric) {
        status = open_fabric(oob);
        if (status == USHMEM_ERR_UNSUPPORTED && ushmemi_g.heap_is_device &&
            !ushmemi_settings.fabric_staging) {
            char pair[320] = " (another PE reaches this one over the fabric)";
            if (fabric_pe >= 0)
                snprintf(pair, sizeof(pair), " (PE %d -> PE %d: %s over the fabric, because %s)",
                         me, fabric_pe, ushmemi_op_class_name(fabric_cls),
                         plans[fabric_pe].cls[fabric_cls].why);
            ushmemi_error("shmem_init: PE %d: a peer is reachable only through the fabric%s, the "
                          "symmetric heap is %s device memory, and the fabric cannot take device "
                          "memory (no FI_HMEM provider, or registering the device heap failed: "
                          "see above); set USHMEM_FABRIC_STAGING=1 to carry RMA and atomics "
                          "through host buffers and the copy engine, or use a libfabric with "
                          "GPU-RMA for this device",
                          me, pair, ushmemi_g.dev_ops->name);
        } else if (status != USHMEM_OK) {
            ushmemi_error("shmem_init: PE %d: a peer is reachable only through the fabric "
                          "(USHMEM_IPC=0, another node, or no GPU peer access), and the fabric "
                          "could not be opened (see above)", me);
        }
        if (status != USHMEM_OK) {
            /* Every PE fails here together (the fabric's setup is collective);
             * meeting once more lets each one print before the job ends. */
            oob->barrier(oob->ctx);
            goto free_tables;
        }
    }
    for (int pe = 0; pe < n; pe++) {
        const char *why_not;
        caps[pe].fabric_rma = ushmemi_g.fabric != NULL;
        caps[pe].fabric_atomics = ushmemi_g.fabric != NULL &&
                                  ushmemi_g.fabric_ops->can_atomic(ushmemi_g.fabric, pe, &why_not);
        caps[pe].fabric_atomics_why =
            ushmemi_g.fabric != NULL && !caps[pe].fabric_atomics ? why_not : NULL;
        /* The heap registered as device memory, when it is device memory. */
        caps[pe].fabric_hmem = caps[pe].fabric_rma && ushmemi_g.heap_is_device &&
                               !ushmemi_settings.fabric_staging;
    }
    for (int pe = 0; pe < n; pe++) {
        /* A second pass applies the override to the fabric facts too. */
        ushmemi_sim_caps_apply(ushmemi_settings.sim_caps, &caps[pe]);
        ushmemi_route_decide(me, pe, &caps[pe], &plans[pe]);
    }

    /* Step 5 first for this PE's own pairs, then step 4 across the job. */
    int failures = 0;
    for (int pe = 0; pe < n; pe++) {
        if (plans[pe].warning[0] != '\0')
            ushmemi_warn("%s", plans[pe].warning);
        if (plans[pe].error[0] != '\0') {
            ushmemi_error("shmem_init: %s", plans[pe].error);
            /* How the PCIe probe decided: the device and bit, or why unknown. */
            if (pcie_why[pe][0] != '\0')
                ushmemi_error("shmem_init: PE %d -> PE %d: PCIe probe: %s", me, pe, pcie_why[pe]);
            failures++;
        }
    }
    status = unify_atomics(oob, plans);
    if (failures > 0 && status == USHMEM_OK)
        status = USHMEM_ERR_NO_ROUTE;
    /* Every PE learns that init fails, not only those with a bad pair. */
    uint8_t bad = status != USHMEM_OK;
    ex = oob->allgather(oob->ctx, &bad, need, 1);
    if (status != USHMEM_OK)
        goto free_tables;
    if (ex != USHMEM_OK) {
        status = ex;
        goto free_tables;
    }
    for (int pe = 0; pe < n; pe++) {
        if (need[pe]) {
            ushmemi_error("shmem_init: PE %d found an operation class without a route (its "
                          "message says which pair and why)", pe);
            status = USHMEM_ERR_NO_ROUTE;
            goto free_tables;
        }
    }

    for (int pe = 0; pe < n; pe++) {
        for (int c = 0; c < USHMEMI_CLASS_COUNT; c++) {
            ushmemi_g.peers[pe].route[c] = plans[pe].cls[c].route;
            ushmemi_g.peers[pe].why[c] = plans[pe].cls[c].why;
        }
        ushmemi_debug("routes to PE %d: RMA %s, atomics %s, signals %s, synchronisation %s", pe,
                      ushmemi_route_name(plans[pe].cls[USHMEMI_CLASS_RMA].route),
                      ushmemi_route_name(plans[pe].cls[USHMEMI_CLASS_AMO].route),
                      ushmemi_route_name(plans[pe].cls[USHMEMI_CLASS_SIGNAL].route),
                      ushmemi_route_name(plans[pe].cls[USHMEMI_CLASS_SYNC].route));
    }
    ushmemi_g.pair_caps = caps;
    caps = NULL;
    status = USHMEM_OK;

free_tables:
    free(pcie_why);
    free(need);
    free(plans);
    free(caps);
    free(cards);
    return status;
}

void ushmemi_routes_close(void)
{
    if (ushmemi_g.fabric != NULL) {
        ushmemi_g.fabric_ops->fini(ushmemi_g.fabric);
        ushmemi_g.fabric = NULL;
        ushmemi_g.fabric_ops = NULL;
    }
    free(ushmemi_g.pair_caps);
    ushmemi_g.pair_caps = NULL;
}
