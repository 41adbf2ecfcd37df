/* The victim of the fault-fabric-stranger tests (fabric_stranger.sh), run
 * with every peer over the fabric (USHMEM_IPC=0):
 *
 *   fabric_victim DIR WAIT_S
 *
 * Every PE puts known values in its first heap allocation and in a global;
 * PE 0 then writes its pid to DIR/ready (the script finds its endpoint's
 * ports from it, as a stranger finds them in /proc/net/tcp) and waits, at
 * most WAIT_S seconds, for DIR/done, while the stranger attacks its endpoint.
 * Afterwards PE 0 checks that both values are unchanged and that calls
 * through its GOT still work (puts, printf), and PE 1 reads both values of
 * PE 0 over the fabric, which must still serve the job. Exit 0 only then. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../mpe/mpe_check.h"

#define HEAP_VALUE 0x314c415650414548L   /* "HEAPVAL1" in memory */
#define GLOBAL_VALUE 0x324c4156424f4c47L /* "GLOBVAL2" in memory */

long victim_global = GLOBAL_VALUE; /* in .data: a symmetric global */

static void wait_for(const char *path, int seconds)
{
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (int i = 0; i < seconds * 50 && access(path, F_OK) != 0; i++)
        nanosleep(&nap, NULL);
}

int main(int argc, char **argv)
{
    shmem_init();
    MPE_CHECK(argc == 3 && atoi(argv[2]) > 0, "usage: fabric_victim DIR WAIT_S\n");
    int wait_s = atoi(argv[2]);
    int me = shmem_my_pe();
    long *word = shmem_malloc(sizeof(long)); /* the job's first allocation */
    MPE_CHECK(word != NULL, "shmem_malloc failed\n");
    *word = HEAP_VALUE;
    shmem_barrier_all();

    if (me == 0) {
        char path[4096], tmp[4096];
        snprintf(path, sizeof(path), "%s/ready", argv[1]);
        snprintf(tmp, sizeof(tmp), "%s/ready.tmp", argv[1]);
        FILE *f = fopen(tmp, "w");
        MPE_CHECK(f != NULL && fprintf(f, "%d\n", (int)getpid()) > 0 && fclose(f) == 0 &&
                      rename(tmp, path) == 0,
                  "cannot write %s\n", path);
        snprintf(path, sizeof(path), "%s/done", argv[1]);
        wait_for(path, wait_s);
        MPE_CHECK(access(path, F_OK) == 0, "no %s after %d s\n", path, wait_s);
        MPE_CHECK(*word == HEAP_VALUE, "heap word 0x%lx, wanted 0x%lx\n", *word, HEAP_VALUE);
        MPE_CHECK(victim_global == GLOBAL_VALUE, "global 0x%lx, wanted 0x%lx\n", victim_global,
                  GLOBAL_VALUE);
        puts("fabric_victim: PE 0: heap word and global unchanged; puts works");
        printf("fabric_victim: PE 0: printf works\n");
        fflush(stdout);
    }
    shmem_barrier_all();
    if (me == 1) {
        long heap = 0, global = 0;
        shmem_getmem(&heap, word, sizeof(heap), 0);
        shmem_getmem(&global, &victim_global, sizeof(global), 0);
        MPE_CHECK(heap == HEAP_VALUE && global == GLOBAL_VALUE,
                  "PE 0's heap word 0x%lx and global 0x%lx over the fabric, wanted 0x%lx, "
                  "0x%lx\n", heap, global, HEAP_VALUE, GLOBAL_VALUE);
        printf("fabric_victim: PE 1 still reads PE 0's heap word and global over the fabric\n");
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_free(word);
    shmem_finalize();
    return 0;
}
