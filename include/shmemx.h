/* ushmem extensions to OpenSHMEM. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The road an operation class takes to a PE, decided at shmem_init (see
 * `ushmem_info --topology` and the README's "Routes" section). */
enum shmemx_route_kind {
    SHMEMX_ROUTE_NONE = 0,  /* unreachable (shmem_init would have failed) */
    SHMEMX_ROUTE_SELF,      /* the calling PE */
    SHMEMX_ROUTE_DIRECT,    /* the PE's memory is mapped: loads, stores, atomics */
    SHMEMX_ROUTE_PROXY,     /* the fabric (libfabric); device code goes through the proxy */
    SHMEMX_ROUTE_STAGED,    /* the fabric, through host bounce buffers */
    SHMEMX_ROUTE_HOST_SYNC, /* synchronisation only: waits on the host (two PEs, one device) */
};

enum shmemx_op_class {
    SHMEMX_CLASS_RMA = 0, /* puts and gets */
    SHMEMX_CLASS_AMO,     /* atomics */
    SHMEMX_CLASS_SIGNAL,  /* put-with-signal's signal */
    SHMEMX_CLASS_SYNC,    /* barriers and collectives' synchronisation */
};

/* The route of op_class to pe (an shmemx_route_kind), or -1 for a PE or
 * class out of range. */
int shmemx_route(int pe, int op_class);
/* Why that route was chosen, as one phrase; NULL for bad arguments. */
const char *shmemx_route_why(int pe, int op_class);
/* "none", "self", "direct", "proxy/ofi", "staged", "host-sync"; NULL when
 * route is not an shmemx_route_kind. */
const char *shmemx_route_name(int route);

#ifdef __cplusplus
}
#endif

#endif
