/* Helpers for multi-PE tests: a failed check names the PE, the file and line
 * and the values, then ends the whole job with a non-zero code. */
#ifndef MPE_CHECK_H
#define MPE_CHECK_H

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when peer heaps are mapped (shmem_ptr works), 0 under USHMEM_IPC=0,
 * where every peer but this PE is reached over the fabric. */
static inline int mpe_mapped(void)
{
    /* USHMEM_IPC=0, or the cpu backend posing as devices without peer access. */
    const char *ipc = getenv("USHMEM_IPC");
    const char *no_p2p = getenv("USHMEM_CPU_NO_P2P");
    return (ipc == NULL || strcmp(ipc, "0") != 0) && (no_p2p == NULL || strcmp(no_p2p, "1") != 0);
}

/* The simulated node of world PE pe (USHMEM_SIM_NODES: consecutive ranks,
 * node k starting at ceil(k * npes / n)), 0 without the variable. */
static inline int mpe_sim_node(int pe)
{
    const char *text = getenv("USHMEM_SIM_NODES");
    long n = text != NULL ? strtol(text, NULL, 10) : 1;
    return n > 1 ? (int)((long)pe * n / shmem_n_pes()) : 0;
}

/* The PEs of this PE's simulated node: the first and how many. */
static inline void mpe_sim_node_pes(int *first_p, int *count_p)
{
    int me = shmem_my_pe(), npes = shmem_n_pes(), first = me, last = me;
    while (first > 0 && mpe_sim_node(first - 1) == mpe_sim_node(me))
        first--;
    while (last + 1 < npes && mpe_sim_node(last + 1) == mpe_sim_node(me))
        last++;
    *first_p = first;
    *count_p = last - first + 1;
}

/* 1 when PE pe's heap is mapped here (shmem_ptr works): this PE, or a PE of
 * the same (simulated) node with mapping on. */
static inline int mpe_mapped_pe(int pe)
{
    return pe == shmem_my_pe() || (mpe_mapped() && mpe_sim_node(pe) == mpe_sim_node(shmem_my_pe()));
}

/* 1 when some PE is reached over the fabric: mapping off, or several nodes. */
static inline int mpe_fabric_job(void)
{
    return shmem_n_pes() > 1 && (!mpe_mapped() || mpe_sim_node(shmem_n_pes() - 1) != 0);
}

#define MPE_CHECK(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), \
                    __FILE__, __LINE__, #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            fflush(stderr);                                                   \
            shmem_global_exit(1);                                             \
        }                                                                     \
    } while (0)

#endif
