/*
 * Command lists, command queues and events of the test driver.
 *
 * An immediate list is a FIFO in the helper with a thread of its own: an
 * append sends one message and returns, and the helper counts finished
 * commands in the list's control slot (host region), which is how the driver
 * waits for the list to drain. Appends that touch app-private memory cannot
 * run in the helper: the driver drains the list, waits for the wait events,
 * then moves the data itself, through a host-region bounce buffer when the
 * other side is device memory. A regular list records its appends and a
 * command queue replays them on an immediate list of its own.
 */
#include "uzt_driver.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum rec_kind { REC_COPY, REC_FILL, REC_BARRIER, REC_RESET, REC_LAUNCH };

/* One append recorded in a regular list. */
struct uzt_rec {
    enum rec_kind kind;
    void *dst;
    const void *src;
    size_t size;
    unsigned char pattern[UZT_MAX_PATTERN];
    size_t pattern_size;
    struct uzt_event *signal;
    uint32_t nwait;
    struct uzt_event **waits;
    void *payload;
    uint32_t payload_size;
};

struct uzt_list {
    uint32_t magic;
    bool immediate;
    bool synchronous;
    bool closed;
    uint32_t ordinal;
    uint32_t slot;
    uint32_t submitted;
    struct uzt_list_ctl *ctl;
    struct uzt_rec *recs;
    size_t nrec;
    size_t caprec;
};

struct uzt_queue {
    uint32_t magic;
    struct uzt_list *imm;
};

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static bool slot_used[UZT_MAX_LISTS];

/* ---- waiting ----------------------------------------------------------- */

static ze_result_t list_failed(struct uzt_list *l)
{
    if (!atomic_exchange(&l->ctl->failed, 0))
        return ZE_RESULT_SUCCESS;
    uzt_log("a command of an immediate list failed in the helper (see its message above)");
    return ZE_RESULT_ERROR_UNKNOWN;
}

/* Waits until the helper has finished everything appended to l. */
static ze_result_t list_drain(struct uzt_list *l, uint64_t timeout_ns)
{
    uint32_t target = l->submitted;
    uint64_t deadline;
    ze_result_t r = ZE_RESULT_SUCCESS;

    for (int i = 0; i < 256; i++) {
        if (uzt_seq_reached(atomic_load(&l->ctl->done), target))
            return list_failed(l);
        uzt_cpu_relax();
    }
    if (timeout_ns == 0)
        return ZE_RESULT_NOT_READY;
    deadline = uzt_deadline(timeout_ns);
    atomic_fetch_add(&l->ctl->waiters, 1);
    for (;;) {
        uint32_t done = atomic_load(&l->ctl->done);
        uint64_t now = uzt_now_ns(), slice;
        struct timespec ts;

        if (uzt_seq_reached(done, target))
            break;
        if (now >= deadline) {
            r = ZE_RESULT_NOT_READY;
            break;
        }
        slice = deadline - now < UZT_WAIT_SLICE_NS ? deadline - now : UZT_WAIT_SLICE_NS;
        ts = (struct timespec){0, (long)slice};
        uzt_futex(&l->ctl->done, FUTEX_WAIT, done, &ts);
        if (!uzt_seq_reached(atomic_load(&l->ctl->done), target) && !uzt_helper_alive()) {
            r = ZE_RESULT_ERROR_DEVICE_LOST;
            break;
        }
    }
    atomic_fetch_sub(&l->ctl->waiters, 1);
    return r == ZE_RESULT_SUCCESS ? list_failed(l) : r;
}

/* ---- immediate execution ----------------------------------------------- */

static ze_result_t post(struct uzt_list *l, uint32_t kind, uint64_t dst, uint64_t src,
                        uint64_t size, const void *payload, uint32_t payload_size,
                        uint32_t pattern_size, struct uzt_event *signal, uint32_t nwait,
                        struct uzt_event *const *waits)
{
    _Alignas(8) unsigned char buf[UZT_MSG_MAX];
    struct uzt_cmd c;
    size_t len;
    ze_result_t r;

