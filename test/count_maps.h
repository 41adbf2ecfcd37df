/* The number of mappings of the calling process, for tests that check that
 * a cycle of allocations leaves none behind; -1 when /proc/self/maps cannot
 * be read. Under AddressSanitizer the regions its allocator maps for the
 * program's malloc, each as first needed, are not counted: they are the
 * sanitizer's, not a leak of the code under test. */
#ifndef USHMEM_TEST_COUNT_MAPS_H
#define USHMEM_TEST_COUNT_MAPS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether a mapping starting at `start` is the sanitizer allocator's:
 * kAllocatorSpace and kAllocatorSize of compiler-rt's asan_allocator.h. */
static inline int test_sanitizer_malloc_map(unsigned long long start)
{
#if defined(__SANITIZE_ADDRESS__) && defined(__x86_64__)
    return start >= 0x600000000000ULL && start < 0x600000000000ULL + 0x40000000000ULL;
#else
    (void)start;
    return 0;
#endif
}

static inline int test_count_maps(void)
{
    FILE *fp = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    int line_start = 1;

    if (fp == NULL)
        return -1;
    while (fgets(line, sizeof line, fp) != NULL) {
        if (line_start)
            n += !test_sanitizer_malloc_map(strtoull(line, NULL, 16));
        line_start = strchr(line, '\n') != NULL; /* a long line comes in pieces */
    }
    fclose(fp);
    return n;
}

#endif
