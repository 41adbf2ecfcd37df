/* Copies whole pages of the program's data segment (moving it onto shared
 * memory and back). The copy covers every global of the segment and the
 * gaps between them, which AddressSanitizer poisons as redzones, so it is
 * done word by word outside its checks. len is a multiple of 8. */
#ifndef USHMEMI_PAGES_H
#define USHMEMI_PAGES_H

#include <stddef.h>
#include <stdint.h>

__attribute__((no_sanitize("address"))) static inline void ushmemi_copy_segment(void *dst,
                                                                               const void *src,
                                                                               size_t len)
{
    volatile uint64_t *d = dst;
    const volatile uint64_t *s = src;
    for (size_t i = 0; i < len / sizeof(uint64_t); i++)
        d[i] = s[i];
}

#endif
