/* The device API in kernels on the ze backend: a program creates a Level
 * Zero module from device code that includes <ushmem/device.h> (here a
 * native module of the CPU test driver, test/unit/ze/ze_kernels.c), in the
 * PE's context on the PE's device (shmemx_ze_context, shmemx_ze_device),
 * gives it the device state (shmemx_ze_module_init) and launches kernels
 * that put, get, add atomically, signal, exchange with the device alltoall
 * and meet at the device barrier.
 * The host never loads heap memory: every check reads it back with
 * shmem_getmem. Checked on every PE, each round: every work-item's word
 * and block from every PE, the words read back from every PE, the
 * counters, the signal and its data, and every alltoall word (A2A_LONGS per
 * pair, more than one landing chunk when peers are reached by messages).
 *
 * Usage: ze_device_api MODULE.so [ROUNDS]   (default 3; from 2 on, each
 * round finds the flags, counters and barrier epochs the one before left) */
#include <level_zero/ze_api.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpe/mpe_check.h"

#define ITEMS 16 /* work-items per launch: 2 groups of 8 */
#define ROUNDS 3 /* by default */
#define A2A_LONGS 10000 /* 80000 bytes per pair: two landing chunks */

static int me, npes;

#define ZE_CHECK(call)                                                                    \
    do {                                                                                  \
        ze_result_t r_ = (call);                                                          \
        MPE_CHECK(r_ == ZE_RESULT_SUCCESS, "%s returned 0x%x", #call, (unsigned)r_);      \
    } while (0)

static struct {
    ze_context_handle_t ctx;
    ze_command_list_handle_t list;
    ze_event_pool_handle_t pool;
    ze_event_handle_t done;
} q;

/* Launches kernel over ITEMS work-items (or one), waits for it. */
static void launch(ze_kernel_handle_t k, uint32_t groups, uint32_t size)
{
    ZE_CHECK(zeKernelSetGroupSize(k, size, 1, 1));
    ze_group_count_t count = {groups, 1, 1};
    ZE_CHECK(zeCommandListAppendLaunchKernel(q.list, k, &count, q.done, 0, NULL));
    ZE_CHECK(zeEventHostSynchronize(q.done, UINT64_MAX));
    ZE_CHECK(zeEventHostReset(q.done));
}

static long value(int src, int dst, uint32_t w, long r)
{
    return r * 1000000 + src * 10000 + dst * 100 + (long)w;
}

static void *read_file(const char *path, size_t *size_p)
{
    FILE *f = fopen(path, "rb");
    MPE_CHECK(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)n);
    MPE_CHECK(buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
    fclose(f);
    *size_p = (size_t)n;
    return buf;
}

int main(int argc, char **argv)
{
    long rounds = argc == 3 ? strtol(argv[2], NULL, 10) : ROUNDS;
    if (argc < 2 || argc > 3 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "usage: ze_device_api MODULE.so [ROUNDS, 1 to 1000]\n");
        return 2;
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    q.ctx = shmemx_ze_context();
    ze_device_handle_t dev = shmemx_ze_device();
    MPE_CHECK(q.ctx != NULL && dev != NULL, "no Level Zero context or device: not the ze backend?");

    size_t size;
    void *bytes = read_file(argv[1], &size);
    ze_module_desc_t mdesc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                              .format = ZE_MODULE_FORMAT_NATIVE,
                              .inputSize = size,
                              .pInputModule = bytes};
    ze_module_handle_t module;
    ZE_CHECK(zeModuleCreate(q.ctx, dev, &mdesc, &module, NULL));
    free(bytes);
    MPE_CHECK(shmemx_ze_module_init(module) == 0, "shmemx_ze_module_init failed");
    MPE_CHECK(shmemx_ze_module_init(NULL) != 0, "a NULL module was accepted");

    ze_kernel_handle_t put_all, get_all, atomics, signal_ring, alltoall;
    ze_kernel_desc_t kdesc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC};
    kdesc.pKernelName = "put_all";
    ZE_CHECK(zeKernelCreate(module, &kdesc, &put_all));
    kdesc.pKernelName = "atomics";
    ZE_CHECK(zeKernelCreate(module, &kdesc, &atomics));
    kdesc.pKernelName = "signal_ring";
    ZE_CHECK(zeKernelCreate(module, &kdesc, &signal_ring));
    kdesc.pKernelName = "get_all";
    ZE_CHECK(zeKernelCreate(module, &kdesc, &get_all));
    kdesc.pKernelName = "alltoall";
    ZE_CHECK(zeKernelCreate(module, &kdesc, &alltoall));

    ze_command_queue_desc_t qdesc = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                     .ordinal = 0,
                                     .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ZE_CHECK(zeCommandListCreateImmediate(q.ctx, dev, &qdesc, &q.list));
    ze_event_pool_desc_t pdesc = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                  .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                  .count = 1};
    ZE_CHECK(zeEventPoolCreate(q.ctx, &pdesc, 1, &dev, &q.pool));
    ze_event_desc_t edesc = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                             .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                             .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ZE_CHECK(zeEventCreate(q.pool, &edesc, &q.done));

    long *slots = shmem_calloc((size_t)npes * ITEMS, sizeof(long));
    long *block_dst = shmem_calloc((size_t)npes * ITEMS * 8, sizeof(long));
    long *block_src = shmem_malloc(ITEMS * 8 * sizeof(long));
    long *counter = shmem_calloc(2, sizeof(long));
    int *errors = shmem_calloc(1, sizeof(int));
    long *data = shmem_calloc(1, sizeof(long));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *gathered = shmem_calloc((size_t)npes * ITEMS * 2, sizeof(long));
    long *a2a_src = shmem_malloc((size_t)npes * A2A_LONGS * sizeof(long));
    long *a2a_dst = shmem_calloc((size_t)npes * A2A_LONGS, sizeof(long));
    size_t host_longs = (size_t)npes * (ITEMS * 8 > A2A_LONGS ? ITEMS * 8 : A2A_LONGS);
    long *host = malloc(sizeof(long) * host_longs);
    MPE_CHECK(slots && block_dst && block_src && counter && errors && data && sig && gathered &&
                  a2a_src && a2a_dst && host,
              "allocation failed");

    for (long round = 1; round <= rounds; round++) {
        /* Puts from every work-item to every PE. */
        for (int i = 0; i < ITEMS * 8; i++)
            host[i] = round * 7777 + me * 1000 + i;
        shmem_putmem(block_src, host, ITEMS * 8 * sizeof(long), me);
        shmem_barrier_all();
        ZE_CHECK(zeKernelSetArgumentValue(put_all, 0, sizeof(slots), &slots));
        ZE_CHECK(zeKernelSetArgumentValue(put_all, 1, sizeof(block_dst), &block_dst));
        ZE_CHECK(zeKernelSetArgumentValue(put_all, 2, sizeof(block_src), &block_src));
        ZE_CHECK(zeKernelSetArgumentValue(put_all, 3, sizeof(round), &round));
        launch(put_all, 2, ITEMS / 2);
        shmem_barrier_all();
        shmem_getmem(host, slots, sizeof(long) * (size_t)npes * ITEMS, me);
        for (int src = 0; src < npes; src++)
            for (uint32_t w = 0; w < ITEMS; w++)
                MPE_CHECK(host[src * ITEMS + w] == value(src, me, w, round),
                          "round %ld: slot of PE %d work-item %u is %ld, want %ld", round, src,
                          w, host[src * ITEMS + w], value(src, me, w, round));
        shmem_getmem(host, block_dst, sizeof(long) * (size_t)npes * ITEMS * 8, me);
        for (int src = 0; src < npes; src++)
            for (int i = 0; i < ITEMS * 8; i++)
                MPE_CHECK(host[src * ITEMS * 8 + i] == round * 7777 + src * 1000 + i,
                          "round %ld: block word %d from PE %d is %ld", round, i, src,
                          host[src * ITEMS * 8 + i]);

        /* Every work-item reads its words back from every PE (g, getmem). */
        uint32_t items = ITEMS;
        ZE_CHECK(zeKernelSetArgumentValue(get_all, 0, sizeof(slots), &slots));
        ZE_CHECK(zeKernelSetArgumentValue(get_all, 1, sizeof(gathered), &gathered));
        ZE_CHECK(zeKernelSetArgumentValue(get_all, 2, sizeof(items), &items));
        launch(get_all, 2, ITEMS / 2);
        shmem_getmem(host, gathered, sizeof(long) * (size_t)npes * ITEMS * 2, me);
        for (int pe = 0; pe < npes; pe++)
            for (uint32_t w = 0; w < ITEMS; w++)
                for (int k = 0; k < 2; k++)
                    MPE_CHECK(host[((size_t)pe * ITEMS + w) * 2 + k] == value(me, pe, w, round),
                              "round %ld: work-item %u's %s from PE %d is %ld, want %ld", round,
                              w, k == 0 ? "g" : "getmem", pe,
                              host[((size_t)pe * ITEMS + w) * 2 + k], value(me, pe, w, round));
        shmem_barrier_all();

        /* Atomics from every work-item on every PE's counters. */
        long zero[2] = {0, 0};
        shmem_putmem(counter, zero, sizeof(zero), me);
        shmem_barrier_all();
        ZE_CHECK(zeKernelSetArgumentValue(atomics, 0, sizeof(counter), &counter));
        ZE_CHECK(zeKernelSetArgumentValue(atomics, 1, sizeof(errors), &errors));
        launch(atomics, 2, ITEMS / 2);
        shmem_barrier_all();
        long got[2];
        int errs;
        shmem_getmem(got, counter, sizeof(got), me);
        shmem_getmem(&errs, errors, sizeof(errs), me);
        MPE_CHECK(got[0] == 4L * ITEMS * npes, "round %ld: fetch_add counter %ld, want %ld",
                  round, got[0], 4L * ITEMS * npes);
        MPE_CHECK(got[1] == (long)npes * ITEMS * (ITEMS + 1) / 2,
                  "round %ld: add counter %ld, want %ld", round, got[1],
                  (long)npes * ITEMS * (ITEMS + 1) / 2);
        MPE_CHECK(errs == 0, "round %ld: %d fetch_adds went backwards", round, errs);

        /* A signal ring and the device barrier, one work-item per PE. */
        ZE_CHECK(zeKernelSetArgumentValue(signal_ring, 0, sizeof(data), &data));
        ZE_CHECK(zeKernelSetArgumentValue(signal_ring, 1, sizeof(sig), &sig));
        ZE_CHECK(zeKernelSetArgumentValue(signal_ring, 2, sizeof(round), &round));
        launch(signal_ring, 1, 1);
        long d;
        uint64_t s;
        shmem_getmem(&d, data, sizeof(d), me);
        shmem_getmem(&s, sig, sizeof(s), me);
        int prev = (me + npes - 1) % npes;
        MPE_CHECK(s == (uint64_t)round && d == round * 100 + prev,
                  "round %ld: signal %llu, data %ld from PE %d", round, (unsigned long long)s, d,
                  prev);
        shmem_barrier_all();

        /* The device alltoall: block pe of this PE's source goes to PE pe. */
        for (int pe = 0; pe < npes; pe++)
            for (int i = 0; i < A2A_LONGS; i++)
                host[(size_t)pe * A2A_LONGS + i] = round * 1000000 + me * 10000 + pe * 100 + i;
        shmem_putmem(a2a_src, host, (size_t)npes * A2A_LONGS * sizeof(long), me);
        shmem_barrier_all();
        size_t a2a_bytes = A2A_LONGS * sizeof(long);
        ZE_CHECK(zeKernelSetArgumentValue(alltoall, 0, sizeof(a2a_dst), &a2a_dst));
        ZE_CHECK(zeKernelSetArgumentValue(alltoall, 1, sizeof(a2a_src), &a2a_src));
        ZE_CHECK(zeKernelSetArgumentValue(alltoall, 2, sizeof(a2a_bytes), &a2a_bytes));
        launch(alltoall, 1, 1);
        shmem_getmem(host, a2a_dst, (size_t)npes * a2a_bytes, me);
        for (int pe = 0; pe < npes; pe++)
            for (int i = 0; i < A2A_LONGS; i++)
                MPE_CHECK(host[(size_t)pe * A2A_LONGS + i] ==
                              round * 1000000 + pe * 10000 + me * 100 + i,
                          "round %ld: alltoall word %d from PE %d is %ld, want %ld", round, i,
                          pe, host[(size_t)pe * A2A_LONGS + i],
                          round * 1000000 + pe * 10000 + me * 100 + i);
        shmem_barrier_all();
    }

    zeEventDestroy(q.done);
    zeEventPoolDestroy(q.pool);
    zeCommandListDestroy(q.list);
    zeKernelDestroy(alltoall);
    zeKernelDestroy(get_all);
    zeKernelDestroy(signal_ring);
    zeKernelDestroy(atomics);
    zeKernelDestroy(put_all);
    zeModuleDestroy(module);
    free(host);
    shmem_free(a2a_dst);
    shmem_free(a2a_src);
    shmem_free(gathered);
    shmem_free(sig);
    shmem_free(data);
    shmem_free(errors);
    shmem_free(counter);
    shmem_free(block_src);
    shmem_free(block_dst);
    shmem_free(slots);
    shmem_finalize();
    if (me == 0)
        printf("ze device API: %d PEs, %ld rounds of %d work-items: all checks passed\n", npes,
               rounds, ITEMS);
    return 0;
}
