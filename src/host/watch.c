/* Waits that cannot end (watch.h). A PE that returns from main without
 * shmem_finalize finalizes at exit, and the last barrier of that finalize
 * takes the place of whatever barrier its peers are in; they go on and wait
 * in their next one for a PE that has left. Or a PE's process is gone and
 * no launcher ended the job. Either way its peers would wait in silence.
 *
 * Nothing here is on a fast path: the polling helper (util.c) calls
 * ushmemi_watch_check once a wait has lasted USHMEM_HANG_CHECK seconds, and
 * then once a second. It reads the peers' host sync segments, which are
 * mapped from every PE of this node and outlive a peer that exited. */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static struct ushmemi_sync_seg *own_seg; /* NULL: no segments (closed, USHMEM_IPC=0) */
static bool finalizing;                  /* this PE is in shmem_finalize */
static atomic_bool said;                 /* this PE has named a peer (once per init) */

/* A process's state letter and start time from /proc/PID/stat: 1 read,
 * 0 no such process, -1 unknown (no /proc, or not readable). */
static int read_stat(pid_t pid, char *state_p, uint64_t *start_p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    int err = errno;
    close(fd);
    if (n <= 0)
        return n < 0 && err == ESRCH ? 0 : -1;
    buf[n] = '\0';
    /* The command name, in parentheses, may hold spaces and ')': the fields
     * are counted from the last ')'. The state is field 3, the start 22. */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return -1;
    p += 2;
    *state_p = *p;
    for (int field = 3; field < 22 && p != NULL; field++) {
        p = strchr(p, ' ');
        if (p != NULL)
            p++;
    }
    *start_p = p != NULL ? strtoull(p, NULL, 10) : 0;
    return 1;
}

static uint64_t pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

void ushmemi_watch_open(struct ushmemi_sync_seg *own)
{
    own_seg = own;
    finalizing = false;
    atomic_store(&said, false);
    if (own == NULL)
        return;
    char state;
    uint64_t start = 0;
    own->pid = (int32_t)getpid();
    own->start_time = read_stat(getpid(), &state, &start) == 1 ? start : 0;
    own->pid_ns = pid_namespace();
    atomic_store_explicit(&own->state, USHMEMI_WATCH_RUNNING, memory_order_release);
}

void ushmemi_watch_finalizing(bool at_exit)
{
    finalizing = true;
    if (own_seg != NULL)
        atomic_store_explicit(&own_seg->state,
                              at_exit ? USHMEMI_WATCH_FINALIZING_AT_EXIT : USHMEMI_WATCH_FINALIZING,
                              memory_order_release);
}

void ushmemi_watch_left(void)
{
    if (own_seg == NULL)
        return;
    own_seg->left_epoch = ushmemi_g.barrier_epoch;
    atomic_store_explicit(&own_seg->left, 1, memory_order_release);
}

int64_t ushmemi_watch_after_ns(void)
{
    long s = ushmemi_settings.hang_check;
    return own_seg != NULL && s > 0 ? (int64_t)s * 1000000000 : 0;
}

/* Whether the process behind a peer's segment has ended: no such process,
 * a zombie, or another process under its pid (another start time). A pid
 * of another pid namespace names nothing here: never gone. */
static bool process_gone(const struct ushmemi_sync_seg *s)
{
    if (s->pid <= 0 || s->pid_ns != own_seg->pid_ns)
        return false;
    char state = 0;
    uint64_t start = 0;
    int r = read_stat((pid_t)s->pid, &state, &start);
    if (r < 0)
        return kill((pid_t)s->pid, 0) != 0 && errno == ESRCH;
    if (r == 0 || state == 'Z' || state == 'X')
        return true;
    return s->start_time != 0 && start != s->start_time;
}

/* Why the owner of segment s will not come to this PE's wait (world_epoch
 * as for ushmemi_watch_check), in why; false when it may. Its own hint, if
 * any, in *hint_p. */
static bool will_not_come(const struct ushmemi_sync_seg *s, uint64_t world_epoch, char *why,
                          size_t len, const char **hint_p)
{
    static const char collectives[] =
        " (every PE must make the same collective calls, and call shmem_finalize last)";
    uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
    bool at_exit = state == USHMEMI_WATCH_FINALIZING_AT_EXIT;
    *hint_p = "";
    if (process_gone(s)) {
        snprintf(why, len, "(pid %d) has exited %s", (int)s->pid,
                 state == USHMEMI_WATCH_RUNNING ? "without calling shmem_finalize"
                 : at_exit ? "after finalizing at exit (main returned without calling "
                             "shmem_finalize)"
                           : "after shmem_finalize");
        return true;
    }
    if (state != USHMEMI_WATCH_FINALIZING && !at_exit)
        return false;
    *hint_p = collectives;
    if (atomic_load_explicit(&s->left, memory_order_acquire)) {
        /* Past its last barrier. If that was the one this PE waits in,
         * this PE gets past it too. */
        if (world_epoch != 0 && world_epoch <= s->left_epoch)
            return false;
        snprintf(why, len, "%s",
                 at_exit ? "returned from main without calling shmem_finalize, and the finalize "
                           "at exit that followed took an earlier barrier of the others for its "
                           "last one"
                         : "called shmem_finalize, whose last barrier took an earlier barrier of "
                           "the others for its own");
        return true;
    }
    /* In its finalize, which waits for every PE: this PE's world barrier
     * stands where its last barrier does. In any other wait (a peer's
     * signal, a team's barrier) or in its own finalize, this PE may be
     * waiting for a third PE, as the finalizing one is. */
    if (world_epoch == 0 || finalizing)
        return false;
    snprintf(why, len, "%s",
             at_exit ? "returned from main without calling shmem_finalize and waits in its "
                       "finalize at exit"
                     : "is in shmem_finalize");
    return true;
}

int64_t ushmemi_watch_check(const char *call, uint64_t world_epoch, int64_t waited_ns)
{
    if (own_seg == NULL || atomic_load(&said))
        return 0;
    if (finalizing && world_epoch != 0)
        call = "shmem_finalize";
    bool any = false;
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        struct ushmemi_sync_seg *s = ushmemi_sync_seg_mapped(pe);
        if (pe == ushmemi_g.my_pe || s == NULL)
            continue;
        any = true;
        char why[160];
        const char *hint;
        if (!will_not_come(s, world_epoch, why, sizeof(why), &hint))
            continue;
        /* One line for the job: the first PE to see it says it. */
        if (atomic_exchange(&s->reported, 1) != 0 || atomic_exchange(&said, true))
            return 0;
        ushmemi_error("%s has waited %lld s: PE %d %s, so this call may never return%s",
                      call != NULL ? call : "a wait", (long long)(waited_ns / 1000000000), pe,
                      why, hint);
        return 0;
    }
    return any ? waited_ns + 1000000000 : 0;
}
