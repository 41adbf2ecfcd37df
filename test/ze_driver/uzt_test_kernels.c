/*
 * Kernels for check_ze_driver, built as a host shared object and loaded with
 * zeModuleCreate(ZE_MODULE_FORMAT_NATIVE). ABI: ze_test_kernel.h.
 */
#include "ze_test_kernel.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#define KERNEL __attribute__((visibility("default")))

static uint32_t linear_id(const struct uzt_item *it)
{
    uint32_t nx = it->group_size[0] * it->group_count[0];
    uint32_t ny = it->group_size[1] * it->group_count[1];

    return it->global_id[0] + nx * (it->global_id[1] + ny * it->global_id[2]);
}

/* A module global the application reaches through copies only. */
KERNEL uint64_t uzt_test_global[4] = {1, 2, 3, 4};

/*
 * args: 0 uint64_t *counter, 1 uint32_t *ids, 2 uint32_t add.
 * Adds `add` to the counter once per work-item and stores global_id[0] + 1
 * at the item's linear id (0xffffffff when uzt_item_current() disagrees).
 */
KERNEL void uzt_test_count(const struct uzt_item *item, void *const *args)
{
    _Atomic uint64_t *counter = *(_Atomic uint64_t *const *)args[0];
    uint32_t *ids = *(uint32_t *const *)args[1];
    uint32_t add = *(const uint32_t *)args[2];

    atomic_fetch_add(counter, add);
    ids[linear_id(item)] = uzt_item_current() == item ? item->global_id[0] + 1 : 0xffffffffu;
}

/*
 * args: 0 uint32_t *arrived, 1 uint32_t *out. Every work-item waits until
 * all have arrived, then writes how many it saw: only possible when all
 * work-items run at once.
 */
KERNEL void uzt_test_rendezvous(const struct uzt_item *item, void *const *args)
{
    _Atomic uint32_t *arrived = *(_Atomic uint32_t *const *)args[0];
    uint32_t *out = *(uint32_t *const *)args[1];
    uint32_t total = item->group_size[0] * item->group_size[1] * item->group_size[2] *
                     item->group_count[0] * item->group_count[1] * item->group_count[2];

    atomic_fetch_add(arrived, 1);
    while (atomic_load(arrived) < total)
        sched_yield();
    out[linear_id(item)] = atomic_load(arrived);
}

/* args: 0 uint64_t *out. out[i] = 10 * uzt_test_global[i]; then the global is doubled. */
KERNEL void uzt_test_global_rw(const struct uzt_item *item, void *const *args)
{
    uint64_t *out = *(uint64_t *const *)args[0];

    (void)item;
    for (int i = 0; i < 4; i++) {
        out[i] = 10 * uzt_test_global[i];
        uzt_test_global[i] *= 2;
    }
}
