/* OpenSHMEM 1.6: shmem_init and shmem_finalize nest (only the last finalize
 * ends the library), and a program may initialise again after its last
 * finalize. Each round moves data and atomics to the right neighbour, runs
 * a team collective and checks what arrived; state of an earlier round
 * (teams, barrier counts) must not leak into the next. */
#include <shmem.h>
#include <stdio.h>

#include "mpe_check.h"

static long counter;

int main(void)
{
    for (int round = 0; round < 3; round++) {
        int initialized = -1;
        shmem_query_initialized(&initialized);
        if (initialized != 0) {
            fprintf(stderr, "round %d: initialised before shmem_init\n", round);
            return 1;
        }
        shmem_init();
        shmem_init(); /* nested: needs its own finalize */
        int me = shmem_my_pe(), npes = shmem_n_pes();
        long *box = shmem_malloc(sizeof(long));
        MPE_CHECK(box != NULL, "round %d: shmem_malloc", round);
        long value = me * 10 + round;
        shmem_long_put(box, &value, 1, (me + 1) % npes);
        shmem_long_atomic_add(&counter, 1, (me + 1) % npes);
        shmem_barrier_all();
        long expect = ((me - 1 + npes) % npes) * 10 + round;
        MPE_CHECK(*box == expect, "round %d: box %ld, not %ld", round, *box, expect);
        MPE_CHECK(counter == round + 1, "round %d: counter %ld", round, counter);

        shmem_team_t evens;
        MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0,
                                           &evens) == 0,
                  "round %d: split", round);
        if (evens != SHMEM_TEAM_INVALID) {
            long sum = 0, mine = me;
            MPE_CHECK(shmem_long_sum_reduce(evens, &sum, &mine, 1) == 0, "round %d: reduce",
                      round);
            long want = 0;
            for (int pe = 0; pe < npes; pe += 2)
                want += pe;
            MPE_CHECK(sum == want, "round %d: sum %ld, not %ld", round, sum, want);
        }
        shmem_finalize(); /* the inner one: still up */
        shmem_query_initialized(&initialized);
        MPE_CHECK(initialized, "round %d: down after the inner finalize", round);
        shmem_free(box);
        if (me == 0 && round == 2)
            printf("PE 0: three rounds of init and finalize on %d PEs\n", npes);
        shmem_finalize();
    }
    return 0;
}
