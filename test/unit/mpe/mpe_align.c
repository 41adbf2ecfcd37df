/* Every allocation starts on a 256-byte boundary (the alignment cudaMalloc
 * guarantees, which GPU code assumes), whatever its size or a smaller
 * alignment asked; shmem_realloc's too.
 *
 * shmem_align above the heap base's 2 MiB alignment: 4 KiB, 2 MiB, 4 MiB and
 * 8 MiB blocks are aligned on every PE, sit at the same offset on every PE,
 * and a put into one reaches the same object on the peer. An alignment is
 * possible only where every PE's heap base has the same residue modulo it;
 * the test measures that from the PEs' addresses of one allocation (they
 * differ exactly as the bases do), demands success up to it and NULL on
 * every PE above it. 3 MiB and an alignment larger than the heap give NULL.
 *
 * With an argument ("not-pow2", "too-large") it only makes that one bad
 * call, for the meson test that matches the error message. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define MIB ((size_t)1 << 20)
#define HUGE_ALIGN ((size_t)1 << 40) /* larger than any heap the tests configure */

static int me, npes;

/* The largest power of two modulo which every PE's address of the symmetric
 * object `obj` is the same: the alignment every PE can share. SIZE_MAX when
 * the addresses are all equal (one PE, or identical layouts). */
static size_t shared_alignment(void *obj, uint64_t *addrs)
{
    for (int pe = 0; pe < npes; pe++)
        shmem_uint64_p(&addrs[me], (uint64_t)(uintptr_t)obj, pe);
    shmem_quiet();
    shmem_barrier_all();
    uint64_t differ = 0;
    for (int pe = 0; pe < npes; pe++)
        differ |= addrs[pe] ^ (uint64_t)(uintptr_t)obj;
    shmem_barrier_all();
    return differ == 0 ? SIZE_MAX : (size_t)(differ & (~differ + 1));
}

static void check_default_alignment(char *anchor, uint64_t *addrs)
{
    enum { N = 6 };
    void *p[N] = {anchor, addrs, shmem_malloc(1), shmem_malloc(300), shmem_align(64, 8),
                  shmem_calloc(3, 5)};
    for (int i = 0; i < N; i++)
        MPE_CHECK(p[i] != NULL && (uintptr_t)p[i] % 256 == 0,
                  "allocation %d is at %p, not on a 256-byte boundary", i, p[i]);
    void *grown = shmem_realloc(p[2], 5000); /* past p[3]: moves */
    MPE_CHECK(grown != NULL && (uintptr_t)grown % 256 == 0,
              "shmem_realloc to 5000 bytes gave %p, not on a 256-byte boundary", grown);
    shmem_free(p[5]);
    shmem_free(p[4]);
    shmem_free(p[3]);
    shmem_free(grown);
}

static void check_aligned_block(size_t align, size_t shared, char *anchor, uint64_t *addrs)
{
    long *block = shmem_align(align, 100 * sizeof(long));
    if (align > shared && align > 2 * MIB) {
        /* No offset is aligned on every PE: refused, on every PE. */
        MPE_CHECK(block == NULL, "shmem_align(%zu) gave %p though the PEs' heaps agree only "
                  "modulo %zu", align, (void *)block, shared);
        if (me == 0)
            printf("shmem_align(%zu) refused as expected: heap bases agree modulo %zu only\n",
                   align, shared);
        return;
    }
    MPE_CHECK(block != NULL, "shmem_align(%zu) gave NULL (heap bases agree modulo %zu%s)",
              align, shared, shared == SIZE_MAX ? ": all equal" : "");
    MPE_CHECK((uintptr_t)block % align == 0, "shmem_align(%zu) gave %p", align, (void *)block);

    /* Same offset from the first allocation on every PE. */
    uint64_t offset = (uint64_t)((char *)block - anchor);
    for (int pe = 0; pe < npes; pe++)
        shmem_uint64_p(&addrs[me], offset, pe);
    shmem_quiet();
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++)
        MPE_CHECK(addrs[pe] == offset, "shmem_align(%zu): offset %llu on PE %d, %llu here", align,
                  (unsigned long long)addrs[pe], pe, (unsigned long long)offset);

    /* A put into the block lands in the same object on the right neighbour. */
    int right = (me + 1) % npes, left = (me - 1 + npes) % npes;
    memset(block, 0, 100 * sizeof(long));
    shmem_barrier_all();
    shmem_long_p(&block[0], (long)me * 1000 + 1, right);
    shmem_long_p(&block[99], (long)me * 1000 + 99, right);
    shmem_barrier_all();
    MPE_CHECK(block[0] == (long)left * 1000 + 1 && block[99] == (long)left * 1000 + 99,
              "shmem_align(%zu): block holds %ld %ld, want %ld %ld from PE %d", align, block[0],
              block[99], (long)left * 1000 + 1, (long)left * 1000 + 99, left);
    shmem_free(block);
}

int main(int argc, char **argv)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    if (argc > 1) {
        void *p = strcmp(argv[1], "not-pow2") == 0 ? shmem_align(3 * MIB, 64)
                                                   : shmem_align(HUGE_ALIGN, 64);
        MPE_CHECK(p == NULL, "shmem_align for %s gave %p", argv[1], p);
        shmem_finalize();
        return 0;
    }

    char *anchor = shmem_malloc(64);
    uint64_t *addrs = shmem_calloc((size_t)npes, sizeof(uint64_t));
    MPE_CHECK(anchor && addrs, "allocation failed");
    size_t shared = shared_alignment(anchor, addrs);
    check_default_alignment(anchor, addrs);

    size_t aligns[] = {4096, 2 * MIB, 4 * MIB, 8 * MIB};
    for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++)
        check_aligned_block(aligns[i], shared, anchor, addrs);

    /* Two 8 MiB-aligned blocks live at once, with a small one between. */
    if (shared >= 8 * MIB) {
        char *x = shmem_align(8 * MIB, 1);
        char *small = shmem_malloc(100);
        char *y = shmem_align(8 * MIB, 3 * MIB);
        MPE_CHECK(x && small && y && x != y && (uintptr_t)x % (8 * MIB) == 0 &&
                      (uintptr_t)y % (8 * MIB) == 0,
                  "two 8 MiB-aligned blocks: %p %p", (void *)x, (void *)y);
        shmem_free(y);
        shmem_free(small);
        shmem_free(x);
    }

    MPE_CHECK(shmem_align(3 * MIB, 64) == NULL, "alignment 3 MiB was accepted");
    MPE_CHECK(shmem_align(HUGE_ALIGN, 64) == NULL, "an alignment of 1 TiB was accepted");
    /* The heap still works after the refusals. */
    long *after = shmem_align(4096, sizeof(long));
    MPE_CHECK(after != NULL && (uintptr_t)after % 4096 == 0, "shmem_align(4096) after refusals");
    shmem_free(after);

    shmem_free(addrs);
    shmem_free(anchor);
    shmem_finalize();
    return 0;
}
