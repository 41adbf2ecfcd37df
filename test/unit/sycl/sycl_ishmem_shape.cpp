/* A program in the shape of Intel SHMEM's examples, ported by renaming
 * alone (ishmem_ -> ushmem_, ishmemx_ -> ushmemx_, ishmem_init ->
 * shmem_init, <ishmem.h> -> <ushmem.h>): symmetric buffers from
 * ushmem_malloc, kernels on a plain queue calling the device API per
 * work-item and per work-group, host barriers between kernels, the check
 * made by a kernel into host memory, and ushmem_finalize. One line more
 * than renaming: the queue takes ushmemx_sycl_device(), the PE's GPU on
 * NVIDIA (Intel SHMEM's launcher hides the other GPUs instead; a plain
 * queue is the same on a CPU device). */
#include <sycl/sycl.hpp>
#include <ushmem.h>
#include <ushmemx.h>

#include <cstdio>

constexpr int N = 256;       /* elements per PE */
constexpr int GROUP = 64;    /* work-items per work-group */

int main()
{
    shmem_init();
    int my_pe = ushmem_my_pe();
    int npes = ushmem_n_pes();
    int next = (my_pe + 1) % npes;
    sycl::queue q{ushmemx_sycl_device()};

    int *src = (int *)ushmem_malloc(N * sizeof(int));
    int *fetched = (int *)ushmem_malloc(N * sizeof(int));
    int *pushed = (int *)ushmem_calloc(N, sizeof(int));
    int *gathered = (int *)ushmem_align(64, (size_t)npes * sizeof(int));
    int *total = (int *)ushmem_calloc(1, sizeof(int));
    uint64_t *arrived = (uint64_t *)ushmem_calloc(1, sizeof(uint64_t));
    int *errors = sycl::malloc_host<int>(1, q);
    *errors = 0;

    q.parallel_for(sycl::range<1>(N), [=](sycl::id<1> i) { src[i] = my_pe * N + (int)i; }).wait();
    ushmem_barrier_all();

    /* Every work-item reads one element of the next PE. */
    q.parallel_for(sycl::range<1>(N), [=](sycl::id<1> i) {
        fetched[i] = ushmem_int_g(&src[i], next);
    }).wait();

    /* Every work-group puts its slice to the next PE, and its leader adds
     * to the next PE's count and signals its arrival. */
    q.parallel_for(sycl::nd_range<1>(N, GROUP), [=](sycl::nd_item<1> it) {
        auto grp = it.get_group();
        size_t off = grp.get_group_linear_id() * GROUP;
        ushmemx_int_put_work_group(pushed + off, src + off, GROUP, next, grp);
        ushmemx_fence_work_group(grp);
        if (grp.leader()) {
            ushmem_int_atomic_add(total, (int)off, next);
            ushmemx_signal_add(arrived, 1, next);
        }
        ushmemx_quiet_work_group(grp);
    }).wait();

    /* One work-item per PE: a base collective. */
    q.single_task([=] { ushmem_fcollectmem(gathered, &src[0], sizeof(int)); }).wait();
    ushmem_barrier_all();

    /* The check, as a kernel writing into host memory. */
    int prev = (my_pe + npes - 1) % npes;
    q.single_task([=] {
        ushmem_signal_wait_until(arrived, USHMEM_CMP_EQ, N / GROUP);
        for (int i = 0; i < N; i++) {
            if (fetched[i] != next * N + i)
                (*errors)++;
            if (pushed[i] != prev * N + i)
                (*errors)++;
        }
        for (int pe = 0; pe < npes; pe++)
            if (gathered[pe] != pe * N)
                (*errors)++;
        int want = 0;
        for (int g = 0; g < N / GROUP; g++)
            want += g * GROUP;
        if (*total != want)
            (*errors)++;
    }).wait();

    if (*errors != 0)
        printf("PE %d: %d errors\n", my_pe, *errors);
    else if (my_pe == 0)
        printf("sycl_ishmem_shape: %d PEs, every check passed\n", npes);
    int failed = *errors != 0;

    ushmem_barrier_all();
    sycl::free(errors, q);
    ushmem_free(arrived);
    ushmem_free(total);
    ushmem_free(gathered);
    ushmem_free(pushed);
    ushmem_free(fetched);
    ushmem_free(src);
    ushmem_finalize();
    return failed;
}