    /* Waits beyond what one message holds go first, as barriers. */
    while (nwait > UZT_MAX_WAITS) {
        r = post(l, UZT_CMD_BARRIER, 0, 0, 0, NULL, 0, 0, NULL, UZT_MAX_WAITS, waits);
        if (r != ZE_RESULT_SUCCESS)
            return r;
        waits += UZT_MAX_WAITS;
        nwait -= UZT_MAX_WAITS;
    }
    c = (struct uzt_cmd){.op = UZT_OP_COMMAND,
                         .kind = kind,
                         .list = l->slot,
                         .nwait = nwait,
                         .signal = signal ? (uint64_t)(uintptr_t)signal->word : 0,
                         .dst = dst,
                         .src = src,
                         .size = size,
                         .pattern_size = pattern_size,
                         .payload_size = payload_size};
    len = sizeof c + nwait * sizeof(uint64_t) + payload_size;
    if (len > sizeof buf) {
        uzt_log("a command of %zu bytes does not fit a message", len);
        return ZE_RESULT_ERROR_INVALID_SIZE;
    }
    memcpy(buf, &c, sizeof c);
    for (uint32_t i = 0; i < nwait; i++) {
        uint64_t w = (uint64_t)(uintptr_t)waits[i]->word;

        memcpy(buf + sizeof c + i * sizeof w, &w, sizeof w);
    }
    if (payload_size)
        memcpy(buf + sizeof c + nwait * sizeof(uint64_t), payload, payload_size);
    r = uzt_post(buf, len);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    l->submitted++;
    return l->synchronous ? list_drain(l, UINT64_MAX) : ZE_RESULT_SUCCESS;
}

/* The driver itself does the work: everything before it done, waits met. */
static ze_result_t begin_on_host(struct uzt_list *l, uint32_t nwait, struct uzt_event *const *waits)
{
    ze_result_t r = list_drain(l, UINT64_MAX);

    for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && i < nwait; i++)
        r = uzt_event_wait_host(waits[i], UINT64_MAX);
    return r;
}

/* Device memory <-> app-private memory, one bounce buffer at a time. */
static ze_result_t stage(struct uzt_list *l, void *dst, const void *src, size_t size,
                         bool to_device)
{
    ze_result_t r = ZE_RESULT_SUCCESS;
    uint64_t bounce = (uint64_t)(uintptr_t)uzt.bounce;

    pthread_mutex_lock(&uzt.bounce_lock);
    for (size_t off = 0; r == ZE_RESULT_SUCCESS && off < size; off += UZT_BOUNCE_SIZE) {
        size_t n = size - off < UZT_BOUNCE_SIZE ? size - off : UZT_BOUNCE_SIZE;
        uint64_t d = (uint64_t)(uintptr_t)dst + off, s = (uint64_t)(uintptr_t)src + off;

        if (to_device)
            memcpy(uzt.bounce, (const char *)src + off, n);
        r = post(l, UZT_CMD_COPY, to_device ? d : bounce, to_device ? bounce : s, n, NULL, 0, 0,
                 NULL, 0, NULL);
        if (r == ZE_RESULT_SUCCESS)
            r = list_drain(l, UINT64_MAX);
        if (r == ZE_RESULT_SUCCESS && !to_device)
            memcpy((char *)dst + off, uzt.bounce, n);
    }
    pthread_mutex_unlock(&uzt.bounce_lock);
    return r;
}

static const char *where_name(enum uzt_where w)
{
    return w == UZT_WHERE_HELPER ? "device" : w == UZT_WHERE_BOTH ? "host" : "app-private";
}

static ze_result_t do_copy(struct uzt_list *l, void *dst, const void *src, size_t size,
                           struct uzt_event *signal, uint32_t nwait, struct uzt_event *const *waits)
{
    enum uzt_where wd = uzt_mem_where(dst, size), ws = uzt_mem_where(src, size);
    ze_result_t r;

