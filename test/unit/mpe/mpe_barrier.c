/* Barriers on every PE: stores before a barrier are visible after it
 * (barrier_all, quiet + sync_all, team_sync), active-set barriers on the even
 * PEs while the odd PEs run their own, overlapping active sets called in a
 * consistent order, and pSync arrays left at SHMEM_SYNC_VALUE. */
#include <shmem.h>
#include <string.h>

#include "mpe_check.h"

#define WORDS 16

static long psync_even[SHMEM_BARRIER_SYNC_SIZE];
static long psync_odd[SHMEM_BARRIER_SYNC_SIZE];
static long psync_low[SHMEM_BARRIER_SYNC_SIZE];

/* Ring over a strided set: every member puts `iter` (WORDS copies) into slot
 * iter % 2 of the next member, synchronises with `sync`, then checks what
 * the previous member put. Two slots alternate, so a member overwrites a
 * slot only after the barrier that its reader reached after checking. */
static void ring_step(long *slots, long iter, int start, int stride, int size,
                      void (*sync)(int start, int stride, int size), const char *what)
{
    int me = shmem_my_pe();
    int index = (me - start) / stride;
    int next = start + ((index + 1) % size) * stride;
    int prev = start + ((index + size - 1) % size) * stride;
    long *slot = slots + (iter % 2) * WORDS;
    long words[WORDS];
    for (int w = 0; w < WORDS; w++)
        words[w] = iter * 100 + w;
    shmem_putmem(slot, words, sizeof(words), next);
    sync(start, stride, size);
    for (int w = 0; w < WORDS; w++)
        MPE_CHECK(slot[w] == iter * 100 + w, "%s: iteration %ld word %d from PE %d is %ld", what,
                  iter, w, prev, slot[w]);
}

static void world_barrier_all(int start, int stride, int size)
{
    (void)start, (void)stride, (void)size;
    shmem_barrier_all();
}

static void world_sync_all(int start, int stride, int size)
{
    (void)start, (void)stride, (void)size;
    shmem_quiet();
    shmem_sync_all();
}

static void world_team_sync(int start, int stride, int size)
{
    (void)start, (void)stride, (void)size;
    shmem_quiet();
    MPE_CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "shmem_team_sync failed");
}

static int log2_of(int stride) { return stride == 1 ? 0 : 1; }

static void barrier_even(int start, int stride, int size)
{
    shmem_barrier(start, log2_of(stride), size, psync_even);
}

static void barrier_odd(int start, int stride, int size)
{
    shmem_barrier(start, log2_of(stride), size, psync_odd);
}

static void sync_low(int start, int stride, int size)
{
    shmem_quiet();
    shmem_sync(start, log2_of(stride), size, psync_low);
}

static void check_psync(const long *psync, const char *name)
{
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
        MPE_CHECK(psync[i] == SHMEM_SYNC_VALUE, "%s[%d] = %ld after the barrier", name, i,
                  psync[i]);
}

int main(void)
{
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
        psync_even[i] = psync_odd[i] = psync_low[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *slots = shmem_calloc(2 * WORDS, sizeof(long));
    long *set_slots = shmem_calloc(2 * WORDS, sizeof(long));
    long *low_slots = shmem_calloc(2 * WORDS, sizeof(long));
    MPE_CHECK(slots && set_slots && low_slots, "allocation failed");

    /* World: the three flavours interleaved. */
    for (long iter = 1; iter <= 300; iter++) {
        void (*sync)(int, int, int) = iter % 3 == 0   ? world_barrier_all
                                      : iter % 3 == 1 ? world_sync_all
                                                      : world_team_sync;
        ring_step(slots, iter, 0, 1, npes, sync, "world");
    }
    MPE_CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "team_sync on SHMEM_TEAM_INVALID");

    /* Evens and odds at once, each on its own active set and at its own
     * pace: the odd PEs do three times as many barriers. */
    int n_even = (npes + 1) / 2, n_odd = npes / 2;
    if (me % 2 == 0) {
        for (long iter = 1; iter <= 100; iter++)
            ring_step(set_slots, iter, 0, 2, n_even, barrier_even, "even set");
    } else {
        for (long iter = 1; iter <= 300; iter++)
            ring_step(set_slots, iter, 1, 2, n_odd, barrier_odd, "odd set");
    }
    shmem_barrier_all();

    /* Overlapping sets, called in the same order by the PEs in both: the
     * evens, then the lower half. */
    int n_low = (npes + 1) / 2;
    memset(set_slots, 0, 2 * WORDS * sizeof(long));
    shmem_barrier_all();
    for (long iter = 1; iter <= 100; iter++) {
        if (me % 2 == 0)
            ring_step(set_slots, iter, 0, 2, n_even, barrier_even, "even set, overlapping");
        if (me < n_low)
            ring_step(low_slots, iter, 0, 1, n_low, sync_low, "lower half");
    }
    shmem_barrier_all();
    check_psync(psync_even, "pSync of the even set");
    check_psync(psync_odd, "pSync of the odd set");
    check_psync(psync_low, "pSync of the lower half");

    shmem_free(low_slots);
    shmem_free(set_slots);
    shmem_free(slots);
    shmem_finalize();
    return 0;
}
