/* Helpers for Check suites that fork processes: a monotonic clock and a
 * bounded wait for a child. */
#ifndef USHMEM_TEST_CHILD_UTIL_H
#define USHMEM_TEST_CHILD_UTIL_H

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits for a child, killing it when it outlives limit_s. Returns its exit
 * code; -100 - N when signal N killed it; -2 when it was killed here for
 * running too long; -1 when waitpid failed. */
static inline int reap(pid_t pid, double limit_s)
{
    double deadline = now_s() + limit_s;
    int wstatus;
    for (;;) {
        pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid)
            break;
        if (r < 0)
            return -1;
        if (now_s() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            return -2;
        }
        usleep(1000);
    }
    if (WIFSIGNALED(wstatus))
        return -100 - WTERMSIG(wstatus);
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

#endif
