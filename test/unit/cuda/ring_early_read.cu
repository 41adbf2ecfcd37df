/* A kernel as a user writes it, each p through the proxy's ring when the
 * route says so: ring_early_read.sh checks in its PTX that the counter's
 * copy is read before the ticket's atomic (ring.h, ushmem_ring_reserve_on). */
#include <ushmem/device.h>

__global__ void put_loop(long *x, int iters)
{
    int pe = (ushmem_my_pe() + 1) % ushmem_n_pes();
    for (int i = 0; i < iters; i++)
        ushmem_long_p(x, i, pe);
    ushmem_quiet();
}
