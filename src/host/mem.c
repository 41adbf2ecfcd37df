/* shmem_malloc and friends: collective, symmetric, from the heap allocator. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

static void *alloc_collective(const char *call, size_t align, size_t size)
{
    ushmemi_check_init(call);
    if (size == 0) {
        ushmemi_barrier_world();
        return NULL;
    }
    void *ptr = ushmemi_heap_alloc(align, size);
    if (ptr == NULL)
        ushmemi_error("%s(%zu): the symmetric heap cannot hold it (%zu of %zu bytes in use); "
                      "raise SHMEM_SYMMETRIC_SIZE",
                      call, size, ushmemi_heap_bytes_in_use(), ushmemi_settings.symmetric_size);
    /* Allocation is a synchronisation point: no PE writes into the new block
     * before every PE owns it. */
    ushmemi_barrier_world();
    return ptr;
}

USHMEMI_API void *shmem_malloc(size_t size) { return alloc_collective("shmem_malloc", 0, size); }

USHMEMI_API void *shmem_malloc_with_hints(size_t size, long hints)
{
    /* Every hint is valid on host memory; they matter for device backends. */
    if (hints & ~(SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE))
        ushmemi_warn("shmem_malloc_with_hints: unknown hint bits 0x%lx ignored",
                     (unsigned long)hints & ~(unsigned long)(SHMEM_MALLOC_ATOMICS_REMOTE |
                                                             SHMEM_MALLOC_SIGNAL_REMOTE));
    return alloc_collective("shmem_malloc_with_hints", 0, size);
}

USHMEMI_API void *shmem_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        ushmemi_check_init("shmem_calloc");
        ushmemi_error("shmem_calloc(%zu, %zu): the size overflows", count, size);
        ushmemi_barrier_world();
        return NULL;
    }
    ushmemi_check_init("shmem_calloc");
    void *ptr = ushmemi_heap_alloc(0, count * size);
    if (ptr)
        ushmemi_host_copy_zero(ptr, count * size);
    else if (count * size != 0)
        ushmemi_error("shmem_calloc(%zu, %zu): the symmetric heap cannot hold it (%zu of %zu "
                      "bytes in use); raise SHMEM_SYMMETRIC_SIZE",
                      count, size, ushmemi_heap_bytes_in_use(), ushmemi_settings.symmetric_size);
    ushmemi_barrier_world();
    return ptr;
}

USHMEMI_API void *shmem_align(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        ushmemi_check_init("shmem_align");
        ushmemi_error("shmem_align(%zu, %zu): the alignment is not a power of two", alignment,
                      size);
        ushmemi_barrier_world();
        return NULL;
    }
    if (alignment > USHMEMI_HEAP_ALIGNMENT) {
        ushmemi_check_init("shmem_align");
        ushmemi_error("shmem_align(%zu, %zu): alignments above %zu bytes are not supported", alignment,
                      size, USHMEMI_HEAP_ALIGNMENT);
        ushmemi_barrier_world();
        return NULL;
    }
    return alloc_collective("shmem_align", alignment, size);
}

static void free_checked(const char *call, void *ptr)
{
    if (!ushmemi_heap_free(ptr))
        ushmemi_fatal(call, "%p is not the start of a live symmetric heap allocation", ptr);
}

USHMEMI_API void shmem_free(void *ptr)
{
    ushmemi_check_init("shmem_free");
    /* Nobody may still be writing into the block when it is reused. */
    shmem_quiet();
    ushmemi_barrier_world();
    if (ptr != NULL)
        free_checked("shmem_free", ptr);
}

USHMEMI_API void *shmem_realloc(void *ptr, size_t size)
{
    ushmemi_check_init("shmem_realloc");
    if (ptr == NULL)
        return shmem_malloc(size);
    if (size == 0) {
        shmem_free(ptr);
        return NULL;
    }
    size_t old = ushmemi_heap_block_size(ptr);
    if (old == 0)
        ushmemi_fatal("shmem_realloc", "%p is not the start of a live symmetric heap allocation",
                      ptr);
    shmem_quiet();
    ushmemi_barrier_world();
    /* In place when possible: shrinking then never fails for lack of room. */
    if (ushmemi_heap_resize(ptr, size)) {
        ushmemi_barrier_world();
        return ptr;
    }
    void *fresh = ushmemi_heap_alloc(0, size);
    if (fresh == NULL) {
        ushmemi_error("shmem_realloc(%p, %zu): the symmetric heap cannot hold it; the old block "
                      "is kept",
                      ptr, size);
        ushmemi_barrier_world();
        return NULL;
    }
    ushmemi_host_copy("shmem_realloc", fresh, ptr, old < size ? old : size);
    free_checked("shmem_realloc", ptr);
    ushmemi_barrier_world();
    return fresh;
}

USHMEMI_API void *shmalloc(size_t size) { return shmem_malloc(size); }
USHMEMI_API void shfree(void *ptr) { shmem_free(ptr); }
USHMEMI_API void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
USHMEMI_API void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
