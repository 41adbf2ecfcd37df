/* shmemx_route reports the road each operation class takes to each PE:
 * mapped peers are direct, the calling PE is self, and with USHMEM_IPC=0
 * every other PE is reached over the fabric, as are this PE's own atomic
 * words once anyone reaches them that way (GPU/CPU and NIC atomics on one
 * word are never mixed). Whatever the route, data moved on it arrives. */
#include <shmemx.h>
#include <string.h>

#include "mpe_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int fabric_job = mpe_fabric_job();
    /* The heap posing as device memory with staging allowed: the fabric is
     * only handed host memory, so every fabric road is the staged one. */
    const char *dev_heap = getenv("USHMEM_CPU_DEVICE_HEAP");
    const char *staging = getenv("USHMEM_FABRIC_STAGING");
    int fabric = dev_heap != NULL && strcmp(dev_heap, "1") == 0 && staging != NULL &&
                         strcmp(staging, "1") == 0
                     ? SHMEMX_ROUTE_STAGED
                     : SHMEMX_ROUTE_PROXY;

    MPE_CHECK(shmemx_route(npes, SHMEMX_CLASS_RMA) == -1, "PE out of range accepted");
    MPE_CHECK(shmemx_route(-1, SHMEMX_CLASS_RMA) == -1, "negative PE accepted");
    MPE_CHECK(shmemx_route(0, 4) == -1 && shmemx_route(0, -1) == -1, "class out of range accepted");
    MPE_CHECK(shmemx_route_why(0, 9) == NULL, "why of a bad class is not NULL");
    MPE_CHECK(shmemx_route_name(99) == NULL, "name of a bad route is not NULL");
    MPE_CHECK(strcmp(shmemx_route_name(SHMEMX_ROUTE_PROXY), "proxy/ofi") == 0, "proxy name");

    for (int pe = 0; pe < npes; pe++) {
        int rma = shmemx_route(pe, SHMEMX_CLASS_RMA);
        int want_rma = pe == me ? SHMEMX_ROUTE_SELF : mpe_mapped_pe(pe) ? SHMEMX_ROUTE_DIRECT
                                                                         : fabric;
        MPE_CHECK(rma == want_rma, "RMA route to PE %d is %s, want %s", pe,
                  shmemx_route_name(rma), shmemx_route_name(want_rma));
        /* Atomics, signals and synchronisation share one road per PE. When
         * some PE reaches another over the fabric (mapping off, or the
         * simulated nodes of USHMEM_SIM_NODES, which each reach the others
         * that way), every PE reaches every PE's atomics over it, itself
         * and its node included: NIC atomics are not atomic with the
         * others. */
        int amo = shmemx_route(pe, SHMEMX_CLASS_AMO);
        int want_amo = !fabric_job ? (pe == me ? SHMEMX_ROUTE_SELF : SHMEMX_ROUTE_DIRECT)
                       : pe == me || mpe_mapped_pe(pe) ? SHMEMX_ROUTE_PROXY /* unified */
                                                       : fabric;
        MPE_CHECK(amo == want_amo, "AMO route to PE %d is %s, want %s", pe,
                  shmemx_route_name(amo), shmemx_route_name(want_amo));
        MPE_CHECK(shmemx_route(pe, SHMEMX_CLASS_SIGNAL) == amo, "signal route differs from AMO");
        MPE_CHECK(shmemx_route(pe, SHMEMX_CLASS_SYNC) == amo, "sync route differs from AMO");
        const char *why = shmemx_route_why(pe, SHMEMX_CLASS_RMA);
        MPE_CHECK(why != NULL && why[0] != '\0', "no reason for the RMA route to PE %d", pe);
    }

    /* Each PE adds to every PE's counter and puts its mark. */
    long *counter = shmem_calloc(1, sizeof(long));
    long *marks = shmem_calloc((size_t)npes, sizeof(long));
    for (int pe = 0; pe < npes; pe++) {
        shmem_long_atomic_add(counter, me + 1, pe);
        shmem_long_p(&marks[me], 1000L * me + pe, pe);
    }
    shmem_barrier_all();
    MPE_CHECK(*counter == (long)npes * (npes + 1) / 2, "counter = %ld", *counter);
    for (int pe = 0; pe < npes; pe++)
        MPE_CHECK(marks[pe] == 1000L * pe + me, "mark from PE %d = %ld", pe, marks[pe]);
    shmem_free(marks);
    shmem_free(counter);
    shmem_finalize();
    return 0;
}
