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
