/* The link keeper: keeps the links between this PE's GPU and its mapped
 * peers' GPUs awake (USHMEM_LINK_WARM).
 *
 * On two H200s joined by NVLink, a link that carries nothing for some tens
 * of milliseconds falls asleep: the next store or atomic from one GPU into
 * the other waits about 100 us for it, against 1-1.5 us awake, whoever
 * issues it (ushmem's direct road, its proxy, NVSHMEM; 30 ms idle costs
 * nothing, 100 ms costs the 100 us). An 8-byte copy over the link every
 * millisecond meanwhile keeps every later write at its awake latency
 * (test/perf/cuda/link_idle, keepers `link` and `kernel0`). So a thread of
 * this PE copies 8 bytes into each mapped peer on another device every few
 * milliseconds (the peer's warm word, which nothing reads) with the
 * device's copy engine, on a stream of its own at the lowest priority
 * (dev_ops->warm_links). It sleeps between rounds: a few microseconds of
 * CPU each, whatever USHMEM_PROXY_IDLE says.
 *
 * auto keeps them where the heap is device memory, every 10 ms: a link
 * stays awake at least 30 ms after its last use, so no gap between writes
 * reaches that. A number of milliseconds chooses the period (on any
 * backend that has the operation, the cpu backend's being plain stores for
 * the tests); off never. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "../common/threads.h"
#include "../transport/decide.h"
#include "internal.h"

#define LINK_WARM_AUTO_MS 10

static struct {
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    bool stop;
    long period_ms;
    int n;
    void **targets;
    const void *src;
    unsigned long rounds, failed;
    char why[160]; /* what ushmem_info --topology says */
} lw = {.lock = PTHREAD_MUTEX_INITIALIZER};

void ushmemi_link_warm_text(char *buf, size_t len)
{
    snprintf(buf, len, "%s", lw.why[0] != '\0' ? lw.why : "not started");
}

/* USHMEM_LINK_WARM as a period in milliseconds: 0 off, -1 auto; -2 when
 * malformed (said). */
static long parse_setting(const char *text)
{
    if (text == NULL || strcmp(text, "auto") == 0)
        return -1;
    if (strcmp(text, "off") == 0 || strcmp(text, "0") == 0)
        return 0;
    char *end;
    errno = 0;
    long ms = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || ms < 1 || ms > 1000) {
        ushmemi_error("shmem_init: PE %d: USHMEM_LINK_WARM=%s: auto, off, or a period of 1 to "
                      "1000 milliseconds",
                      ushmemi_g.my_pe, text);
        return -2;
    }
    return ms;
}

static void *keeper_main(void *arg)
{
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&lw.lock);
    while (!lw.stop) {
        next.tv_nsec += lw.period_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (!lw.stop && pthread_cond_timedwait(&lw.cond, &lw.lock, &next) != ETIMEDOUT)
            ;
        if (lw.stop)
            break;
        pthread_mutex_unlock(&lw.lock);
        ushmem_status_t status =
            ushmemi_g.dev_ops->warm_links(ushmemi_g.dev, lw.src, lw.targets, lw.n);
        pthread_mutex_lock(&lw.lock);
        if (status != USHMEM_OK) {
            lw.failed++;
            ushmemi_debug("link keeper on PE %d: a round failed (%s); the keeper stops",
                          ushmemi_g.my_pe, ushmemi_status_string(status));
            break;
        }
        lw.rounds++;
        /* A round late (the process stopped, a slow call): from now on. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 1)
            next = now;
    }
    pthread_mutex_unlock(&lw.lock);
    return NULL;
}

ushmem_status_t ushmemi_link_warm_start(void)
{
    long period = parse_setting(ushmemi_settings.link_warm);
    if (period == -2)
        return USHMEM_ERR_INVALID_PARAM;
    bool automatic = period == -1;
    if (automatic)
        period = ushmemi_g.heap_is_device ? LINK_WARM_AUTO_MS : 0;
    snprintf(lw.why, sizeof(lw.why), "off (USHMEM_LINK_WARM=%s%s)", ushmemi_settings.link_warm,
             automatic && period == 0 ? ": the heap is host memory" : "");
    if (period != 0 && ushmemi_g.dev_ops->warm_links == NULL)
        snprintf(lw.why, sizeof(lw.why), "off: the %s backend has no links to keep awake",
                 ushmemi_g.dev_ops->name);
    if (period == 0 || ushmemi_g.dev_ops->warm_links == NULL)
        return USHMEM_OK;

    int me = ushmemi_g.my_pe, n = 0;
    void **targets = malloc((size_t)ushmemi_g.n_pes * sizeof(*targets));
    if (targets == NULL)
        return USHMEM_ERR_NO_MEMORY;
    /* Every mapped peer on another device: the reserved area opens each
     * heap, so the warm word lies at the same offset in every one. */
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
        if (pe != me && ushmemi_g.peers[pe].base != NULL &&
            !ushmemi_g.pair_caps[pe].same_device)
            targets[n++] = (char *)ushmemi_g.peers[pe].base +
                           offsetof(struct ushmemi_reserved, warm_word);
    if (n == 0) {
        free(targets);
        snprintf(lw.why, sizeof(lw.why), "off: no mapped peer on another device");
        ushmemi_debug("link keeper on PE %d: no mapped peer on another device", me);
        return USHMEM_OK;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&lw.cond, &attr);
    pthread_condattr_destroy(&attr);
    lw.stop = false;
    lw.period_ms = period;
    lw.n = n;
    lw.targets = targets;
    lw.src = &ushmemi_g.reserved->warm_word;
    lw.rounds = lw.failed = 0;
    int rc = ushmemi_helper_thread_start(&lw.thread, keeper_main, NULL, "ushmem-links",
                                         ushmemi_g.host_local_rank, ushmemi_g.host_local_size);
    if (rc != 0) {
        ushmemi_warn("PE %d: the link keeper's thread could not start (%s): a write to another "
                     "GPU after a quiet spell may wait ~100 us for its link",
                     me, strerror(rc));
        pthread_cond_destroy(&lw.cond);
        free(targets);
        lw.targets = NULL;
        snprintf(lw.why, sizeof(lw.why), "off: its thread could not start (%s)", strerror(rc));
        return USHMEM_OK;
    }
    lw.running = true;
    snprintf(lw.why, sizeof(lw.why), "every %ld ms into %d peer%s on other devices "
             "(USHMEM_LINK_WARM=%s)", period, n, n == 1 ? "" : "s", ushmemi_settings.link_warm);
    ushmemi_debug("link keeper on PE %d: writes 8 bytes into %d peer%s on other devices every "
                  "%ld ms",
                  me, n, n == 1 ? "" : "s", period);
    return USHMEM_OK;
}

void ushmemi_link_warm_stop(void)
{
    if (!lw.running)
        return;
    pthread_mutex_lock(&lw.lock);
    lw.stop = true;
    pthread_cond_signal(&lw.cond);
    pthread_mutex_unlock(&lw.lock);
    pthread_join(lw.thread, NULL);
    lw.running = false;
    (void)ushmemi_g.dev_ops->warm_links(ushmemi_g.dev, NULL, NULL, 0);
    ushmemi_debug("link keeper on PE %d: %lu rounds of writes to %d peers, %lu failed",
                  ushmemi_g.my_pe, lw.rounds, lw.n, lw.failed);
    pthread_cond_destroy(&lw.cond);
    free(lw.targets);
    lw.targets = NULL;
}
