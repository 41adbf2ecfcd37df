/* The symmetric heap allocator: first fit over an offset-ordered block list
 * kept in host memory, never inside the heap, so a device-side overrun cannot
 * corrupt it. Deterministic: the same calls in the same order give the same
 * offsets on every PE, which is what makes allocations symmetric. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Sizes are whole CPU cache lines, so two allocations never share one. */
#define SIZE_UNIT 64
/* Every block starts at least on a 256-byte boundary
 * (USHMEMI_HEAP_BLOCK_ALIGN), the alignment that cudaMalloc guarantees and
 * GPU code assumes: whole 128-byte lines, whole wide words. A buffer 64
 * bytes past a line costs a GPU's copies a split line at every step: one
 * block putting 16 MiB from such a buffer ran at 43.9 GB/s, from a 4 KiB
 * boundary at 45.7 (two H200s). */
#define MIN_ALIGN USHMEMI_HEAP_BLOCK_ALIGN

struct block {
    size_t offset, size;
    bool used;
    struct block *next;
};

static struct {
    char *base;
    size_t size;
    size_t in_use;
    struct block *head; /* ordered by offset, covering [0, size) */
} heap;

ushmem_status_t ushmemi_heap_init(char *base, size_t size)
{
    struct block *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return USHMEM_ERR_NO_MEMORY;
    b->offset = 0;
    b->size = size;
    heap.base = base;
    heap.size = size;
    heap.in_use = 0;
    heap.head = b;
    return USHMEM_OK;
}

void ushmemi_heap_fini(void)
{
    struct block *b = heap.head;
    while (b) {
        struct block *next = b->next;
        free(b);
        b = next;
    }
    memset(&heap, 0, sizeof(heap));
}

static struct block *new_block(size_t offset, size_t size, bool used, struct block *next)
{
    struct block *b = malloc(sizeof(*b));
    if (b) {
        b->offset = offset;
        b->size = size;
        b->used = used;
        b->next = next;
    }
    return b;
}

void *ushmemi_heap_alloc(size_t align, size_t size)
{
    if (size == 0 || (align & (align - 1)) != 0 || size > heap.size || align > heap.size)
        return NULL;
    if (align < MIN_ALIGN)
        align = MIN_ALIGN;
    size = (size + SIZE_UNIT - 1) & ~(size_t)(SIZE_UNIT - 1);

    for (struct block *b = heap.head; b; b = b->next) {
        if (b->used)
            continue;
        /* Align the address, not the offset: the offsets still agree
         * because every PE's base has the same residue modulo align, which
         * the caller guarantees (up to USHMEMI_HEAP_ALIGNMENT by the device
         * backends' contract, above it by shmem_align's exchange). */
        uintptr_t addr = (uintptr_t)heap.base + b->offset;
        size_t start = (size_t)(((addr + align - 1) & ~(uintptr_t)(align - 1)) - (uintptr_t)heap.base);
        size_t pad = start - b->offset;
        if (pad > b->size || b->size - pad < size)
            continue;
        size_t tail = b->size - pad - size;
        /* Allocate both split blocks first so a failure leaves the list intact. */
        struct block *used = b, *tail_block = NULL;
        if (tail) {
            tail_block = new_block(start + size, tail, false, b->next);
            if (tail_block == NULL)
                return NULL;
        }
        if (pad) {
            used = new_block(start, size, true, tail ? tail_block : b->next);
            if (used == NULL) {
                free(tail_block);
                return NULL;
            }
            b->size = pad;
            b->next = used;
        } else {
            b->size = size;
            b->used = true;
            b->next = tail ? tail_block : b->next;
        }
        heap.in_use += size;
        return heap.base + used->offset;
    }
    return NULL;
}

static struct block *find(const void *ptr, struct block **prev_p)
{
    const char *p = ptr;
    if (p < heap.base || p >= heap.base + heap.size)
        return NULL;
    size_t offset = (size_t)(p - heap.base);
    struct block *prev = NULL;
    for (struct block *b = heap.head; b && b->offset <= offset; prev = b, b = b->next) {
        if (b->offset == offset && b->used) {
            *prev_p = prev;
            return b;
        }
    }
    return NULL;
}

