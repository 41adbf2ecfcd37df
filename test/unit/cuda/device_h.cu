/* Compile check: include/ushmem/device.h in CUDA device code. The kernel
 * uses one call of each road's kind (a put, a typed p, a fetching atomic,
 * quiet) so that nvcc instantiates the CUDA helpers; it is never run. */
#include <ushmem/device.h>

__global__ void device_h_kernel(long *dest, const long *src, unsigned long long *counter,
                                unsigned long long *olds, size_t n)
{
    int pe = (ushmem_my_pe() + 1) % ushmem_n_pes();

    ushmem_putmem(dest, src, n * sizeof(long), pe);
    ushmem_long_p(dest + threadIdx.x, (long)threadIdx.x, pe);
    olds[threadIdx.x] = ushmem_ulonglong_atomic_fetch_add(counter, 1ULL, pe);
    ushmem_uint64_atomic_xor((uint64_t *)counter + 1, 1, pe);
    ushmem_putmem_signal(dest, src, 8, (uint64_t *)counter + 2, 1, USHMEM_SIGNAL_ADD, pe);
    ushmem_fence();
    ushmem_quiet();
    if (threadIdx.x == 0)
        ushmem_barrier_all();
}
