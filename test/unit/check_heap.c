/* The heap allocator: alignment, reuse, coalescing, exhaustion, bad frees and
 * determinism (the property that makes allocations symmetric). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/host/internal.h"

#define HEAP_SIZE (1u << 20)
static char *arena;

static void setup(void)
{
    arena = aligned_alloc(4096, HEAP_SIZE);
    ck_assert_int_eq(ushmemi_heap_init(arena, HEAP_SIZE), USHMEM_OK);
}

static void teardown(void)
{
    ushmemi_heap_fini();
    free(arena);
}

START_TEST(test_alignment_and_bounds)
{
    char *a = ushmemi_heap_alloc(0, 1);
    char *b = ushmemi_heap_alloc(4096, 100);
    char *c = ushmemi_heap_alloc(0, 3);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    /* At least 256-byte boundaries, as GPU code expects of cudaMalloc. */
    ck_assert_uint_eq((uintptr_t)a % 256, 0);
    ck_assert_uint_eq((uintptr_t)b % 4096, 0);
    ck_assert_uint_eq((uintptr_t)c % 256, 0);
    ck_assert(a >= arena && b + 100 <= arena + HEAP_SIZE);
    /* Non-overlapping */
    ck_assert(a + 1 <= b || b + 100 <= a);
    ck_assert(b + 100 <= c || c + 3 <= b);
    ck_assert_uint_eq(ushmemi_heap_block_size(b), 128);
    ck_assert_ptr_null(ushmemi_heap_alloc(0, 0));
    ck_assert_ptr_null(ushmemi_heap_alloc(3, 8)); /* not a power of two */
}
END_TEST

/* Growth: the bytes the allocator lacks at its end, and the end extended. */
START_TEST(test_grow_need_and_extend)
{
    char *a = ushmemi_heap_alloc(0, HEAP_SIZE / 2);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(ushmemi_heap_grow_need(0, HEAP_SIZE / 4), 0); /* fits */
    ck_assert_uint_eq(ushmemi_heap_grow_need(0, HEAP_SIZE), HEAP_SIZE / 2);
    ck_assert_uint_eq(ushmemi_heap_grow_need(0, (size_t)-1 / 2 + 1), SIZE_MAX);
    ck_assert_ptr_null(ushmemi_heap_alloc(0, HEAP_SIZE));
    /* The free tail and the new bytes make one block: no pointer into the
     * new part is dereferenced, the allocator keeps its records elsewhere. */
    ck_assert_int_eq(ushmemi_heap_extend(HEAP_SIZE + HEAP_SIZE / 2), USHMEM_OK);
    ck_assert_uint_eq(ushmemi_heap_size(), HEAP_SIZE + HEAP_SIZE / 2);
    char *b = ushmemi_heap_alloc(0, HEAP_SIZE);
    ck_assert_ptr_eq(b, arena + HEAP_SIZE / 2);
    /* A used last block: the new bytes become a block of their own. */
    ck_assert_uint_eq(ushmemi_heap_grow_need(4096, 100), 128);
    ck_assert_int_eq(ushmemi_heap_extend(HEAP_SIZE * 2), USHMEM_OK);
    char *c = ushmemi_heap_alloc(4096, 100);
    ck_assert_ptr_eq(c, arena + HEAP_SIZE + HEAP_SIZE / 2);
    ck_assert(ushmemi_heap_free(b));
    ck_assert(ushmemi_heap_free(a));
    ck_assert(ushmemi_heap_free(c));
    ck_assert_ptr_eq(ushmemi_heap_alloc(0, HEAP_SIZE * 2), arena); /* all coalesced */
}
END_TEST

START_TEST(test_exhaustion_and_reuse)
{
    char *big = ushmemi_heap_alloc(0, HEAP_SIZE);
    ck_assert_ptr_nonnull(big);
    ck_assert_ptr_null(ushmemi_heap_alloc(0, 1));
    ck_assert(ushmemi_heap_free(big));
    ck_assert_uint_eq(ushmemi_heap_bytes_in_use(), 0);
    ck_assert_ptr_null(ushmemi_heap_alloc(0, HEAP_SIZE + 1));

    /* Three blocks freed in every order coalesce back into one heap-sized block. */
    const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 6; o++) {
        char *p[3];
        for (int i = 0; i < 3; i++)
            ck_assert_ptr_nonnull(p[i] = ushmemi_heap_alloc(0, HEAP_SIZE / 3 - 256));
        for (int i = 0; i < 3; i++)
            ck_assert(ushmemi_heap_free(p[orders[o][i]]));
        char *all = ushmemi_heap_alloc(0, HEAP_SIZE);
        ck_assert_msg(all == arena, "order %d did not coalesce", o);
        ck_assert(ushmemi_heap_free(all));
    }
}
END_TEST

