/* The copy the C++ device branches share (CUDA and SYCL): n bytes between
 * this device's memory and a mapped peer's, the threads of a cooperative call
 * sharing the work. Included by detail/device_cuda.h and detail/device_sycl.h,
 * which define first:
 *   USHMEMI_DEV_COPY_FN  the qualifiers of its functions;
 *   ushmemi_dev_word16   a 16-byte word type, 16-byte aligned, copied by one
 *                        load and one store where the device has them;
 *   USHMEMI_DEV_UNROLL   a pragma that unrolls the next loop, or nothing;
 * and may define:
 *   USHMEMI_DEV_COPY_COLD_FN  the qualifiers of the general copy, kept out
 *                        of line (default: USHMEMI_DEV_COPY_FN). */
#ifndef USHMEM_DETAIL_DEVICE_COPY_H
#define USHMEM_DETAIL_DEVICE_COPY_H

#if !defined(USHMEMI_DEV_COPY_COLD_FN)
#define USHMEMI_DEV_COPY_COLD_FN USHMEMI_DEV_COPY_FN
#endif

/* Copies n bytes with `size` threads, this one being `rank`, in words of W
 * bytes (dst and src share their alignment modulo W); up to four words in
 * flight per thread, since a load from a peer's memory takes a microsecond
 * (and more would spill registers in blocks of 1024 threads). Indices are of type
 * I: 32-bit whenever the words fit, since every instruction counts when a
 * block's 32 warps share an SM's four schedulers for a small message. */
template <typename W, typename I>
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_words(char *dst, const char *src, I n, I rank, I size)
{
    I head = (I)((sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1));
    if (head > n)
        head = n;
    for (I i = rank; i < head; i += size)
        dst[i] = src[i];
    W *d = reinterpret_cast<W *>(dst + head);
    const W *s = reinterpret_cast<const W *>(src + head);
    I nw = (n - head) / (I)sizeof(W), i = rank;
    for (; i + 3 * size < nw; i += 4 * size) {
        W v[4];
        USHMEMI_DEV_UNROLL
        for (I k = 0; k < 4; k++)
            v[k] = s[i + k * size];
        USHMEMI_DEV_UNROLL
        for (I k = 0; k < 4; k++)
            d[i + k * size] = v[k];
    }
    /* The last words, fewer than four a thread: loaded together too, so
     * that a get of two or three words a thread waits for one round trip
     * to the peer, not one per word. */
    if (i < nw) {
        I i1 = i + size, i2 = i + 2 * size;
        W v0 = s[i], v1 = v0, v2 = v0;
        if (i1 < nw)
            v1 = s[i1];
        if (i2 < nw)
            v2 = s[i2];
        d[i] = v0;
        if (i1 < nw)
            d[i1] = v1;
        if (i2 < nw)
            d[i2] = v2;
    }
    for (I j = head + nw * (I)sizeof(W) + rank; j < n; j += size)
        dst[j] = src[j];
}
/* A thread of rank >= W with no word of its own (rank >= n / W) has nothing
 * to copy: the head and tail bytes go to ranks below W. Such threads, most
 * of a block for a small message, leave before any of the copy's
 * arithmetic. */
template <typename W>
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_as(char *dst, const char *src, size_t n, unsigned rank,
                                            unsigned size)
{
    if (rank >= sizeof(W) && rank >= n / sizeof(W))
        return;
    /* The 32-bit form needs n plus a stride of indices to stay below 2^32. */
    if (n <= (size_t)UINT32_MAX - 4u * (size_t)size * sizeof(W))
        ushmemi_dev_copy_words<W, unsigned>(dst, src, (unsigned)n, rank, size);
    else
        ushmemi_dev_copy_words<W, size_t>(dst, src, n, rank, size);
}
/* Any message in the widest word that the skew of its ends allows: more
 * than four 16-byte words a thread, or ends that 16-byte words do not fit.
 * Out of line where the device allows (USHMEMI_DEV_COPY_COLD_FN): its eight
 * forms of the copy, each with up to four words in flight, cost a caller
 * their registers only while one of them runs. Inlined, a user's loop of
 * puts or gets (nothing in it bounding the registers, as
 * __launch_bounds__(1024) does) kept what every form hoisted out of the
 * loop alive at once: 79 registers for a loop of putmem_nbi_block, 124 for
 * getmem_block, where a block of 1024 threads can have 64, and the kernel
 * could not launch. A call costs nothing beside such a copy. */
