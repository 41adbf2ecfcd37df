/* The device API's speed from SYCL kernels, for comparison with the CUDA
 * benchmarks of the same shape (test/perf/cuda: dev_put_bw --scope block,
 * dev_latency --op p), run beside them by scripts/gpu_bench.sh:
 *
 *   put   PE 0 puts `size` bytes into PE 1 with ushmemx_putmem_nbi_work_group
 *         from --groups work-groups of --items work-items, each group its
 *         share, --iters times in one kernel, then one quiet; the kernel's
 *         start and end (SYCL event profiling, CUDA events underneath, as
 *         dev_put_bw's) give the bandwidth. PE 1 checks every
 *         word of the last size (a kernel), so a wrong put fails the run.
 *   p     ushmem_long_p ping-pong PE 0 <-> PE 1 in one work-item each: PE 0
 *         writes i into PE 1's flag and waits for PE 1 to write i back;
 *         half the round trip, --iters of them after --warmup, timed by the
 *         kernel's profiling events; a first kernel of --warmup round trips
 *         loads the module.
 *
 * Usage: oshrun -n 2 sycl_bench [--op put|p] [--groups N] [--items N]
 *        [--min-size B] [--max-size B] [--iters N] [--warmup N]
 * Output: CSV as the CUDA benchmarks print it (size,bandwidth_gbs or
 * op,latency_us), comments starting with '#'. */
#include <shmem.h>
#include <sycl/sycl.hpp>
#include <ushmem/device.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

struct options {
    int put = 1;
    size_t groups = 32, items = 1024;
    size_t min_size = 8, max_size = 64u << 20;
    long iters = -1, warmup = 100;
};

/* The kernel's run time from its profiling events, in microseconds. */
static double kernel_us(sycl::event e)
{
    e.wait();
    return (double)(e.get_profiling_info<sycl::info::event_profiling::command_end>() -
                    e.get_profiling_info<sycl::info::event_profiling::command_start>()) /
           1e3;
}

static uint64_t pattern(int pe, size_t i)
{
    return ((uint64_t)(pe + 1) << 56) ^ (i * 0x9e3779b97f4a7c15ull >> 8);
}

static int parse(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--op") == 0 && v != NULL && (strcmp(v, "put") == 0 || strcmp(v, "p") == 0)) {
            o->put = strcmp(v, "put") == 0;
        } else if (v != NULL && (strcmp(a, "--groups") == 0 || strcmp(a, "--items") == 0 ||
                                 strcmp(a, "--min-size") == 0 || strcmp(a, "--max-size") == 0 ||
                                 strcmp(a, "--iters") == 0 || strcmp(a, "--warmup") == 0)) {
            long long n = strtoll(v, &end, 10);
            /* Sizes may end in K, M or G (powers of 1024), as the CUDA ones. */
            int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
            if (shift != 0)
                end++;
            if (end == v || *end != '\0' || n < 0 || n > (1ll << 40))
                return -1;
            n <<= shift;
            if (strcmp(a, "--groups") == 0)
                o->groups = (size_t)n;
            else if (strcmp(a, "--items") == 0)
                o->items = (size_t)n;
            else if (strcmp(a, "--min-size") == 0)
                o->min_size = (size_t)n;
            else if (strcmp(a, "--max-size") == 0)
                o->max_size = (size_t)n;
            else if (strcmp(a, "--iters") == 0)
                o->iters = n;
            else
                o->warmup = n;
        } else {
            fprintf(stderr, "sycl_bench: bad option or value near '%s'\n", a);
            return -1;
        }
    }
    if (o->groups < 1 || o->items < 1 || o->min_size < 8 || o->min_size % 8 ||
        o->max_size % 8 || o->min_size > o->max_size || o->max_size > (1u << 30)) {
        fprintf(stderr, "sycl_bench: groups, items >= 1; sizes multiples of 8 in [8, 1G]\n");
        return -1;
    }
    return 0;
}

