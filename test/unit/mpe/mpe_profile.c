/* The profiling interface: this program is a tool that wraps two routines
 * under their shmem_ names and calls the library through the pshmem_ ones,
 * as OpenSHMEM's profiling section describes. Linked against the shared or
 * the static library, its wrappers must win, every call must reach them
 * once, and the data must still arrive. */
#include <pshmem.h>
#include <stdio.h>

#include "mpe_check.h"

static int puts_seen, barriers_seen;

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    puts_seen++;
    pshmem_putmem(dest, source, nelems, pe);
}

void shmem_barrier_all(void)
{
    barriers_seen++;
    pshmem_barrier_all();
}

int main(void)
{
    static long box[4];
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long mine[4] = {me, me + 1, me + 2, me + 3};
    for (int i = 0; i < 3; i++)
        shmem_putmem(box, mine, sizeof(mine), (me + 1) % npes);
    shmem_barrier_all();
    int left = (me - 1 + npes) % npes;
    for (int i = 0; i < 4; i++)
        MPE_CHECK(box[i] == left + i, "box[%d] = %ld, not %d", i, box[i], left + i);
    /* The typed put is not wrapped: it reaches the library directly. */
    shmem_long_put(box, mine, 1, me);
    pshmem_barrier_all(); /* the tool's own call, not counted */
    MPE_CHECK(puts_seen == 3 && barriers_seen == 1, "the wrappers saw %d puts and %d barriers",
              puts_seen, barriers_seen);
    MPE_CHECK(box[0] == me, "typed put: box[0] = %ld", box[0]);
    if (me == 0)
        printf("PE 0: the profiling wrappers saw every call\n");
    shmem_finalize();
    return 0;
}
