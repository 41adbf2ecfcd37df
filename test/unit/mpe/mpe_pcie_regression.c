/* Regression: on a node of PCIe-attached GPUs with peer mapping disabled,
 * Intel SHMEM's proxy thread dereferenced device pointers on the CPU and
 * the job died with SIGSEGV. Here the heap poses as device memory
 * (USHMEM_CPU_DEVICE_HEAP=1), mapping is off (USHMEM_IPC=0), every
 * device-API call goes through the proxy (USHMEM_DEVICE_ROUTE=proxy) and
 * the fabric only takes host memory (USHMEM_FABRIC_STAGING=1): puts, gets,
 * atomics and alltoall must complete with the right data, with every local
 * buffer in the device heap, and no CPU load or store of heap memory by the
 * program (results are read back with gets into private memory). */
#include <shmem.h>
#include <ushmem/device.h>

#include "mpe_check.h"

#define N 4096 /* longs per block: 32 KiB, above the fabric's inline sizes */

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *src = shmem_malloc(N * sizeof(long));
    long *dst = shmem_malloc((size_t)npes * N * sizeof(long));
    long *got = shmem_malloc(N * sizeof(long));
    long *counter = shmem_calloc(1, sizeof(long));
    long *a2a_src = shmem_malloc((size_t)npes * N * sizeof(long));
    long *a2a_dst = shmem_malloc((size_t)npes * N * sizeof(long));
    long *priv = malloc((size_t)npes * N * sizeof(long));
    MPE_CHECK(src && dst && got && counter && a2a_src && a2a_dst && priv, "allocation");

    /* Fill the device buffers from private memory, through the host API. */
    for (int i = 0; i < N; i++)
        priv[i] = 1000000L * me + i;
    shmem_putmem(src, priv, N * sizeof(long), me);
    for (int j = 0; j < npes; j++)
        for (int i = 0; i < N; i++)
            priv[j * N + i] = 1000000L * me + 1000L * j + i % 1000;
    shmem_putmem(a2a_src, priv, (size_t)npes * N * sizeof(long), me);
    shmem_barrier_all();

    /* Device API: put my block into every PE's dst[me], from device memory. */
    for (int pe = 0; pe < npes; pe++) {
        ushmem_putmem_nbi(&dst[me * N], src, N * sizeof(long), pe);
        ushmem_long_atomic_add(counter, me + 1, pe);
    }
    ushmem_quiet();
    ushmem_barrier_all();

    /* Get the right neighbour's src into device memory, then read it back. */
    int right = (me + 1) % npes;
    ushmem_getmem(got, src, N * sizeof(long), right);
    long fetched = ushmem_long_atomic_fetch_add(counter, 0, right);
    MPE_CHECK(fetched == (long)npes * (npes + 1) / 2, "counter on PE %d = %ld", right, fetched);
    shmem_getmem(priv, got, N * sizeof(long), me);
    for (int i = 0; i < N; i++)
        MPE_CHECK(priv[i] == 1000000L * right + i, "got[%d] = %ld", i, priv[i]);
    shmem_getmem(priv, dst, (size_t)npes * N * sizeof(long), me);
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i < N; i++)
            MPE_CHECK(priv[pe * N + i] == 1000000L * pe + i, "dst[%d][%d] = %ld", pe, i,
                      priv[pe * N + i]);

    /* Host alltoall on the same heap. */
    shmem_long_alltoall(SHMEM_TEAM_WORLD, a2a_dst, a2a_src, N);
    shmem_getmem(priv, a2a_dst, (size_t)npes * N * sizeof(long), me);
    for (int j = 0; j < npes; j++)
        for (int i = 0; i < N; i++)
            MPE_CHECK(priv[j * N + i] == 1000000L * j + 1000L * me + i % 1000,
                      "alltoall block %d [%d] = %ld", j, i, priv[j * N + i]);

    shmem_barrier_all();
    free(priv);
    shmem_free(a2a_dst);
    shmem_free(a2a_src);
    shmem_free(counter);
    shmem_free(got);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