START_TEST(test_resize_in_place)
{
    char *a = ushmemi_heap_alloc(0, HEAP_SIZE * 3 / 4);
    ck_assert_ptr_nonnull(a);
    /* Shrinking works even though a copy would not fit. */
    ck_assert(ushmemi_heap_resize(a, HEAP_SIZE / 4));
    ck_assert_uint_eq(ushmemi_heap_block_size(a), HEAP_SIZE / 4);
    char *b = ushmemi_heap_alloc(0, HEAP_SIZE / 2);
    ck_assert_ptr_eq(b, a + HEAP_SIZE / 4); /* the freed tail is reusable */
    ck_assert(ushmemi_heap_free(b));
    /* Growing into the free neighbour, then all of the heap. */
    ck_assert(ushmemi_heap_resize(a, HEAP_SIZE / 2));
    ck_assert(ushmemi_heap_resize(a, HEAP_SIZE));
    ck_assert_uint_eq(ushmemi_heap_bytes_in_use(), HEAP_SIZE);
    ck_assert(!ushmemi_heap_resize(a, HEAP_SIZE + 64));
    ck_assert(ushmemi_heap_resize(a, 64));
    /* A used neighbour blocks growth past it; the gap before it (the next
     * block starts on a 256-byte boundary) is room. */
    char *c = ushmemi_heap_alloc(0, 64);
    ck_assert_ptr_eq(c, a + 256);
    ck_assert(!ushmemi_heap_resize(a, 320));
    ck_assert_uint_eq(ushmemi_heap_block_size(a), 64);
    ck_assert(ushmemi_heap_resize(a, 256));
    ck_assert_uint_eq(ushmemi_heap_block_size(a), 256);
    ck_assert(!ushmemi_heap_resize(a, 320));
    ck_assert(ushmemi_heap_free(c));
    ck_assert(ushmemi_heap_free(a));
    ck_assert_uint_eq(ushmemi_heap_bytes_in_use(), 0);
    ck_assert_ptr_eq(ushmemi_heap_alloc(0, HEAP_SIZE), arena);
}
END_TEST

/* Where the user's part of the heap begins after shmem_init's own blocks:
 * the padding before an aligned block is no gap, a free block where an
 * allocation could start is. */
START_TEST(test_prefix_in_use)
{
    ck_assert_uint_eq(ushmemi_heap_prefix_in_use(), 0);
    char *a = ushmemi_heap_alloc(0, 64);
    char *b = ushmemi_heap_alloc(0, 100);
    ck_assert_ptr_eq(a, arena);
    ck_assert_ptr_eq(b, arena + 256); /* 192 bytes of padding before it */
    ck_assert_uint_eq(ushmemi_heap_prefix_in_use(), 256 + 128);
    char *c = ushmemi_heap_alloc(0, 512);
    ck_assert_ptr_eq(c, arena + 512);
    ck_assert_uint_eq(ushmemi_heap_prefix_in_use(), 1024);
    ck_assert(ushmemi_heap_free(b)); /* [64, 512) is free, and 256 can take a block */
    ck_assert_uint_eq(ushmemi_heap_prefix_in_use(), 64);
    ck_assert(ushmemi_heap_free(a));
    ck_assert_uint_eq(ushmemi_heap_prefix_in_use(), 0);
    ck_assert(ushmemi_heap_free(c));
}
END_TEST

START_TEST(test_bad_free)
{
    char *a = ushmemi_heap_alloc(0, 256);
    int local;
    ck_assert(!ushmemi_heap_free(&local));  /* not in the heap */
    ck_assert(!ushmemi_heap_free(a + 8));   /* inside a block */
    ck_assert(ushmemi_heap_free(a));
    ck_assert(!ushmemi_heap_free(a));       /* double free */
    ck_assert_uint_eq(ushmemi_heap_bytes_in_use(), 0);
    /* The heap is intact afterwards. */
    ck_assert_ptr_eq(ushmemi_heap_alloc(0, HEAP_SIZE), arena);
}
END_TEST

/* Runs a pseudo-random sequence of allocations and frees, recording offsets. */
static void run_sequence(unsigned seed, size_t *offsets, int n)
{
    char *live[64] = {0};
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int slot = (int)((seed >> 8) % 64);
        if (live[slot]) {
            ck_assert(ushmemi_heap_free(live[slot]));
            live[slot] = NULL;
            offsets[i] = SIZE_MAX;
        } else {
            size_t size = 1 + (seed >> 12) % 20000;
            size_t align = (size_t)1 << ((seed >> 4) % 13);
            live[slot] = ushmemi_heap_alloc(align, size);
            ck_assert_ptr_nonnull(live[slot]);
            ck_assert_uint_eq((uintptr_t)live[slot] % align, 0);
            memset(live[slot], slot, size); /* overlapping blocks would show below */
            offsets[i] = (size_t)(live[slot] - arena);
        }
    }
    for (int s = 0; s < 64; s++)
        if (live[s])
            ck_assert_uint_eq((unsigned char)live[s][0], (unsigned)s);
    for (int s = 0; s < 64; s++)
        if (live[s])
            ck_assert(ushmemi_heap_free(live[s]));
    ck_assert_uint_eq(ushmemi_heap_bytes_in_use(), 0);
}

START_TEST(test_deterministic)
{
    enum { N = 2000 };
    static size_t first[N], second[N];
    run_sequence(42, first, N);
    ushmemi_heap_fini();
    /* A different base address: offsets must still match. */
    char *other = aligned_alloc(4096, HEAP_SIZE);
    char *saved = arena;
    arena = other;
    ck_assert_int_eq(ushmemi_heap_init(other, HEAP_SIZE), USHMEM_OK);
    run_sequence(42, second, N);
    ck_assert_mem_eq(first, second, sizeof(first));
    arena = saved;
    ushmemi_heap_fini();
    free(other);
    ck_assert_int_eq(ushmemi_heap_init(arena, HEAP_SIZE), USHMEM_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_alignment_and_bounds);
    tcase_add_test(tc, test_prefix_in_use);
    tcase_add_test(tc, test_exhaustion_and_reuse);
    tcase_add_test(tc, test_grow_need_and_extend);
    tcase_add_test(tc, test_bad_free);
    tcase_add_test(tc, test_resize_in_place);
    tcase_add_test(tc, test_deterministic);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
