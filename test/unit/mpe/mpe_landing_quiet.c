/* A job that exchanges through landing and then keeps quiet: every PE puts
 * a word into the next PE's heap, gets the previous PE's word back, and
 * checks both; then no PE makes any call for argv[1] ms (default 300)
 * before the closing barrier. Run by landing_warm.sh, which reads what
 * each PE did to keep the fabric's path warm meanwhile
 * (src/transport/ofi_am.c). */
#include <shmem.h>
#include <stdlib.h>
#include <time.h>

#include "mpe_check.h"

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long quiet_ms = argc > 1 ? atol(argv[1]) : 300;
    MPE_CHECK(quiet_ms >= 0 && quiet_ms < 60000, "quiet spell of %ld ms", quiet_ms);
    long *word = shmem_malloc(sizeof(long));
    MPE_CHECK(word != NULL, "shmem_malloc of a long");
    long mine = 1000 + me, none = -1;
    shmem_long_put(word, &none, 1, me);
    shmem_barrier_all();
    shmem_long_p(word, mine, (me + 1) % npes);
    shmem_barrier_all();
    int prev = (me + npes - 1) % npes;
    long got = shmem_long_g(word, me);
    MPE_CHECK(got == 1000 + prev, "PE %d's word here is %ld, want %d", prev, got, 1000 + prev);
    got = shmem_long_g(word, (me + 1) % npes);
    MPE_CHECK(got == 1000 + me, "this PE's word on PE %d is %ld, want %d", (me + 1) % npes, got,
              1000 + me);
    struct timespec ts = {quiet_ms / 1000, (quiet_ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    shmem_barrier_all();
    shmem_free(word);
    shmem_finalize();
    return 0;
}
