/* Device code for the ze backend's device-API test (ze_device_api.c): a
 * native module of the Level Zero test driver (a host shared object that
 * the driver's helper process, its stand-in for a GPU, loads and runs, one
 * thread per work-item), written against <ushmem/device.h> in its device
 * module form. Argument i of a kernel is *(T *)args[i] (ze_test_kernel.h). */
#define USHMEM_DEVICE_MODULE 1
#include <ushmem/device.h>

#include "ze_test_kernel.h"

#define ARG(T, i) (*(T *)args[i])

/* The value work-item w of PE src puts for PE dst in round r. */
static long value(int src, int dst, uint32_t w, long r)
{
    return r * 1000000 + src * 10000 + dst * 100 + (long)w;
}

/* Every work-item w puts one long into slot [me][w] of every PE (p), and a
 * block of its own from a heap source with putmem, then quiets. Args: slots
 * (long[n_pes][items]), block_dst (long[n_pes][items][8]), block_src
 * (long[items][8]), round. */
__attribute__((visibility("default"))) void put_all(const struct uzt_item *item,
                                                    void *const *args)
{
    long *slots = ARG(long *, 0), *block_dst = ARG(long *, 1), *block_src = ARG(long *, 2);
    long round = ARG(long, 3);
    uint32_t w = item->global_id[0], items = item->group_size[0] * item->group_count[0];
    int me = ushmem_my_pe(), npes = ushmem_n_pes();
    for (int pe = 0; pe < npes; pe++) {
        ushmem_long_p(&slots[(size_t)me * items + w], value(me, pe, w, round), pe);
        ushmem_putmem(&block_dst[((size_t)me * items + w) * 8], &block_src[(size_t)w * 8],
                      8 * sizeof(long), pe);
    }
    ushmem_quiet();
}

/* Every work-item adds 1 to every PE's counter with fetch_add (the old
 * values it sees only grow), and w + 1 with a non-fetching add; one swap
 * per PE from work-item 0 onto a word nobody else touches. Args: counter
 * (long[2]), errors (int on this PE's heap). */
__attribute__((visibility("default"))) void atomics(const struct uzt_item *item,
                                                    void *const *args)
{
    long *counter = ARG(long *, 0);
    int *errors = ARG(int *, 1);
    uint32_t w = item->global_id[0];
    int npes = ushmem_n_pes(), me = ushmem_my_pe();
    for (int pe = 0; pe < npes; pe++) {
        long last = -1;
        for (int r = 0; r < 4; r++) {
            long old = ushmem_long_atomic_fetch_add(&counter[0], 1, pe);
            if (old <= last)
                ushmem_int_atomic_add(errors, 1, me);
            last = old;
        }
        ushmem_long_atomic_add(&counter[1], (long)w + 1, pe);
    }
    ushmem_quiet();
}

/* One work-item per PE: a put with signal to the next PE, a wait for the
 * previous PE's, then the device barrier. Args: data (long), sig
 * (uint64_t), round. */
__attribute__((visibility("default"))) void signal_ring(const struct uzt_item *item,
                                                        void *const *args)
{
    long *data = ARG(long *, 0);
    uint64_t *sig = ARG(uint64_t *, 1);
    long round = ARG(long, 2);
    (void)item;
    int me = ushmem_my_pe(), next = (me + 1) % ushmem_n_pes();
    long v = round * 100 + me;
    ushmem_putmem_signal(data, &v, sizeof(v), sig, (uint64_t)round, USHMEM_SIGNAL_SET, next);
    ushmem_signal_wait_until(sig, USHMEM_CMP_GE, (uint64_t)round);
    ushmem_barrier_all();
}

/* Every work-item w reads back from every PE what it put there in put_all:
 * the slot word with g, the same word again with getmem into a heap
 * buffer. Args: slots, gathered (long[n_pes][items][2] on this PE's heap),
 * items. */
__attribute__((visibility("default"))) void get_all(const struct uzt_item *item,
                                                    void *const *args)
{
    long *slots = ARG(long *, 0), *gathered = ARG(long *, 1);
    uint32_t items = ARG(uint32_t, 2), w = item->global_id[0];
    int me = ushmem_my_pe(), npes = ushmem_n_pes();
    for (int pe = 0; pe < npes; pe++) {
        long *mine = &gathered[((size_t)pe * items + w) * 2];
        mine[0] = ushmem_long_g(&slots[(size_t)me * items + w], pe);
        ushmem_getmem(&mine[1], &slots[(size_t)me * items + w], sizeof(long), pe);
    }
}

/* One work-item per PE: the device alltoall of nbytes per PE. Args: dest,
 * src, nbytes. */
__attribute__((visibility("default"))) void alltoall(const struct uzt_item *item,
                                                     void *const *args)
{
    (void)item;
    ushmemx_alltoallmem_block(ARG(void *, 0), ARG(const void *, 1), ARG(size_t, 2));
}