bool ushmemi_heap_free(void *ptr)
{
    struct block *prev = NULL;
    struct block *b = find(ptr, &prev);
    if (b == NULL)
        return false;
    b->used = false;
    heap.in_use -= b->size;
    struct block *next = b->next;
    if (next && !next->used) {
        b->size += next->size;
        b->next = next->next;
        free(next);
    }
    if (prev && !prev->used) {
        prev->size += b->size;
        prev->next = b->next;
        free(b);
    }
    return true;
}

bool ushmemi_heap_resize(void *ptr, size_t size)
{
    struct block *prev;
    struct block *b = find(ptr, &prev);
    if (b == NULL || size == 0 || size > heap.size)
        return false;
    size = (size + SIZE_UNIT - 1) & ~(size_t)(SIZE_UNIT - 1);
    struct block *next = b->next;
    size_t room = b->size + (next && !next->used ? next->size : 0);
    if (size > room)
        return false;
    size_t rest = room - size;
    if (next && !next->used) {
        /* The free neighbour absorbs whatever the block gives up or takes. */
        if (rest == 0) {
            b->next = next->next;
            free(next);
        } else {
            next->offset = b->offset + size;
            next->size = rest;
        }
    } else if (rest > 0) {
        struct block *tail = new_block(b->offset + size, rest, false, next);
        if (tail == NULL)
            return false;
        b->next = tail;
    }
    heap.in_use = heap.in_use - b->size + size;
    b->size = size;
    return true;
}

size_t ushmemi_heap_block_size(const void *ptr)
{
    struct block *prev;
    struct block *b = find(ptr, &prev);
    return b ? b->size : 0;
}

size_t ushmemi_heap_bytes_in_use(void) { return heap.in_use; }

size_t ushmemi_heap_size(void) { return heap.size; }

/* The free block at the end of the heap, or NULL when the last block is used. */
static struct block *free_tail(void)
{
    struct block *b = heap.head;
    while (b != NULL && b->next != NULL)
        b = b->next;
    return b != NULL && !b->used ? b : NULL;
}

size_t ushmemi_heap_grow_need(size_t align, size_t size)
{
    if (size == 0 || (align & (align - 1)) != 0)
        return 0;
    if (align < MIN_ALIGN)
        align = MIN_ALIGN;
    if (size > SIZE_MAX / 2 || align > SIZE_MAX / 4)
        return SIZE_MAX; /* no heap grows that far */
    size = (size + SIZE_UNIT - 1) & ~(size_t)(SIZE_UNIT - 1);
    /* A new block goes at the end: into the free block there, or after the
     * last used one, at the alignment. */
    struct block *tail = free_tail();
    size_t start = tail != NULL ? tail->offset : heap.size;
    uintptr_t addr = (uintptr_t)heap.base + start;
    size_t aligned = (size_t)(((addr + align - 1) & ~(uintptr_t)(align - 1)) -
                              (uintptr_t)heap.base);
    return aligned + size > heap.size ? aligned + size - heap.size : 0;
}

ushmem_status_t ushmemi_heap_extend(size_t size)
{
    if (size <= heap.size)
        return USHMEM_OK;
    struct block *tail = free_tail();
    if (tail != NULL) {
        tail->size += size - heap.size;
    } else {
        struct block *last = heap.head;
        while (last->next != NULL)
            last = last->next;
        last->next = new_block(heap.size, size - heap.size, false, NULL);
        if (last->next == NULL)
            return USHMEM_ERR_NO_MEMORY;
    }
    heap.size = size;
    return USHMEM_OK;
}

/* A free block no allocation can start in: it holds no block boundary
 * (the padding that aligned the block after it). */
static bool unusable_gap(const struct block *b)
{
    uintptr_t start = (uintptr_t)heap.base + b->offset;
    uintptr_t first = (start + MIN_ALIGN - 1) & ~(uintptr_t)(MIN_ALIGN - 1);
    return !b->used && first >= start + b->size;
}

size_t ushmemi_heap_prefix_in_use(void)
{
    size_t end = 0;
    for (struct block *b = heap.head; b != NULL && (b->used || unusable_gap(b)); b = b->next)
        if (b->used)
            end = b->offset + b->size;
    return end;
}
