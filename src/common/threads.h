/* Starting the library's helper threads (the proxy, the fabric's progress
 * thread): with every asynchronous signal blocked, since signals belong to
 * the application's threads, and off the application's CPU when the process
 * is bound to a single one (oshrun --bind-to core). Sharing that CPU, a
 * helper thread runs only when the scheduler preempts the application
 * thread, which often spins (a CUDA synchronisation spins by default): a
 * request would wait milliseconds. It then runs on the other online CPUs
 * that are not isolated (isolcpus), leaving out first the block of CPUs that
 * launchers bind the node's PEs to (local rank r on the r-th CPU: here, own
 * CPU - local_rank and the local_size - 1 after it), where another PE's
 * thread may spin as well. When the kernel allows none of those (a cgroup's
 * cpuset), it tries the other CPUs with that block, and only then stays on
 * the process's CPU. */
#ifndef USHMEMI_THREADS_H
#define USHMEMI_THREADS_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

/* pthread_create with the rules above; `name` names the thread (15
 * characters at most) and its log lines; local_rank and local_size place
 * the PE on its node (local_size < 2: alone or unknown). Returns
 * pthread_create's code. */
int ushmemi_helper_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg,
                                const char *name, int local_rank, int local_size);

/* The choice itself, for given CPU sets: when `own` holds exactly one CPU,
 * fills `first` (online, not isolated, neither own nor the PEs' block) and
 * `second` (the same with the block) and returns the own CPU; else returns
 * -1. Either set may come out empty. */
int ushmemi_helper_cpus(const cpu_set_t *own, const cpu_set_t *online,
                        const cpu_set_t *isolated, int local_rank, int local_size,
                        cpu_set_t *first, cpu_set_t *second);

/* The CPUs the node's PEs are bound to (the union of their affinity
 * masks): helper threads are placed off them first, instead of off the
 * block guessed from the local rank (NULL: not known, guess again). Call
 * before the first helper. */
void ushmemi_helper_avoid(const cpu_set_t *pes);

/* How many CPUs the helper threads of this process run on when it is bound
 * to one CPU, leaving out `taken` (NULL: none): the CPUs a thread that
 * does nothing, placed as a helper is (the kernel's cgroup may refuse or
 * narrow a set), got. 0: none (they share the process's CPU); -1: the
 * process is not bound to one CPU. */
int ushmemi_helper_cpu_count(int local_rank, int local_size, const cpu_set_t *taken);

/* Whether `spinners` helper threads a PE may spin while idle for the
 * node's `local` PEs: with the process bound to one CPU (helper_cpus >= 0,
 * from ushmemi_helper_cpu_count without the PEs' own CPUs), one of the
 * helpers' CPUs for each spinning thread, and a cgroup quota (0: none)
 * that leaves each PE its own CPU besides; otherwise as many usable CPUs
 * (affinity and quota, struct ushmemi_cpus) as the PEs and their spinning
 * threads. */
bool ushmemi_helpers_may_spin(int usable, int quota, int helper_cpus, int local, int spinners);

/* Parses a kernel CPU list ("0-3,8,10-11"), as in
 * /sys/devices/system/cpu/online, into set; returns 0, or -1 when malformed. */
int ushmemi_parse_cpu_list(const char *text, cpu_set_t *set);

#endif
