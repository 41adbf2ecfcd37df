/* Driver API entry points looked up through the CUDA runtime, so that a
 * benchmark needs no link against libcuda (proxy_floor, full_gpu_ops). */
#ifndef DRIVER_ENTRIES_CUH
#define DRIVER_ENTRIES_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

struct driver_entry {
    const char *name;
    void **fn;
};

/* Fills each entry's pointer as the driver gives it for CUDA `version`
 * (12000 for 12.0); exits naming `prog` and the first one missing. */
static inline void driver_entries_load(const char *prog, const struct driver_entry *table,
                                       size_t n, int version)
{
    for (size_t i = 0; i < n; i++) {
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        cudaError_t err = cudaGetDriverEntryPointByVersion(table[i].name, table[i].fn, version,
                                                           cudaEnableDefault, &q);
        if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || *table[i].fn == NULL) {
            fprintf(stderr, "%s: the driver has no %s (%s)\n", prog, table[i].name,
                    cudaGetErrorString(err));
            exit(1);
        }
    }
}

#endif
