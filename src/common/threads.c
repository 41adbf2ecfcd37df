/* See threads.h. */
#include "threads.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vars.h"

int ushmemi_parse_cpu_list(const char *text, cpu_set_t *set)
{
    const char *p = text;

    CPU_ZERO(set);
    while (*p != '\0' && *p != '\n') {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || lo < 0)
            return -1;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            if (end == p + 1 || hi < lo)
                return -1;
            p = end;
        }
        for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        if (*p == ',')
            p++;
        else if (*p != '\0' && *p != '\n')
            return -1;
    }
    return 0;
}

int ushmemi_helper_cpus(const cpu_set_t *own, const cpu_set_t *online,
                        const cpu_set_t *isolated, int local_rank, int local_size,
                        cpu_set_t *first, cpu_set_t *second)
{
    int c, lo = 0, hi = -1;

    CPU_ZERO(first);
    CPU_ZERO(second);
    if (CPU_COUNT(own) != 1)
        return -1;
    for (c = 0; !CPU_ISSET(c, own); c++)
        ;
    if (local_size > 1 && local_rank >= 0 && local_rank < local_size) {
        lo = c - local_rank; /* the node's PEs, if bound in order */
        hi = lo + local_size - 1;
    }
    for (int k = 0; k < CPU_SETSIZE; k++) {
        if (k == c || !CPU_ISSET(k, online) || CPU_ISSET(k, isolated))
            continue;
        CPU_SET(k, second);
        if (k < lo || k > hi)
            CPU_SET(k, first);
    }
    return c;
}

/* The CPUs the node's PEs are bound to, when the PEs told each other
 * (ushmemi_helper_avoid); helpers stay off them rather than off the
 * guessed block. */
static cpu_set_t pe_cpus;
static bool have_pe_cpus;
static int warned_given;

void ushmemi_helper_avoid(const cpu_set_t *pes)
{
    have_pe_cpus = pes != NULL;
    if (pes != NULL)
        pe_cpus = *pes;
}

/* A CPU list file of sysfs into set; false when unreadable or malformed. */
static int read_cpu_list(const char *path, cpu_set_t *set)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    int ok = 0;

    CPU_ZERO(set);
    if (f == NULL)
        return 0;
    if (fgets(buf, sizeof(buf), f) != NULL)
        ok = ushmemi_parse_cpu_list(buf, set) == 0;
    else
        ok = 1; /* an empty list */
    fclose(f);
    return ok;
}

/* Creates the thread on the first of the candidate sets that the kernel
 * accepts (a cgroup may allow none of a set's CPUs: EINVAL), else where the
 * creator runs. Returns pthread_create's code; *placed_p says which set was
 * used, plus one (0: none). */
