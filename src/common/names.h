/* Near misses among variable names: what the library (SHMEM_, USHMEM_) and
 * oshrun (OSHRUN_) use to suggest the name a typo meant. No dependencies,
 * so that oshrun links it alone. */
#ifndef USHMEMI_NAMES_H
#define USHMEMI_NAMES_H

#include <stddef.h>

/* Names this far apart or more are no near miss. */
#define USHMEMI_NAME_FAR 3

/* Edit distance (insertions, deletions, substitutions) between a[0..alen)
 * and b, at most USHMEMI_NAME_FAR; names of 64 characters or more count
 * as far. */
size_t ushmemi_name_distance(const char *a, size_t alen, const char *b);

#endif
