/* Locks on every PE: a counter on PE 0 updated non-atomically (get, add,
 * put) under the lock must come out exact; test_lock never lets two PEs in;
 * team queries translate PEs. */
#include <shmem.h>

#include "mpe_check.h"

#define ROUNDS 200

static long lock, trylock; /* symmetric globals, as older programs use them */

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *counter = shmem_calloc(1, sizeof(long));
    long *inside = shmem_calloc(1, sizeof(long));
    MPE_CHECK(counter && inside, "calloc");

    for (int i = 0; i < ROUNDS; i++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(counter, 0);
        shmem_long_p(counter, v + 1, 0);
        shmem_clear_lock(&lock);
    }
    for (int i = 0; i < ROUNDS; i++) {
        if (shmem_test_lock(&trylock) == 0) {
            long others = shmem_long_atomic_fetch_inc(inside, 0);
            MPE_CHECK(others == 0, "test_lock let %ld other PEs in", others);
            shmem_long_atomic_add(inside, -1, 0);
            shmem_clear_lock(&trylock);
        }
    }
    shmem_barrier_all();
    MPE_CHECK(shmem_long_g(counter, 0) == (long)npes * ROUNDS, "counter = %ld, want %ld",
              shmem_long_g(counter, 0), (long)npes * ROUNDS);
    if (me == 0) {
        MPE_CHECK(shmem_test_lock(&lock) == 0, "a free lock was not taken");
        MPE_CHECK(shmem_test_lock(&lock) == 1, "a held lock was taken again");
        shmem_clear_lock(&lock);
    }

    /* SHMEM_TEAM_SHARED is the node when heaps are mapped, this PE alone when not. */
    int node_first, node_size;
    mpe_sim_node_pes(&node_first, &node_size);
    MPE_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_SHARED) ==
                  (mpe_mapped() ? me - node_first : 0),
              "translate");
    MPE_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_SHARED) == -1,
              "translate of an out-of-range PE");
    shmem_team_config_t config;
    MPE_CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &config) == 0,
              "get_config");
    shmem_barrier_all();
    shmem_free(inside);
    shmem_free(counter);
    shmem_finalize();
    return 0;
}
