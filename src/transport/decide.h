/* The per-pair route decision: from the probed capabilities of one (me, peer)
 * pair, which road each operation class takes, or a one-sentence error when
 * a class has none. A pure function, so that the policy can be tested as a
 * table and replayed with USHMEM_SIM_CAPS on machines that lack the hardware.
 * The policy itself is written at the top of decide.c. */
#ifndef USHMEMI_DECIDE_H
#define USHMEMI_DECIDE_H

#include <stdbool.h>

#include "../common/status.h"
#include "../device/device.h"
#include "../device/pcie.h"
#include "transport.h"

/* Facts about one (me, peer) pair, gathered by the probes. */
struct ushmemi_pair_caps {
    bool same_node;
    bool same_device;     /* both PEs on one GPU (implies same_node) */
    bool p2p_access;      /* device backend: this GPU can map the peer's memory */
    bool p2p_atomics;     /* device backend: native atomics on the peer's memory */
    enum ushmemi_tristate pcie_atomics; /* AtomicOps along the PCIe path; only read when link_is_pcie */
    bool link_is_pcie;
    enum ushmemi_link_kind link; /* as the backend named it; only link_is_pcie decides */
    const char *pcie_why; /* the PCIe probe's finding (device and bit, or why unknown), or NULL */
    bool fabric_rma;      /* libfabric: FI_RMA */
    bool fabric_atomics;  /* libfabric: FI_ATOMIC */
    const char *fabric_atomics_why; /* the transport's reason when !fabric_atomics, or NULL */
    bool fabric_hmem;     /* libfabric: a device buffer of this heap registered (FI_HMEM) */
    bool heap_is_device;  /* the symmetric heap is device memory */
    bool ipc_enabled;     /* USHMEM_IPC */
    bool staging_allowed; /* USHMEM_FABRIC_STAGING=1 */
    bool strict;          /* USHMEM_STRICT (default 1): unknown is not yes */
};

struct ushmemi_route_choice {
    enum ushmemi_route route;
    const char *why; /* static text */
};

struct ushmemi_route_plan {
    struct ushmemi_route_choice cls[USHMEMI_CLASS_COUNT];
    char error[768];   /* one sentence; empty when every class has a route */
    char warning[768]; /* one sentence; empty when nothing deserves a warning */
};

/* Fills plan_p for the pair (me, peer). Never fails and never logs: the
 * caller decides whether plan_p->error ends init and prints it once. */
void ushmemi_route_decide(int me, int peer, const struct ushmemi_pair_caps *caps,
                          struct ushmemi_route_plan *plan_p);

/* Applies a USHMEM_SIM_CAPS spec over probed caps:
 * "key=value,key=value", keys named as the fields of ushmemi_pair_caps,
 * values yes/no/1/0 (and unknown for pcie_atomics). NULL or "" changes
 * nothing. On a bad item logs it, returns USHMEM_ERR_INVALID_VALUE and
 * leaves caps untouched. */
ushmem_status_t ushmemi_sim_caps_apply(const char *spec, struct ushmemi_pair_caps *caps);

#endif
