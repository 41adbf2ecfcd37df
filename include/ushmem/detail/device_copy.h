/* The copy the C++ device branches share (CUDA and SYCL): n bytes between
 * this device's memory and a mapped peer's, the threads of a cooperative call
 * sharing the work. Included by detail/device_cuda.h and detail/device_sycl.h,
 * which define first:
 *   USHMEMI_DEV_COPY_FN  the qualifiers of its functions;
 *   ushmemi_dev_word16   a 16-byte word type, 16-byte aligned, copied by one
 *                        load and one store where the device has them;
 *   USHMEMI_DEV_UNROLL   a pragma that unrolls the next loop, or nothing;
 * and may define:
 *   USHMEMI_DEV_COPY_FRESH(n)  n, as a value the optimizer must take as new
 *                        at each call (see ushmemi_dev_copy_general). */
#ifndef USHMEM_DETAIL_DEVICE_COPY_H
#define USHMEM_DETAIL_DEVICE_COPY_H

#if !defined(USHMEMI_DEV_COPY_FRESH)
#define USHMEMI_DEV_COPY_FRESH(n) (n)
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
    /* A lone thread (size 1, known where a thread's call is inlined) keeps
     * two words in flight: four, with a loop of such calls around them,
     * took more registers than a block of 1024 threads has. */
    if (size == 1) {
        for (; i + 1 < nw; i += 2) {
            W v0 = s[i], v1 = s[i + 1];
            d[i] = v0;
            d[i + 1] = v1;
        }
    }
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
 * arithmetic. Indices are 32-bit: n plus a stride of indices stays below
 * 2^32 in pieces of 1 GiB (a piece starts 2^30 bytes after the last, so
 * both ends keep their alignment and each piece is a whole copy). */
template <typename W>
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_as(char *dst, const char *src, size_t n, unsigned rank,
                                            unsigned size)
{
    const size_t piece = (size_t)1 << 30;

    if (rank >= sizeof(W) && rank >= n / sizeof(W))
        return;
    for (size_t done = 0; done < n; done += piece) {
        size_t left = n - done;
        ushmemi_dev_copy_words<W, unsigned>(dst + done, src + done,
                                            (unsigned)(left < piece ? left : piece), rank, size);
    }
}
/* Ends that 16-byte words do not fit (their skew is not a multiple of 16):
 * words of 8, 4 or 1 byte, one at a time. Rare, and slower than the
 * 16-byte copy; kept plain because every form of the copy that a call
 * inlines adds to the registers a user's loop of calls keeps alive (a
 * block of 1024 threads has 64 each). */
template <typename W>
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_plain(char *dst, const char *src, size_t n,
                                               unsigned rank, unsigned size)
{
    size_t head = (sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1);
    if (head > n)
        head = n;
    size_t nw = (n - head) / sizeof(W);
    W *d = reinterpret_cast<W *>(dst + head);
    const W *s = reinterpret_cast<const W *>(src + head);
    for (size_t i = rank; i < head; i += size)
        dst[i] = src[i];
    for (size_t i = rank; i < nw; i += size)
        d[i] = s[i];
    for (size_t j = head + nw * sizeof(W) + rank; j < n; j += size)
        dst[j] = src[j];
}
/* Any message in the widest word that the skew of its ends allows: more
 * than four 16-byte words a thread (four in flight per thread, as a load
 * from a peer's memory takes a microsecond), or ends that 16-byte words do
 * not fit. Inline: a call to a function of its own (__noinline__) costs
 * every kernel compiled with relocatable device code (-rdc, as NVSHMEM
 * programs are) the registers ptxas gives such a function, 76 and more,
 * whatever the call does; and an inlined copy keeps two forms (16-byte
 * words four at a time, and one plain loop), where it had eight. */
USHMEMI_DEV_COPY_FN void ushmemi_dev_copy_general(char *d, const char *s, size_t n,
                                                  unsigned rank, unsigned size)
{
    uintptr_t skew = (uintptr_t)d ^ (uintptr_t)s;

    if ((skew & 15) == 0)
        ushmemi_dev_copy_as<ushmemi_dev_word16>(d, s, n, rank, size);
    else if ((skew & 7) == 0)
        ushmemi_dev_copy_plain<uint64_t>(d, s, n, rank, size);
    else if ((skew & 3) == 0)
        ushmemi_dev_copy_plain<uint32_t>(d, s, n, rank, size);
    else
        ushmemi_dev_copy_plain<char>(d, s, n, rank, size);
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
    /* What the paths derive from the length (word counts, head, bounds) is
     * worked out at each call: hoisted out of a user's loop of the same
     * call, it stayed alive for the whole loop, every path's at once (90
     * registers for a thread's loop of gets of one message). */
    n = USHMEMI_DEV_COPY_FRESH(n);
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
