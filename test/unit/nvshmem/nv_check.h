/* Checks for the NVSHMEM-style test programs: a failed check names the PE
 * (the program's `me`) and the values, then ends the whole job. */
#ifndef NV_CHECK_H
#define NV_CHECK_H

#include <stdio.h>

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "PE %d: ", me);                                                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            nvshmem_global_exit(1);                                                        \
        }                                                                                  \
    } while (0)

/* A CUDA runtime call that must succeed. */
#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

#endif
