/* The route table as users see it: shmemx_route and friends for programs,
 * and the text that `ushmem_info --topology` prints for each PE (the
 * address its fabric endpoint listens on, the facts each pair was decided
 * on, then each class's route and why). */
#include <shmemx.h>
#include <stdio.h>

#include "../transport/decide.h"
#include "../transport/ofi.h"
#include "internal.h"
#include "topology.h"

_Static_assert((int)SHMEMX_ROUTE_NONE == (int)USHMEMI_ROUTE_NONE &&
                   (int)SHMEMX_ROUTE_SELF == (int)USHMEMI_ROUTE_SELF &&
                   (int)SHMEMX_ROUTE_DIRECT == (int)USHMEMI_ROUTE_DIRECT &&
                   (int)SHMEMX_ROUTE_PROXY == (int)USHMEMI_ROUTE_PROXY_OFI &&
                   (int)SHMEMX_ROUTE_STAGED == (int)USHMEMI_ROUTE_STAGED &&
                   (int)SHMEMX_ROUTE_HOST_SYNC == (int)USHMEMI_ROUTE_HOST_SYNC,
               "shmemx route numbers are the internal ones");
_Static_assert((int)SHMEMX_CLASS_RMA == (int)USHMEMI_CLASS_RMA &&
                   (int)SHMEMX_CLASS_AMO == (int)USHMEMI_CLASS_AMO &&
                   (int)SHMEMX_CLASS_SIGNAL == (int)USHMEMI_CLASS_SIGNAL &&
                   (int)SHMEMX_CLASS_SYNC == (int)USHMEMI_CLASS_SYNC,
               "shmemx class numbers are the internal ones");

static const struct ushmemi_peer *peer_of(const char *call, int pe, int op_class)
{
    ushmemi_check_init(call);
    if (pe < 0 || pe >= ushmemi_g.n_pes || op_class < 0 || op_class >= USHMEMI_CLASS_COUNT)
        return NULL;
    return &ushmemi_g.peers[pe];
}

USHMEMI_API int shmemx_route(int pe, int op_class)
{
    const struct ushmemi_peer *peer = peer_of("shmemx_route", pe, op_class);
    return peer != NULL ? (int)peer->route[op_class] : -1;
}

USHMEMI_API const char *shmemx_route_why(int pe, int op_class)
{
    const struct ushmemi_peer *peer = peer_of("shmemx_route_why", pe, op_class);
    if (peer == NULL)
        return NULL;
    return peer->why[op_class] != NULL ? peer->why[op_class] : "";
}

USHMEMI_API const char *shmemx_route_name(int route)
{
    if (route < USHMEMI_ROUTE_NONE || route > USHMEMI_ROUTE_HOST_SYNC)
        return NULL;
    return ushmemi_route_name((enum ushmemi_route)route);
}

static const char *yes_no(bool b) { return b ? "yes" : "no"; }

static const char *tristate(enum ushmemi_tristate t)
{
    return t == USHMEMI_YES ? "yes" : t == USHMEMI_NO ? "no" : "unknown";
}

void ushmemi_topology_write(FILE *out)
{
    int me = ushmemi_g.my_pe;
    /* Landing (USHMEM_FABRIC_STAGING=1 on a device heap): see ofi_am.c. */
    bool landing = ushmemi_g.fabric != NULL && ushmemi_g.heap_is_device &&
                   ushmemi_settings.fabric_staging;
    char node[96] = "";
    if (ushmemi_settings.sim_nodes > 1)
        snprintf(node, sizeof(node), " (simulated node %d of %ld, local rank %d of %d)",
                 ushmemi_g.node, ushmemi_settings.sim_nodes, ushmemi_g.local_rank,
                 ushmemi_g.local_size);
    /* A device heap the fabric reaches registered it as device memory. */
    bool hmem = ushmemi_g.fabric != NULL && ushmemi_g.heap_is_device &&
                !ushmemi_settings.fabric_staging;
    fprintf(out, "PE %d%s: backend %s, heap in %s memory, fabric %s%s\n", me, node,
            ushmemi_g.dev_ops->name, ushmemi_g.heap_is_device ? "device" : "host",
            ushmemi_g.fabric != NULL ? ushmemi_g.fabric_ops->name : "not opened",
            landing ? " (peers' operations on the heap land through messages)"
            : hmem  ? " (the heap registered with it as device memory, FI_HMEM)"
                    : "");
    fprintf(out, "  heap: start %zu bytes, maximum %zu bytes (%s), now %zu bytes\n",
            ushmemi_g.heap_start, ushmemi_g.heap_reserve, ushmemi_g.heap_max_from,
            ushmemi_g.heap_size);
    fprintf(out, "  proxy %s; helper threads when idle: %s\n",
            ushmemi_g.proxy != NULL ? "running" : "not started", ushmemi_g.idle_why);
    fprintf(out, "  cores shared with other PEs: %s\n", ushmemi_g.cores_why);
    if (ushmemi_g.fabric != NULL && ushmemi_g.fabric_ops == &ushmemi_transport_ofi_ops) {
        char where[512];
        ushmemi_ofi_endpoint_text(ushmemi_g.fabric, where, sizeof(where));
        fprintf(out, "  fabric endpoint listens on %s\n", where);
        ushmemi_ofi_registration_text(ushmemi_g.fabric, where, sizeof(where));
        fprintf(out, "  fabric registrations: %s\n", where);
    }
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        const struct ushmemi_peer *peer = &ushmemi_g.peers[pe];
        if (ushmemi_g.pair_caps != NULL) {
            const struct ushmemi_pair_caps *c = &ushmemi_g.pair_caps[pe];
            fprintf(out,
                    "  PE %d -> PE %d: same_node=%s same_device=%s link=%s p2p_access=%s "
                    "p2p_atomics=%s link_is_pcie=%s pcie_atomics=%s fabric_rma=%s "
                    "fabric_atomics=%s fabric_hmem=%s heap_is_device=%s ipc_enabled=%s "
                    "staging_allowed=%s strict=%s; heap %s\n",
                    me, pe, yes_no(c->same_node), yes_no(c->same_device),
                    ushmemi_link_name(c->link), yes_no(c->p2p_access), yes_no(c->p2p_atomics), yes_no(c->link_is_pcie),
                    c->link_is_pcie ? tristate(c->pcie_atomics) : "n/a", yes_no(c->fabric_rma),
                    yes_no(c->fabric_atomics), yes_no(c->fabric_hmem),
                    yes_no(c->heap_is_device), yes_no(c->ipc_enabled),
                    yes_no(c->staging_allowed), yes_no(c->strict),
                    peer->map_why != NULL ? peer->map_why : "");
        }
        for (int c = 0; c < USHMEMI_CLASS_COUNT; c++)
            fprintf(out, "    %-16s %-10s %s\n", ushmemi_op_class_name((enum ushmemi_op_class)c),
                    ushmemi_route_name(peer->route[c]), peer->why[c] != NULL ? peer->why[c] : "");
    }
}
