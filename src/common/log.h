/* Logging: every line carries the PE; the level is checked before formatting
 * and errno is preserved across a log call. */
#ifndef USHMEMI_LOG_H
#define USHMEMI_LOG_H

enum ushmemi_log_level {
    USHMEMI_LOG_ERROR = 0,
    USHMEMI_LOG_WARN = 1,
    USHMEMI_LOG_INFO = 2,
    USHMEMI_LOG_DEBUG = 3,
    USHMEMI_LOG_TRACE = 4,
};

extern int ushmemi_log_level;

/* Set once the PE is known; -1 prints "?" */
void ushmemi_log_set_pe(int pe);
/* Parses "error|warn|info|debug|trace" or a digit; returns -1 when unknown. */
int ushmemi_log_parse_level(const char *text);

void ushmemi_log_emit(enum ushmemi_log_level level, const char *file, int line,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define ushmemi_log(level, ...)                                               \
    do {                                                                      \
        if ((int)(level) <= ushmemi_log_level)                                \
            ushmemi_log_emit((level), __FILE__, __LINE__, __VA_ARGS__);       \
    } while (0)

#define ushmemi_error(...) ushmemi_log(USHMEMI_LOG_ERROR, __VA_ARGS__)
#define ushmemi_warn(...) ushmemi_log(USHMEMI_LOG_WARN, __VA_ARGS__)
#define ushmemi_info(...) ushmemi_log(USHMEMI_LOG_INFO, __VA_ARGS__)
#define ushmemi_debug(...) ushmemi_log(USHMEMI_LOG_DEBUG, __VA_ARGS__)
#define ushmemi_trace(...) ushmemi_log(USHMEMI_LOG_TRACE, __VA_ARGS__)

#endif
