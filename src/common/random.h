/* Bytes nobody can guess, for names, secrets and keys that another local
 * user must not predict. */
#ifndef USHMEMI_RANDOM_H
#define USHMEMI_RANDOM_H

#include <stddef.h>

/* Fills buf with len bytes from getrandom (retrying after signals and short
 * reads). Returns 0, or the errno of the failure (EIO when getrandom
 * returned no bytes). */
int ushmemi_random_bytes(void *buf, size_t len);

#endif