    if (wd == UZT_WHERE_BAD || ws == UZT_WHERE_BAD) {
        uzt_log("copy of %zu bytes from %p to %p: the %s range is not inside one allocation", size,
                src, dst, wd == UZT_WHERE_BAD ? "destination" : "source");
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (wd != UZT_WHERE_APP && ws != UZT_WHERE_APP)
        return post(l, UZT_CMD_COPY, (uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, size, NULL,
                    0, 0, signal, nwait, waits);
    r = begin_on_host(l, nwait, waits);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    if (size == 0)
        r = ZE_RESULT_SUCCESS;
    else if (wd == UZT_WHERE_HELPER || ws == UZT_WHERE_HELPER)
        r = stage(l, dst, src, size, wd == UZT_WHERE_HELPER);
    else
        memmove(dst, src, size);
    if (r != ZE_RESULT_SUCCESS)
        uzt_log("copy %s -> %s of %zu bytes failed", where_name(ws), where_name(wd), size);
    else if (signal)
        uzt_event_set(signal->word);
    return r;
}

static void fill_on_host(unsigned char *dst, const unsigned char *pattern, size_t psize,
                         size_t size)
{
    for (size_t off = 0; off < size; off += psize)
        memcpy(dst + off, pattern, size - off < psize ? size - off : psize);
}

static ze_result_t do_fill(struct uzt_list *l, void *ptr, const void *pattern, size_t pattern_size,
                           size_t size, struct uzt_event *signal, uint32_t nwait,
                           struct uzt_event *const *waits)
{
    enum uzt_where w = uzt_mem_where(ptr, size);
    ze_result_t r;

    if (w == UZT_WHERE_BAD) {
        uzt_log("fill of %zu bytes at %p: the range is not inside one allocation", size, ptr);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (w != UZT_WHERE_APP)
        return post(l, UZT_CMD_FILL, (uint64_t)(uintptr_t)ptr, 0, size, pattern,
                    (uint32_t)pattern_size, (uint32_t)pattern_size, signal, nwait, waits);
    r = begin_on_host(l, nwait, waits);
    if (r == ZE_RESULT_SUCCESS) {
        fill_on_host(ptr, pattern, pattern_size, size);
        if (signal)
            uzt_event_set(signal->word);
    }
    return r;
}

/* ---- recording and replay ---------------------------------------------- */

static void rec_free(struct uzt_rec *rec)
{
    free(rec->waits);
    free(rec->payload);
}

static ze_result_t record(struct uzt_list *l, const struct uzt_rec *rec, uint32_t nwait,
                          struct uzt_event *const *waits)
{
    struct uzt_rec *r;

    if (l->closed) {
        uzt_log("append to a closed command list");
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (l->nrec == l->caprec) {
        size_t cap = l->caprec ? 2 * l->caprec : 16;
        struct uzt_rec *v = realloc(l->recs, cap * sizeof *v);

        if (!v)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        l->recs = v;
        l->caprec = cap;
    }
    r = &l->recs[l->nrec];
    *r = *rec;
    r->nwait = nwait;
    r->waits = NULL;
    if (nwait) {
        r->waits = malloc(nwait * sizeof *r->waits);
        if (!r->waits)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        memcpy(r->waits, waits, nwait * sizeof *r->waits);
    }
    l->nrec++;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t replay(struct uzt_list *imm, const struct uzt_rec *rec)
{
    switch (rec->kind) {
    case REC_COPY:
        return do_copy(imm, rec->dst, rec->src, rec->size, rec->signal, rec->nwait, rec->waits);
    case REC_FILL:
        return do_fill(imm, rec->dst, rec->pattern, rec->pattern_size, rec->size, rec->signal,
                       rec->nwait, rec->waits);
    case REC_BARRIER:
        return post(imm, UZT_CMD_BARRIER, 0, 0, 0, NULL, 0, 0, rec->signal, rec->nwait, rec->waits);
    case REC_RESET:
        return post(imm, UZT_CMD_RESET, (uint64_t)(uintptr_t)rec->dst, 0, 0, NULL, 0, 0, NULL,
                    rec->nwait, rec->waits);
    case REC_LAUNCH:
        return post(imm, UZT_CMD_LAUNCH, 0, 0, 0, rec->payload, rec->payload_size, 0, rec->signal,
                    rec->nwait, rec->waits);
    }
    return ZE_RESULT_ERROR_UNKNOWN;
}

/* Either runs the append now (immediate list) or records it; takes payload. */
static ze_result_t submit(struct uzt_list *l, struct uzt_rec *rec, uint32_t nwait,
                          struct uzt_event *const *waits)
{
    ze_result_t r;

    if (!l->immediate) {
        r = record(l, rec, nwait, waits);
        if (r != ZE_RESULT_SUCCESS)
            free(rec->payload);
        return r;
    }
    rec->nwait = nwait;
    rec->waits = (struct uzt_event **)waits;
    r = replay(l, rec);
    free(rec->payload);
    return r;
}

/* ---- handles ----------------------------------------------------------- */

/* Checks the event handles of an append; NULL signal is allowed. */
static ze_result_t check_events(ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
    if (signal && !uzt_cast(signal, UZT_MAGIC_EVENT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (nwait && !waits)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < nwait; i++) {
        if (!uzt_cast(waits[i], UZT_MAGIC_EVENT))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    return ZE_RESULT_SUCCESS;
}

static ze_result_t check_queue_desc(ze_device_handle_t hDevice, uint32_t ordinal, uint32_t index)
{
    if (!uzt_cast(hDevice, UZT_MAGIC_DEVICE))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ordinal >= UZT_NUM_ORDINALS || index >= uzt_queues_per_ordinal[ordinal]) {
        uzt_log("queue group ordinal %u index %u: the device has ordinal 0 (1 queue) and "
                "ordinal 1 (2 queues)",
                ordinal, index);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    return ZE_RESULT_SUCCESS;
}

static ze_result_t make_immediate(uint32_t ordinal, bool synchronous, struct uzt_list **list_p)
{
    struct uzt_list *l = calloc(1, sizeof *l);
    struct uzt_req req = {.op = UZT_OP_LIST_CREATE};
    struct uzt_reply rep;
    ze_result_t r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    uint32_t slot;

    if (!l)
        return r;
    pthread_mutex_lock(&slot_lock);
    for (slot = 0; slot < UZT_MAX_LISTS && slot_used[slot]; slot++)
        ;
    if (slot < UZT_MAX_LISTS)
        slot_used[slot] = true;
    pthread_mutex_unlock(&slot_lock);
    if (slot == UZT_MAX_LISTS) {
        uzt_log("more than %d immediate lists and queues at once", UZT_MAX_LISTS);
        goto free_list;
    }
    *l = (struct uzt_list){.magic = UZT_MAGIC_LIST,
                           .immediate = true,
                           .synchronous = synchronous,
                           .ordinal = ordinal,
                           .slot = slot,
                           .ctl = &uzt.ctl[slot]};
    atomic_store(&l->ctl->done, 0);
    atomic_store(&l->ctl->waiters, 0);
    atomic_store(&l->ctl->failed, 0);
    req.handle = slot;
    req.addr = (uint64_t)(uintptr_t)l->ctl;
    r = uzt_rpc(&req, -1, &rep, NULL);
    if (r == ZE_RESULT_SUCCESS && rep.err) {
        uzt_log("creating a command list: %s", rep.text);
        r = uzt_errno_result(rep.err);
    }
    if (r != ZE_RESULT_SUCCESS)
        goto free_slot;
    *list_p = l;
    return ZE_RESULT_SUCCESS;

free_slot:
    pthread_mutex_lock(&slot_lock);
    slot_used[slot] = false;
    pthread_mutex_unlock(&slot_lock);
free_list:
    free(l);
    return r;
}

static ze_result_t destroy_list(struct uzt_list *l)
{
    ze_result_t r = ZE_RESULT_SUCCESS;

    if (l->immediate) {
        struct uzt_req req = {.op = UZT_OP_LIST_DESTROY, .handle = l->slot};
        struct uzt_reply rep;

        r = list_drain(l, UINT64_MAX);
        if (r == ZE_RESULT_SUCCESS || r == ZE_RESULT_ERROR_UNKNOWN)
            uzt_rpc(&req, -1, &rep, NULL);
        pthread_mutex_lock(&slot_lock);
        slot_used[l->slot] = false;
        pthread_mutex_unlock(&slot_lock);
    }
    for (size_t i = 0; i < l->nrec; i++)
        rec_free(&l->recs[i]);
    free(l->recs);
    l->magic = 0;
    free(l);
    return r == ZE_RESULT_ERROR_UNKNOWN ? ZE_RESULT_SUCCESS : r;
}

/* ---- zeCommandList ----------------------------------------------------- */

static ze_result_t list_create_immediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                         const ze_command_queue_desc_t *desc,
                                         ze_command_list_handle_t *phList)
{
    ze_result_t r;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = check_queue_desc(hDevice, desc->ordinal, desc->index);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    return make_immediate(desc->ordinal, desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
                          (struct uzt_list **)phList);
}

static ze_result_t list_create(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                               const ze_command_list_desc_t *desc, ze_command_list_handle_t *phList)
{
    struct uzt_list *l;
    ze_result_t r;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = check_queue_desc(hDevice, desc->commandQueueGroupOrdinal, 0);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    l = calloc(1, sizeof *l);
    if (!l)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->magic = UZT_MAGIC_LIST;
    l->ordinal = desc->commandQueueGroupOrdinal;
    *phList = (ze_command_list_handle_t)l;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t list_destroy(ze_command_list_handle_t hList)
{
    struct uzt_list *l = uzt_cast(hList, UZT_MAGIC_LIST);

    return l ? destroy_list(l) : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t list_close(ze_command_list_handle_t hList)
{
    struct uzt_list *l = uzt_cast(hList, UZT_MAGIC_LIST);

    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (l->immediate)
        return ZE_RESULT_SUCCESS;
    l->closed = true;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t list_reset(ze_command_list_handle_t hList)
{
    struct uzt_list *l = uzt_cast(hList, UZT_MAGIC_LIST);

    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (l->immediate)
        return list_drain(l, UINT64_MAX);
    for (size_t i = 0; i < l->nrec; i++)
        rec_free(&l->recs[i]);
    l->nrec = 0;
    l->closed = false;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t check_append(ze_command_list_handle_t hList, ze_event_handle_t hSignal,
                                uint32_t nwait, ze_event_handle_t *phWaits,
                                struct uzt_list **list_p)
{
    *list_p = uzt_cast(hList, UZT_MAGIC_LIST);
    if (!*list_p)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return check_events(hSignal, nwait, phWaits);
}

static ze_result_t append_copy(ze_command_list_handle_t hList, void *dst, const void *src,
                               size_t size, ze_event_handle_t hSignal, uint32_t nwait,
                               ze_event_handle_t *phWaits)
{
    struct uzt_list *l;
    ze_result_t r = check_append(hList, hSignal, nwait, phWaits, &l);
    struct uzt_rec rec = {.kind = REC_COPY,
                          .dst = dst,
                          .src = src,
                          .size = size,
                          .signal = (struct uzt_event *)hSignal};

    if (r != ZE_RESULT_SUCCESS)
        return r;
    return submit(l, &rec, nwait, (struct uzt_event *const *)phWaits);
}

static ze_result_t append_fill(ze_command_list_handle_t hList, void *ptr, const void *pattern,
                               size_t pattern_size, size_t size, ze_event_handle_t hSignal,
                               uint32_t nwait, ze_event_handle_t *phWaits)
{
    struct uzt_list *l;
    ze_result_t r = check_append(hList, hSignal, nwait, phWaits, &l);
    struct uzt_rec rec = {.kind = REC_FILL,
                          .dst = ptr,
                          .size = size,
                          .pattern_size = pattern_size,
                          .signal = (struct uzt_event *)hSignal};

    if (r != ZE_RESULT_SUCCESS)
        return r;
    if (pattern_size == 0 || pattern_size > UZT_MAX_PATTERN ||
        (pattern_size & (pattern_size - 1))) {
        uzt_log("fill pattern of %zu bytes: patterns are powers of two up to %d bytes",
                pattern_size, UZT_MAX_PATTERN);
        return ZE_RESULT_ERROR_INVALID_SIZE;
    }
    memcpy(rec.pattern, pattern, pattern_size);
    return submit(l, &rec, nwait, (struct uzt_event *const *)phWaits);
}

static ze_result_t append_barrier(ze_command_list_handle_t hList, ze_event_handle_t hSignal,
                                  uint32_t nwait, ze_event_handle_t *phWaits)
{
    struct uzt_list *l;
    ze_result_t r = check_append(hList, hSignal, nwait, phWaits, &l);
    struct uzt_rec rec = {.kind = REC_BARRIER, .signal = (struct uzt_event *)hSignal};

    if (r != ZE_RESULT_SUCCESS)
        return r;
    return submit(l, &rec, nwait, (struct uzt_event *const *)phWaits);
}

static ze_result_t append_signal(ze_command_list_handle_t hList, ze_event_handle_t hEvent)
{
    if (!uzt_cast(hEvent, UZT_MAGIC_EVENT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return append_barrier(hList, hEvent, 0, NULL);
}

static ze_result_t append_wait(ze_command_list_handle_t hList, uint32_t nwait,
                               ze_event_handle_t *phEvents)
{
    return append_barrier(hList, NULL, nwait, phEvents);
}

static ze_result_t append_reset(ze_command_list_handle_t hList, ze_event_handle_t hEvent)
{
    struct uzt_event *e = uzt_cast(hEvent, UZT_MAGIC_EVENT);
    struct uzt_list *l = uzt_cast(hList, UZT_MAGIC_LIST);
    struct uzt_rec rec = {.kind = REC_RESET};

    if (!l || !e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    rec.dst = (void *)e->word;
    return submit(l, &rec, 0, NULL);
}

static ze_result_t append_launch(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel,
                                 const ze_group_count_t *groups, ze_event_handle_t hSignal,
                                 uint32_t nwait, ze_event_handle_t *phWaits)
{
    struct uzt_list *l;
    ze_result_t r = check_append(hList, hSignal, nwait, phWaits, &l);
    struct uzt_rec rec = {.kind = REC_LAUNCH, .signal = (struct uzt_event *)hSignal};

    if (r != ZE_RESULT_SUCCESS)
        return r;
    r = uzt_kernel_payload((struct uzt_kernel *)hKernel, groups, l->ordinal, &rec.payload,
                           &rec.payload_size);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    return submit(l, &rec, nwait, (struct uzt_event *const *)phWaits);
}

/* ---- zeCommandQueue ---------------------------------------------------- */

static ze_result_t queue_create(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                const ze_command_queue_desc_t *desc,
                                ze_command_queue_handle_t *phQueue)
{
    struct uzt_queue *q;
    ze_result_t r;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = check_queue_desc(hDevice, desc->ordinal, desc->index);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    q = calloc(1, sizeof *q);
    if (!q)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    r = make_immediate(desc->ordinal, desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, &q->imm);
    if (r != ZE_RESULT_SUCCESS) {
        free(q);
        return r;
    }
    q->magic = UZT_MAGIC_QUEUE;
    *phQueue = (ze_command_queue_handle_t)q;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_destroy(ze_command_queue_handle_t hQueue)
{
    struct uzt_queue *q = uzt_cast(hQueue, UZT_MAGIC_QUEUE);
    ze_result_t r;

    if (!q)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = destroy_list(q->imm);
    q->magic = 0;
    free(q);
    return r;
}

static ze_result_t queue_execute(ze_command_queue_handle_t hQueue, uint32_t n,
                                 ze_command_list_handle_t *phLists, ze_fence_handle_t hFence)
{
    struct uzt_queue *q = uzt_cast(hQueue, UZT_MAGIC_QUEUE);
    ze_result_t r = ZE_RESULT_SUCCESS;

    if (!q)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (hFence) {
        uzt_log("zeCommandQueueExecuteCommandLists: fences are not supported");
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct uzt_list *l = uzt_cast(phLists[i], UZT_MAGIC_LIST);

        if (!l || l->immediate || !l->closed) {
            uzt_log("zeCommandQueueExecuteCommandLists: list %u is not a closed regular list", i);
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        }
        if (l->ordinal != q->imm->ordinal) {
            uzt_log("zeCommandQueueExecuteCommandLists: list %u is for ordinal %u, the queue "
                    "for %u",
                    i, l->ordinal, q->imm->ordinal);
            return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
        }
    }
    for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && i < n; i++) {
        struct uzt_list *l = (struct uzt_list *)phLists[i];

        for (size_t j = 0; r == ZE_RESULT_SUCCESS && j < l->nrec; j++)
            r = replay(q->imm, &l->recs[j]);
    }
    return r;
}

static ze_result_t queue_synchronize(ze_command_queue_handle_t hQueue, uint64_t timeout)
{
    struct uzt_queue *q = uzt_cast(hQueue, UZT_MAGIC_QUEUE);

    return q ? list_drain(q->imm, timeout) : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

void uzt_cmd_fill_tables(ze_command_queue_dditable_t *queue, ze_command_list_dditable_t *list)
{
    if (queue) {
        queue->pfnCreate = queue_create;
        queue->pfnDestroy = queue_destroy;
        queue->pfnExecuteCommandLists = queue_execute;
        queue->pfnSynchronize = queue_synchronize;
    }
    if (list) {
        list->pfnCreate = list_create;
        list->pfnCreateImmediate = list_create_immediate;
        list->pfnDestroy = list_destroy;
        list->pfnClose = list_close;
        list->pfnReset = list_reset;
        list->pfnAppendBarrier = append_barrier;
        list->pfnAppendMemoryCopy = append_copy;
        list->pfnAppendMemoryFill = append_fill;
        list->pfnAppendSignalEvent = append_signal;
        list->pfnAppendWaitOnEvents = append_wait;
        list->pfnAppendEventReset = append_reset;
        list->pfnAppendLaunchKernel = append_launch;
    }
}
