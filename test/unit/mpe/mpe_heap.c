/* Symmetric heap on every PE: symmetric offsets, calloc zeroes, align,
 * realloc keeps contents, exhaustion gives NULL everywhere, reuse after free. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();

    /* Offsets from the first allocation agree on every PE. */
    char *anchor = shmem_malloc(1);
    size_t *offsets = shmem_calloc(8, sizeof(size_t));
    char *a = shmem_malloc(1000);
    char *b = shmem_align(4096, 333);
    char *c = shmem_malloc_with_hints(5000, SHMEM_MALLOC_ATOMICS_REMOTE);
    MPE_CHECK(anchor && offsets && a && b && c, "allocation failed");
    MPE_CHECK((uintptr_t)b % 4096 == 0, "align: %p", (void *)b);
    size_t mine[3] = {(size_t)(a - anchor), (size_t)(b - anchor), (size_t)(c - anchor)};
    memcpy(offsets, mine, sizeof(mine));
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++) {
        size_t theirs[3];
        shmem_getmem(theirs, offsets, sizeof(theirs), pe);
        MPE_CHECK(memcmp(theirs, mine, sizeof(mine)) == 0,
                  "PE %d has offsets %zu %zu %zu, this PE %zu %zu %zu", pe, theirs[0], theirs[1],
                  theirs[2], mine[0], mine[1], mine[2]);
    }

    /* Large alignments hold on every PE and stay symmetric. */
    for (size_t align = 8192; align <= ((size_t)2 << 20); align *= 4) {
        long *big = shmem_align(align, 3 * sizeof(long));
        MPE_CHECK(big != NULL && (uintptr_t)big % align == 0, "shmem_align(%zu) gave %p", align,
                  (void *)big);
        shmem_long_p(&big[1], me, (me + 1) % npes);
        shmem_barrier_all();
        MPE_CHECK(big[1] == (me - 1 + npes) % npes, "aligned block from left = %ld", big[1]);
        shmem_free(big);
    }
    /* Alignments above 2 MiB: mpe_align.c. One larger than the heap is refused. */
    MPE_CHECK(shmem_align((size_t)1 << 40, 8) == NULL, "a 1 TiB alignment was accepted");
    MPE_CHECK(shmem_align(3000, 8) == NULL, "alignment 3000 was accepted");

    /* calloc gives zeroes even over memory that held data. */
    memset(a, 0xab, 1000);
    shmem_barrier_all();
    shmem_free(a);
    int *z = shmem_calloc(250, sizeof(int));
    MPE_CHECK(z != NULL, "calloc");
    for (int i = 0; i < 250; i++)
        MPE_CHECK(z[i] == 0, "calloc z[%d] = %d", i, z[i]);

    /* realloc keeps the contents and stays symmetric: peers write into it. */
    for (int i = 0; i < 250; i++)
        z[i] = me * 1000 + i;
    int *bigger = shmem_realloc(z, 100000 * sizeof(int));
    MPE_CHECK(bigger != NULL, "realloc");
    for (int i = 0; i < 250; i++)
        MPE_CHECK(bigger[i] == me * 1000 + i, "realloc lost [%d] = %d", i, bigger[i]);
    int right = (me + 1) % npes;
    int v = me + 7;
    shmem_putmem(&bigger[99999], &v, sizeof(v), right);
    shmem_barrier_all();
    int left = (me - 1 + npes) % npes;
    MPE_CHECK(bigger[99999] == left + 7, "realloc'd tail from PE %d = %d", left, bigger[99999]);

    /* Shrinking a block that fills most of the heap works in place. */
    char *most = shmem_malloc((size_t)40 << 20);
    MPE_CHECK(most != NULL, "40 MiB block");
    most[0] = (char)me;
    char *shrunk = shmem_realloc(most, (size_t)1 << 20);
    MPE_CHECK(shrunk == most && shrunk[0] == (char)me, "shrinking realloc gave %p (was %p)",
              (void *)shrunk, (void *)most);
    shmem_free(shrunk);

    /* Exhaustion: NULL on every PE, and the heap still works afterwards. */
    void *huge = shmem_malloc((size_t)1 << 40);
    MPE_CHECK(huge == NULL, "a 1 TiB allocation succeeded");
    MPE_CHECK(shmem_malloc(0) == NULL, "malloc(0) is not NULL");
    void *after = shmem_malloc(64);
    MPE_CHECK(after != NULL, "heap unusable after exhaustion");

    /* Freed space is reused. */
    shmem_free(after);
    void *again = shmem_malloc(64);
    MPE_CHECK(again == after, "freed block not reused: %p then %p", after, again);
    shmem_free(again);

    shmem_free(NULL);
    shmem_free(bigger);
    shmem_free(c);
    shmem_free(b);
    shmem_free(offsets);
    shmem_free(anchor);
    shmem_finalize();
    return 0;
}
