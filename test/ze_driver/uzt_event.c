/*
 * Event pools and events of the test driver. A pool is internal host memory
 * (mapped in the application and the helper), one 64-byte slot per event;
 * an event's state is the first word of its slot (uzt_proto.h), so the
 * helper signals and waits on the same word the application does.
 */
#include "uzt_driver.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define EVENT_STRIDE 64

struct uzt_pool {
    uint32_t magic;
    uint32_t count;
    unsigned char *mem; /* count * EVENT_STRIDE bytes of internal host memory */
};

/*
 * Spins briefly (the helper usually answers within microseconds), then
 * sleeps on the futex in slices, checking that the helper still lives.
 */
ze_result_t uzt_event_wait_host(struct uzt_event *e, uint64_t timeout_ns)
{
    uint64_t deadline;

    if (uzt_event_is_set(e->word))
        return ZE_RESULT_SUCCESS;
    if (timeout_ns == 0)
        return ZE_RESULT_NOT_READY;
    for (int i = 0; i < 256; i++) {
        uzt_cpu_relax();
        if (uzt_event_is_set(e->word))
            return ZE_RESULT_SUCCESS;
    }
    for (int i = 0; i < 8; i++) {
        sched_yield();
        if (uzt_event_is_set(e->word))
            return ZE_RESULT_SUCCESS;
    }
    deadline = uzt_deadline(timeout_ns);
    for (;;) {
        uint64_t now = uzt_now_ns();

        if (now >= deadline)
            return ZE_RESULT_NOT_READY;
        if (uzt_event_sleep(e->word, deadline - now < UZT_WAIT_SLICE_NS ? deadline - now
                                                                        : UZT_WAIT_SLICE_NS))
            return ZE_RESULT_SUCCESS;
        if (!uzt_helper_alive())
            return ZE_RESULT_ERROR_DEVICE_LOST;
    }
}

static ze_result_t pool_create(ze_context_handle_t hContext, const ze_event_pool_desc_t *desc,
                               uint32_t ndev, ze_device_handle_t *phDevices,
                               ze_event_pool_handle_t *phPool)
{
    struct uzt_pool *p;
    ze_result_t r;

    (void)ndev, (void)phDevices;
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc->count == 0 || desc->count > (1u << 20)) {
        uzt_log("event pool of %u events: from 1 to %u", desc->count, 1u << 20);
        return ZE_RESULT_ERROR_INVALID_SIZE;
    }
    if (desc->flags & ZE_EVENT_POOL_FLAG_IPC) {
        uzt_log("zeEventPoolCreate: IPC event pools are not supported");
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    }
    p = calloc(1, sizeof *p);
    if (!p)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    r = uzt_mem_internal_alloc((size_t)desc->count * EVENT_STRIDE, (void **)&p->mem);
    if (r != ZE_RESULT_SUCCESS) {
        free(p);
        return r;
    }
    p->magic = UZT_MAGIC_POOL;
    p->count = desc->count;
    *phPool = (ze_event_pool_handle_t)p;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t pool_destroy(ze_event_pool_handle_t hPool)
{
    struct uzt_pool *p = uzt_cast(hPool, UZT_MAGIC_POOL);

    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uzt_mem_internal_free(p->mem);
    p->magic = 0;
    free(p);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_create(ze_event_pool_handle_t hPool, const ze_event_desc_t *desc,
                                ze_event_handle_t *phEvent)
{
    struct uzt_pool *p = uzt_cast(hPool, UZT_MAGIC_POOL);
    struct uzt_event *e;

    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc->index >= p->count) {
        uzt_log("event index %u in a pool of %u", desc->index, p->count);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    e = calloc(1, sizeof *e);
    if (!e)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    e->magic = UZT_MAGIC_EVENT;
    e->pool = p;
    e->word = (_Atomic uint32_t *)(p->mem + (size_t)desc->index * EVENT_STRIDE);
    atomic_store(e->word, UZT_EV_RESET);
    *phEvent = (ze_event_handle_t)e;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_destroy(ze_event_handle_t hEvent)
{
    struct uzt_event *e = uzt_cast(hEvent, UZT_MAGIC_EVENT);

    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    e->magic = 0;
    free(e);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_host_signal(ze_event_handle_t hEvent)
{
    struct uzt_event *e = uzt_cast(hEvent, UZT_MAGIC_EVENT);

    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uzt_event_set(e->word);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_host_reset(ze_event_handle_t hEvent)
{
    struct uzt_event *e = uzt_cast(hEvent, UZT_MAGIC_EVENT);

    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uzt_event_reset(e->word);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_query(ze_event_handle_t hEvent)
{
    struct uzt_event *e = uzt_cast(hEvent, UZT_MAGIC_EVENT);

    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return uzt_event_is_set(e->word) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

static ze_result_t event_host_synchronize(ze_event_handle_t hEvent, uint64_t timeout)
{
    struct uzt_event *e = uzt_cast(hEvent, UZT_MAGIC_EVENT);

    return e ? uzt_event_wait_host(e, timeout) : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

void uzt_event_fill_tables(ze_event_pool_dditable_t *pool, ze_event_dditable_t *event)
{
    if (pool) {
        pool->pfnCreate = pool_create;
        pool->pfnDestroy = pool_destroy;
    }
    if (event) {
        event->pfnCreate = event_create;
        event->pfnDestroy = event_destroy;
        event->pfnHostSignal = event_host_signal;
        event->pfnHostSynchronize = event_host_synchronize;
        event->pfnQueryStatus = event_query;
        event->pfnHostReset = event_host_reset;
    }
}
