/* Starting the library's helper threads (the proxy, the fabric's progress
 * thread): with every asynchronous signal blocked, since signals belong to
 * the application's threads, and off the application's CPU when the process
 * is bound to a single one (oshrun --bind-to core). Sharing that CPU, a
 * helper thread runs only when the scheduler preempts the application
 * thread, which often spins (a CUDA synchronisation spins by default): a
 * request would wait milliseconds. It then runs on the other CPUs, leaving
 * out, where others remain, the block of CPUs that launchers bind the node's
 * PEs to (local rank r on the r-th CPU: here, own CPU - local_rank and the
 * local_size - 1 after it), where another PE's thread may spin as well. */
#ifndef USHMEMI_THREADS_H
#define USHMEMI_THREADS_H

#include <pthread.h>

/* pthread_create with the rules above; `name` names the thread (15
 * characters at most) and its log lines; local_rank and local_size place
 * the PE on its node (local_size < 2: alone or unknown). Returns
 * pthread_create's code. */
int ushmemi_helper_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg,
                                const char *name, int local_rank, int local_size);

#endif