USHMEMI_DEV_COPY_COLD_FN void ushmemi_dev_copy_general(char *d, const char *s, size_t n,
                                                       unsigned rank, unsigned size)
{
    uintptr_t skew = (uintptr_t)d ^ (uintptr_t)s;

    if ((skew & 15) == 0)
        ushmemi_dev_copy_as<ushmemi_dev_word16>(d, s, n, rank, size);
    else if ((skew & 7) == 0)
        ushmemi_dev_copy_as<uint64_t>(d, s, n, rank, size);
    else if ((skew & 3) == 0)
        ushmemi_dev_copy_as<uint32_t>(d, s, n, rank, size);
    else
        ushmemi_dev_copy_as<char>(d, s, n, rank, size);
}
/* One 8-byte word, both ends 8-byte aligned: a lone thread's long, a
 * signal's payload. */
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_word64(void *dst, const void *src)
{
    *static_cast<uint64_t *>(dst) = *static_cast<const uint64_t *>(src);
}
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_group(void *dst, const void *src, size_t n,
                                                unsigned rank, unsigned size)
{
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    uintptr_t skew = (uintptr_t)d ^ (uintptr_t)s;
    uintptr_t common = (uintptr_t)d | skew | n;

    /* At most one aligned word per thread (a small message for a block or
     * warp; p, g or a flag for one thread), in the widest word that the
     * addresses and the length allow: one load and one store, so that a
     * waiting PE never sees a single word half written, and none of the
     * general copy's branches, which cost more than the copy itself (8
     * bytes from a warp were 8 one-byte stores through them). 16-byte
     * words, the usual case, are tested first and alone. */
    if ((common & 15) == 0 && n / 16 <= size) {
        if (rank < n / 16)
            reinterpret_cast<ushmemi_dev_word16 *>(d)[rank] =
                reinterpret_cast<const ushmemi_dev_word16 *>(s)[rank];
        return;
    }
    unsigned lg = (common & 7) == 0 ? 3 : (common & 3) == 0 ? 2 : (common & 1) == 0 ? 1 : 0;
    if ((n >> lg) <= size) {
        if (rank < (n >> lg)) {
            switch (lg) {
            case 3:
                reinterpret_cast<uint64_t *>(d)[rank] = reinterpret_cast<const uint64_t *>(s)[rank];
                break;
            case 2:
                reinterpret_cast<uint32_t *>(d)[rank] = reinterpret_cast<const uint32_t *>(s)[rank];
                break;
            case 1:
                reinterpret_cast<uint16_t *>(d)[rank] = reinterpret_cast<const uint16_t *>(s)[rank];
                break;
            default:
                d[rank] = s[rank];
                break;
            }
        }
        return;
    }
    /* Up to four 16-byte words per thread, every word whole: one word at a
     * time, in the plainest loop. Between two H200s this moved 0.91-0.96
     * of NVSHMEM's bandwidth where the general copy below (four words
     * loaded together, or the last two or three) moved 0.79-0.88: a
     * block's 32 and 64 KiB, put and get, and a thread's 64 bytes; beyond
     * four words a thread the loads in flight win (a get from one block:
     * about twice the one-at-a-time loop at 128 KiB). */
    if ((skew & 15) == 0 && (((uintptr_t)d | n) & 15) == 0 && n / 16 <= 4 * (size_t)size) {
        ushmemi_dev_word16 *__restrict__ dw = reinterpret_cast<ushmemi_dev_word16 *>(d);
        const ushmemi_dev_word16 *__restrict__ sw =
            reinterpret_cast<const ushmemi_dev_word16 *>(s);
        for (size_t i = rank; i < n / 16; i += size)
            dw[i] = sw[i];
        return;
    }
    ushmemi_dev_copy_general(d, s, n, rank, size);
}

#endif /* USHMEM_DETAIL_DEVICE_COPY_H */