static int create_placed(pthread_t *thread, void *(*fn)(void *), void *arg,
                         const cpu_set_t *sets, int nsets, int *placed_p)
{
    *placed_p = 0;
    for (int i = 0; i < nsets; i++) {
        pthread_attr_t attr;
        int rc;

        if (CPU_COUNT(&sets[i]) == 0 || pthread_attr_init(&attr) != 0)
            continue;
        rc = pthread_attr_setaffinity_np(&attr, sizeof(sets[i]), &sets[i]);
        if (rc == 0)
            rc = pthread_create(thread, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        if (rc == 0) {
            *placed_p = i + 1;
            return 0;
        }
        if (rc != EINVAL)
            return rc;
    }
    return pthread_create(thread, NULL, fn, arg);
}

/* The candidate sets for this process (ushmemi_helper_cpus); the own CPU,
 * or -1 when the process is not bound to one. */
static int helper_sets(int local_rank, int local_size, cpu_set_t sets[2])
{
    cpu_set_t own, online, isolated;

    CPU_ZERO(&own);
    if (sched_getaffinity(0, sizeof(own), &own) != 0 || CPU_COUNT(&own) != 1)
        return -1;
    if (!read_cpu_list("/sys/devices/system/cpu/online", &online)) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        CPU_ZERO(&online);
        for (long k = 0; k < n && k < CPU_SETSIZE; k++)
            CPU_SET((int)k, &online);
    }
    if (!read_cpu_list("/sys/devices/system/cpu/isolated", &isolated))
        CPU_ZERO(&isolated);
    /* Within the CPUs the launcher was given (USHMEM_HELPER_CPUS). */
    const char *given = ushmemi_settings.helper_cpus;
    cpu_set_t allowed;
    if (given != NULL && given[0] != '\0') {
        if (ushmemi_parse_cpu_list(given, &allowed) == 0)
            CPU_AND(&online, &online, &allowed);
        else if (!warned_given++)
            ushmemi_warn("USHMEM_HELPER_CPUS=%s is not a CPU list (such as 0-3,8): ignored",
                         given);
    }
    int cpu = ushmemi_helper_cpus(&own, &online, &isolated, local_rank, local_size, &sets[0],
                                  &sets[1]);
    if (cpu >= 0 && have_pe_cpus) {
        /* Known rather than guessed: first every CPU of the second choice
         * that no PE of the node is bound to. */
        CPU_ZERO(&sets[0]);
        for (int k = 0; k < CPU_SETSIZE; k++)
            if (CPU_ISSET(k, &sets[1]) && !CPU_ISSET(k, &pe_cpus))
                CPU_SET(k, &sets[0]);
    }
    return cpu;
}

/* The trial thread: the CPUs it was let run on. */
static void *own_cpus(void *arg)
{
    cpu_set_t *got = arg;
    CPU_ZERO(got);
    if (sched_getaffinity(0, sizeof(*got), got) != 0)
        CPU_ZERO(got);
    return NULL;
}

int ushmemi_helper_cpu_count(int local_rank, int local_size, const cpu_set_t *taken)
{
    cpu_set_t sets[2], got;
    pthread_t t;
    int placed = 0;
    sigset_t all, old;

    if (helper_sets(local_rank, local_size, sets) < 0)
        return -1;
    /* A thread placed as a helper would be, which the kernel's cgroup may
     * refuse set by set or narrow; with every signal blocked, it only
     * reads the CPUs it got. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = create_placed(&t, own_cpus, &got, sets, 2, &placed);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return 0;
    pthread_join(t, NULL);
    if (placed == 0)
        return 0;
    int n = 0;
    for (int k = 0; k < CPU_SETSIZE; k++)
        n += CPU_ISSET(k, &got) && (taken == NULL || !CPU_ISSET(k, taken));
    return n;
}

bool ushmemi_helpers_may_spin(int usable, int quota, int helper_cpus, int local, int spinners)
{
    if (local < 1)
        local = 1;
    if (helper_cpus < 0)
        return usable >= (1 + spinners) * local;
    return helper_cpus >= spinners * local && (quota == 0 || quota >= (1 + spinners) * local);
}

int ushmemi_helper_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg,
                                const char *name, int local_rank, int local_size)
{
    sigset_t all, old;
    cpu_set_t sets[2];
    int placed = 0, rc;
    int cpu = helper_sets(local_rank, local_size, sets);

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = cpu >= 0 ? create_placed(thread, fn, arg, sets, 2, &placed)
                  : pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return rc;
    pthread_setname_np(*thread, name);
    if (cpu >= 0 && placed) {
        cpu_set_t got;
        CPU_ZERO(&got);
        pthread_getaffinity_np(*thread, sizeof(got), &got);
        ushmemi_debug("%s thread: the process is bound to CPU %d alone; the thread runs on %d "
                      "other CPUs, so that a spinning application thread does not starve it",
                      name, cpu, CPU_COUNT(&got));
    } else if (cpu >= 0) {
        ushmemi_debug("%s thread: the process is bound to CPU %d alone and no other CPU is "
                      "allowed here: the thread shares it", name, cpu);
    }
    return 0;
}
