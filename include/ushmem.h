/* Intel SHMEM's program shape under ushmem: a SYCL (or C++) program written
 * for Intel SHMEM's <ishmem.h> builds against this header after renaming
 * ishmem_ to ushmem_, ishmemx_ to ushmemx_ and ishmem_init to shmem_init
 * (docs/guide/sycl.md). It brings the OpenSHMEM host API (<shmem.h>),
 * the device API (<ushmem/device.h>, whose calls a CPU device's kernels and
 * the host both make) and the host calls Intel SHMEM names with its own
 * prefix. */
#ifndef USHMEM_H
#define USHMEM_H

#include <shmem.h>
#include <ushmem/device.h>

static inline void *ushmem_malloc(size_t size)
{
    return shmem_malloc(size);
}

static inline void *ushmem_calloc(size_t count, size_t size)
{
    return shmem_calloc(count, size);
}

static inline void *ushmem_align(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

static inline void ushmem_free(void *ptr)
{
    shmem_free(ptr);
}

static inline void ushmem_finalize(void)
{
    shmem_finalize();
}

#endif /* USHMEM_H */
