/* An out-of-band exchange for Check suites whose "PEs" are forked processes
 * sharing one anonymous mapping: the barrier and allgather that the host's
 * bootstrap provides in a real job. */
#ifndef USHMEM_TEST_FAKE_OOB_H
#define USHMEM_TEST_FAKE_OOB_H

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "child_util.h"
#include "src/common/status.h"

#define FAKE_OOB_MAX_PES 8
#define FAKE_OOB_MAX_CARD 512

struct fake_oob {
    atomic_int arrived;
    atomic_int generation;
    int size;
    unsigned char slots[FAKE_OOB_MAX_PES][FAKE_OOB_MAX_CARD];
};

static inline ushmem_status_t fake_oob_barrier(struct fake_oob *oob)
{
    int gen = atomic_load(&oob->generation);
    if (atomic_fetch_add(&oob->arrived, 1) == oob->size - 1) {
        atomic_store(&oob->arrived, 0);
        atomic_fetch_add(&oob->generation, 1);
        return USHMEM_OK;
    }
    double deadline = now_s() + 20.0;
    unsigned spins = 0;
    while (atomic_load(&oob->generation) == gen) {
        if (now_s() > deadline)
            return USHMEM_ERR_TIMEOUT;
        if (spins++ < 100) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return USHMEM_OK;
}

static inline ushmem_status_t fake_oob_allgather(struct fake_oob *oob, int rank, const void *mine,
                                                 void *all, size_t len)
{
    if (len > FAKE_OOB_MAX_CARD)
        return USHMEM_ERR_INVALID_PARAM;
    memcpy(oob->slots[rank], mine, len);
    ushmem_status_t st = fake_oob_barrier(oob);
    if (st != USHMEM_OK)
        return st;
    for (int i = 0; i < oob->size; i++)
        memcpy((unsigned char *)all + (size_t)i * len, oob->slots[i], len);
    return fake_oob_barrier(oob); /* nobody overwrites a slot still being read */
}

#endif
