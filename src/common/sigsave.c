/* Saving and restoring signal dispositions (sigsave.h). */
#include "sigsave.h"

#include <stdio.h>
#include <string.h>

void ushmemi_sigsave(struct ushmemi_sigsave *s)
{
    for (int sig = 1; sig < NSIG; sig++)
        s->have[sig] = sigaction(sig, NULL, &s->act[sig]) == 0;
}

static bool same_action(const struct sigaction *a, const struct sigaction *b)
{
    if ((a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO))
        return false;
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction == b->sa_sigaction
                                      : a->sa_handler == b->sa_handler;
}

int ushmemi_sigrestore(const struct ushmemi_sigsave *s, char *changed, size_t len)
{
    int n = 0;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (!s->have[sig] || sigaction(sig, NULL, &now) != 0 || same_action(&now, &s->act[sig]))
            continue;
        sigaction(sig, &s->act[sig], NULL);
        n++;
        size_t used = changed != NULL ? strlen(changed) : len;
        if (used + 1 < len) {
            const char *name = sigabbrev_np(sig);
            snprintf(changed + used, len - used, "%sSIG%s", used > 0 ? " " : "",
                     name != NULL ? name : "?");
        }
    }
    return n;
}