static int bench_put(sycl::queue &q, const options &o, int me)
{
    char *src = (char *)shmem_malloc(o.max_size);
    char *dst = (char *)shmem_malloc(o.max_size);
    unsigned *bad = sycl::malloc_shared<unsigned>(1, q);
    if (src == NULL || dst == NULL || bad == NULL) {
        fprintf(stderr, "PE %d: cannot allocate 2 x %zu bytes\n", me, o.max_size);
        return 1;
    }
    size_t words = o.max_size / 8;
    q.parallel_for(sycl::range<1>(words), [=](sycl::id<1> i) {
         ((uint64_t *)src)[i] = pattern(me, i);
     }).wait();
    size_t groups = o.groups, items = o.items;
    if (me == 0) {
        printf("# sycl_put_bw_work_group,ushmem,%d\n", shmem_n_pes());
        printf("size,bandwidth_gbs\n");
        printf("# PE 0 -> PE 1, ushmemx_putmem_nbi_work_group, %zu work-groups x %zu work-items, "
               "SYCL on %s\n",
               groups, items, q.get_device().get_info<sycl::info::device::name>().c_str());
    }
    int failed = 0;
    for (size_t size = o.min_size; size <= o.max_size; size *= 2) {
        long iters = o.iters > 0 ? o.iters : size <= (1u << 20) ? 100 : 20;
        q.memset(dst, 0, size).wait();
        shmem_barrier_all();
        double us = 0;
        if (me == 0) {
            auto run = [&](long n) {
                return q.parallel_for(sycl::nd_range<1>(groups * items, items), [=](sycl::nd_item<1> it) {
                     sycl::group<1> g = it.get_group();
                     size_t share = ((size + 15) / 16 + groups - 1) / groups * 16;
                     size_t off = g.get_group_linear_id() * share;
                     size_t len = off >= size ? 0 : size - off < share ? size - off : share;
                     for (long k = 0; k < n && len > 0; k++)
                         ushmemx_putmem_nbi_work_group(dst + off, src + off, len, 1, g);
                     ushmemx_quiet_work_group(g);
                 });
            };
            run(2).wait(); /* warm-up */
            us = kernel_us(run(iters));
        }
        shmem_barrier_all();
        if (me == 1) {
            *bad = 0;
            q.parallel_for(sycl::range<1>(size / 8), [=](sycl::id<1> i) {
                 if (((const uint64_t *)dst)[i] != pattern(0, i))
                     sycl::atomic_ref<unsigned, sycl::memory_order::relaxed,
                                      sycl::memory_scope::device>(*bad)
                         .fetch_add(1u);
             }).wait();
            if (*bad != 0) {
                fprintf(stderr, "PE 1: %u of %zu words wrong after the %zu-byte puts\n", *bad,
                        size / 8, size);
                failed = 1;
            }
        }
        shmem_barrier_all();
        if (me == 0)
            printf("%zu,%.3f\n", size, (double)size * iters / us / 1e3);
    }
    static int all, any; /* symmetric */
    all = failed;
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, &any, &all, 1);
    if (any && me == 0)
        printf("FAIL: put data wrong\n");
    sycl::free(bad, q);
    shmem_free(dst);
    shmem_free(src);
    return any;
}

static int bench_p(sycl::queue &q, const options &o, int me)
{
    long *flag = (long *)shmem_calloc(1, sizeof(long));
    long iters = o.iters > 0 ? o.iters : 10000, warmup = o.warmup;
    if (flag == NULL) {
        fprintf(stderr, "PE %d: shmem_calloc failed\n", me);
        return 1;
    }
    shmem_barrier_all();
    double us = 0;
    if (me < 2) {
        auto run = [&](long first, long last) {
            return q.single_task([=] {
             for (long i = first; i <= last; i++) {
                 if (me == 0) {
                     ushmem_long_p(flag, i, 1);
                     ushmem_long_wait_until(flag, USHMEM_CMP_EQ, i);
                 } else {
                     ushmem_long_wait_until(flag, USHMEM_CMP_EQ, i);
                     ushmem_long_p(flag, i, 0);
                 }
             }
             ushmem_quiet();
         });
        };
        run(1, warmup).wait();
        us = kernel_us(run(warmup + 1, warmup + iters));
    }
    shmem_barrier_all();
    if (me == 0) {
        printf("# sycl_latency,ushmem,%d\n", shmem_n_pes());
        printf("op,latency_us\n");
        printf("# p: long_p ping-pong, half round trip, %ld iterations after %ld warm-up, "
               "kernel profiling events, SYCL on %s\n",
               iters, warmup, q.get_device().get_info<sycl::info::device::name>().c_str());
        printf("p,%.3f\n", us / (double)iters / 2);
    }
    shmem_free(flag);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: sycl_bench [--op put|p] [--groups N] [--items N] [--min-size B] "
                        "[--max-size B] [--iters N] [--warmup N] (sizes may end in K, M, G)\n");
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe(), rc = 0;
    if (shmem_n_pes() < 2) {
        if (me == 0)
            printf("sycl_bench: needs at least 2 PEs; skipped\n");
        shmem_finalize();
        return 0;
    }
    sycl::queue q{ushmemx_sycl_device(), sycl::property::queue::enable_profiling{}};
    rc = o.put ? bench_put(q, o, me) : bench_p(q, o, me);
    shmem_finalize();
    return rc;
}
