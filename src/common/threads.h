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

/* How many CPUs the helper threads of this process run on when it is bound
 * to one CPU (the first candidate set the kernel accepts, tried with a
 * thread that does nothing; 0: none, they share the process's CPU), or -1
 * when it is not bound to one. */
int ushmemi_helper_cpu_count(int local_rank, int local_size);

/* Whether helper threads may spin while idle, one a PE for the node's
 * `local` PEs: with the process bound to one CPU (helper_cpus >= 0, from
 * ushmemi_helper_cpu_count), one of the helpers' CPUs a PE and a cgroup
 * quota (0: none) of two CPUs a PE; otherwise two usable CPUs (affinity and
 * quota, struct ushmemi_cpus) a PE. */
bool ushmemi_helpers_may_spin(int usable, int quota, int helper_cpus, int local);

/* Parses a kernel CPU list ("0-3,8,10-11"), as in
 * /sys/devices/system/cpu/online, into set; returns 0, or -1 when malformed. */
int ushmemi_parse_cpu_list(const char *text, cpu_set_t *set);

#endif
