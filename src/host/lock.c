/* Distributed locks: a ticket lock on PE 0's copy of the symmetric long. Its
 * low 32 bits count the tickets served and its high 32 bits the tickets
 * handed out, each changed with 32-bit atomics so both wrap cleanly. Tickets
 * make the lock fair: PEs acquire it in the order they asked. */
#include <shmem.h>

#include "internal.h"

#define LOCK_PE 0

static uint32_t *serving_word(long *lock) { return (uint32_t *)lock; }
static uint32_t *next_word(long *lock) { return (uint32_t *)lock + 1; }

static void check_lock(const char *call, long *lock)
{
    ushmemi_check_init(call);
    if (lock == NULL || ((uintptr_t)lock % sizeof(long)) != 0)
        ushmemi_fatal(call, "lock address %p is not an aligned symmetric long", (void *)lock);
    /* Validates that the lock is symmetric, naming the call otherwise. */
    struct ushmemi_loc loc;
    ushmemi_locate(call, lock, sizeof(long), LOCK_PE, &loc);
}

USHMEMI_API void shmem_set_lock(long *lock)
{
    check_lock("shmem_set_lock", lock);
    uint32_t ticket = shmem_uint32_atomic_fetch_inc(next_word(lock), LOCK_PE);
    unsigned spins = 0;
    while (shmem_uint32_atomic_fetch(serving_word(lock), LOCK_PE) != ticket)
        ushmemi_poll_pause_in("shmem_set_lock", 0, &spins);
    /* Nothing done inside the lock may be seen before it is held. */
    atomic_thread_fence(memory_order_acquire);
}

USHMEMI_API int shmem_test_lock(long *lock)
{
    check_lock("shmem_test_lock", lock);
    /* Take a ticket only when it would be served at once. */
    uint64_t *whole = (uint64_t *)lock;
    uint64_t seen = shmem_uint64_atomic_fetch(whole, LOCK_PE);
    uint32_t serving = (uint32_t)seen, next = (uint32_t)(seen >> 32);
    if (serving != next)
        return 1;
    uint64_t taken = ((uint64_t)(uint32_t)(next + 1) << 32) | serving;
    if (shmem_uint64_atomic_compare_swap(whole, seen, taken, LOCK_PE) != seen)
        return 1;
    atomic_thread_fence(memory_order_acquire);
    return 0;
}

USHMEMI_API void shmem_clear_lock(long *lock)
{
    check_lock("shmem_clear_lock", lock);
    /* Updates made under the lock complete before the next holder enters. */
    shmem_quiet();
    shmem_uint32_atomic_inc(serving_word(lock), LOCK_PE);
}
