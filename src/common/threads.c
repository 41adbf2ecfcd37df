/* See threads.h. */
#include "threads.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "log.h"

/* Fills `others` with the CPUs for a helper thread when the process is
 * bound to exactly one CPU and others are online (threads.h); returns
 * whether it did. CPUs that a cgroup's cpuset leaves out are dropped by the
 * kernel. */
static int other_cpus(cpu_set_t *others, int *own_p, int local_rank, int local_size)
{
    cpu_set_t own;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int c, first = 0, last = -1;

    CPU_ZERO(&own);
    if (sched_getaffinity(0, sizeof(own), &own) != 0 || CPU_COUNT(&own) != 1 || online < 2)
        return 0;
    if (online > CPU_SETSIZE)
        online = CPU_SETSIZE;
    for (c = 0; !CPU_ISSET(c, &own); c++)
        ;
    *own_p = c;
    if (local_size > 1 && local_rank >= 0 && local_rank < local_size) {
        first = c - local_rank; /* the node's PEs, if bound in order */
        last = first + local_size - 1;
    }
    CPU_ZERO(others);
    for (int k = 0; k < online; k++)
        if (k != c && (k < first || k > last))
            CPU_SET(k, others);
    if (CPU_COUNT(others) == 0) /* too few CPUs: share with the other PEs */
        for (int k = 0; k < online; k++)
            if (k != c)
                CPU_SET(k, others);
    return CPU_COUNT(others) > 0;
}

int ushmemi_helper_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg,
                                const char *name, int local_rank, int local_size)
{
    sigset_t all, old;
    pthread_attr_t attr;
    cpu_set_t others;
    int own = -1, moved = 0, rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_attr_init(&attr);
    if (rc == 0) {
        moved = other_cpus(&others, &own, local_rank, local_size) &&
                pthread_attr_setaffinity_np(&attr, sizeof(others), &others) == 0;
        rc = pthread_create(thread, &attr, fn, arg);
        if (rc == EINVAL && moved) { /* none of those CPUs is allowed here */
            moved = 0;
            rc = pthread_create(thread, NULL, fn, arg);
        }
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return rc;
    pthread_setname_np(*thread, name);
    if (moved)
        ushmemi_debug("%s thread: the process is bound to CPU %d alone; the thread runs on %d "
                      "other CPUs, so that a spinning application thread does not starve it",
                      name, own, CPU_COUNT(&others));
    return 0;
}
