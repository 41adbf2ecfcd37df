#include "random.h"

#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

int ushmemi_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t got = 0;

    while (got < len) {
        ssize_t n = getrandom(p + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EIO;
        got += (size_t)n;
    }
    return 0;
}
