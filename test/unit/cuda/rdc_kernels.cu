/* The kernels of the two-translation-unit program (rdc_main.cu): each unit
 * that includes <ushmem/device.h> has its own copy of the device state,
 * written at shmem_init. This one puts and signals; rdc_main.cu waits and
 * runs the device barrier, whose epoch both units share through the heap. */
#include <ushmem/device.h>

__global__ void rdc_put(long *dst, const long *src, size_t n, uint64_t *sig)
{
    int peer = (ushmem_my_pe() + 1) % ushmem_n_pes();
    ushmemx_putmem_signal_block(dst, src, n * sizeof(long), sig, 1, USHMEM_SIGNAL_ADD, peer);
    if (threadIdx.x == 0)
        ushmem_barrier_all();
}

void launch_rdc_put(long *dst, const long *src, size_t n, uint64_t *sig)
{
    rdc_put<<<1, 256>>>(dst, src, n, sig);
}
