/* Log output: one line per call, written with a single write(2) so that lines
 * from several PEs sharing a terminal do not interleave. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int ushmemi_log_level = USHMEMI_LOG_WARN;
static int log_pe = -1;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

void ushmemi_log_set_pe(int pe) { log_pe = pe; }

int ushmemi_log_parse_level(const char *text)
{
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
    if (text[0] >= '0' && text[0] <= '4' && text[1] == '\0')
        return text[0] - '0';
    for (int i = 0; i < 5; i++)
        if (strcasecmp(text, names[i]) == 0)
            return i;
    return -1;
}

void ushmemi_log_emit(enum ushmemi_log_level level, const char *file, int line,
                      const char *fmt, ...)
{
    int saved_errno = errno;
    char buf[1024];
    int n;

    if (log_pe >= 0)
        n = snprintf(buf, sizeof(buf), "ushmem[PE %d] %s: ", log_pe, level_names[level]);
    else
        n = snprintf(buf, sizeof(buf), "ushmem[PE ?] %s: ", level_names[level]);
    if (n < 0)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += m;
    if ((size_t)n >= sizeof(buf) - 64)
        n = (int)sizeof(buf) - 64;
    if (ushmemi_log_level >= USHMEMI_LOG_DEBUG) {
        const char *base = strrchr(file, '/');
        m = snprintf(buf + n, sizeof(buf) - (size_t)n, " (%s:%d)", base ? base + 1 : file, line);
        if (m > 0)
            n += m;
    }
    buf[n++] = '\n';
    ssize_t rc = write(STDERR_FILENO, buf, (size_t)n);
    (void)rc;
    errno = saved_errno;
}
