/* The program's signal dispositions, saved before third-party code runs
 * and put back after it: libraries ushmem loads (libfabric and the
 * libraries it pulls in, the GPU runtimes it starts) may install handlers
 * of their own, and a program linked with ushmem keeps the dispositions it
 * would have without it. */
#ifndef USHMEMI_COMMON_SIGSAVE_H
#define USHMEMI_COMMON_SIGSAVE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct ushmemi_sigsave {
    struct sigaction act[NSIG];
    bool have[NSIG];
};

void ushmemi_sigsave(struct ushmemi_sigsave *s);
/* Puts back every disposition that changed since ushmemi_sigsave and
 * appends the names of those signals ("SIGINT SIGTERM") to changed, which
 * holds len bytes and a string; returns how many. */
int ushmemi_sigrestore(const struct ushmemi_sigsave *s, char *changed, size_t len);

#endif
