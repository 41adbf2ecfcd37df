/* The copy that CUDA and SYCL kernels share (include/ushmem/detail/
 * device_copy.h), run on the host: each rank of a group of `size` threads
 * is called in turn, as the group's threads would run it, and together they
 * must copy exactly the n bytes, for every relative alignment the copy tells
 * apart, group sizes from one thread to a block, and lengths across each
 * boundary between its paths (one word per thread, up to four whole
 * 16-byte words per thread one at a time, the four-word loop and its tail,
 * heads and tails of bytes). Bytes around the destination must
 * stay as they were. */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define USHMEMI_DEV_COPY_FN static inline
struct alignas(16) ushmemi_dev_word16 {
    uint64_t lo, hi;
};
#define USHMEMI_DEV_UNROLL
#include <ushmem/detail/device_copy.h>

static int failures;

static void check(size_t n, unsigned doff, unsigned soff, unsigned size)
{
    const size_t guard = 64;
    static std::vector<unsigned char> dbuf, sbuf;
    dbuf.assign(n + 2 * guard + 32, 0xA5);
    sbuf.resize(n + 2 * guard + 32);
    for (size_t i = 0; i < sbuf.size(); i++)
        sbuf[i] = (unsigned char)(i * 131 + 7);
    /* 16-byte aligned bases, then the offsets under test. */
    unsigned char *dbase = dbuf.data() + ((16 - ((uintptr_t)dbuf.data() & 15)) & 15);
    unsigned char *sbase = sbuf.data() + ((16 - ((uintptr_t)sbuf.data() & 15)) & 15);
    unsigned char *d = dbase + guard + doff, *s = sbase + guard + soff;

    for (unsigned rank = 0; rank < size; rank++)
        ushmemi_dev_copy_group(d, s, n, rank, size);
    if (memcmp(d, s, n) != 0) {
        size_t at = 0;
        while (d[at] == s[at])
            at++;
        if (failures++ < 20)
            fprintf(stderr, "copy_group of %zu bytes, offsets %u / %u, %u threads: byte %zu "
                            "differs\n", n, doff, soff, size, at);
        return;
    }
    for (unsigned char *p = dbase; p < d; p++)
        if (*p != 0xA5) {
            if (failures++ < 20)
                fprintf(stderr, "copy_group of %zu bytes, offsets %u / %u, %u threads: wrote "
                                "%td bytes before the destination\n", n, doff, soff, size, d - p);
            return;
        }
    for (unsigned char *p = d + n; p < d + n + guard; p++)
        if (*p != 0xA5) {
            if (failures++ < 20)
                fprintf(stderr, "copy_group of %zu bytes, offsets %u / %u, %u threads: wrote "
                                "byte %td past the end\n", n, doff, soff, size, p - (d + n));
            return;
        }
}

int main(void)
{
    const unsigned sizes[] = {1, 2, 3, 32, 64, 1024};
    const unsigned offs[] = {0, 1, 2, 3, 4, 7, 8, 9, 12, 15, 16};
    size_t calls = 0;

    for (unsigned size : sizes) {
        std::vector<size_t> lens;
        for (size_t n = 0; n <= 80; n++)
            lens.push_back(n);
        /* Around one word per thread, and one to five rounds of the loop,
         * in 16-, 8-, 4- and 1-byte words. */
        for (size_t w : {16u, 8u, 4u, 1u})
            for (size_t k = 1; k <= 5; k++)
                for (long delta : {-17L, -1L, 0L, 1L, 8L, 15L, 16L, 33L})
                    if ((long)(k * w * size) + delta > 80)
                        lens.push_back((size_t)((long)(k * w * size) + delta));
        for (size_t n : lens)
            for (unsigned doff : offs)
                for (unsigned soff : offs) {
                    check(n, doff, soff, size);
                    calls++;
                }
    }
    if (failures != 0) {
        fprintf(stderr, "device_copy: %d of %zu copies wrong\n", failures, calls);
        return 1;
    }
    printf("device_copy: %zu copies right\n", calls);
    return 0;
}
