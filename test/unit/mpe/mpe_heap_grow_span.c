/* Transfers across the heap's growth boundaries: where the fabric registers
 * the heap per chunk (GPU memory with FI_HMEM, or USHMEMI_OFI_CHUNK_REG=1),
 * each growth is a registration of its own, and one put or get whose range
 * starts in one chunk and ends in the next must become one transfer per
 * chunk, on the peer's side and on ours.
 *
 * usage: mpe_heap_grow_span STEP COUNT   sizes with K, M suffixes
 *   Allocates COUNT blocks of STEP bytes past a small SHMEM_SYMMETRIC_SIZE.
 *   A STEP that is not a multiple of 2 MiB leaves part of each growth free,
 *   so the next block starts in one chunk and ends in the next. Then, for
 *   every block, in rounds where each PE targets one PE (every PE once,
 *   itself included): one shmem_putmem of the whole block and one at odd
 *   ends, shmem_getmem back at odd ends; shmem_putmem_nbi in pieces of odd
 *   sizes up to 16 KiB and one of most of the block, shmem_getmem_nbi of all
 *   of it; a get into and a put from this PE's own heap, whose block spans
 *   a boundary of its own. Every byte is checked, by the owner (reading its
 *   own heap) and by the writer (reading the peer's).
 *
 * Only the user API: every byte moves through shmem_putmem and friends. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpe_check.h"

static size_t parse_size(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    size_t mult = *end == 'K' || *end == 'k'   ? (size_t)1 << 10
                  : *end == 'M' || *end == 'm' ? (size_t)1 << 20
                  : *end == '\0'               ? 1
                                               : 0;
    if (v <= 0 || mult == 0) {
        fprintf(stderr, "mpe_heap_grow_span: '%s' is not a positive size\n", text);
        exit(2);
    }
    return (size_t)(v * (double)mult);
}

/* The byte that PE pe writes at offset i of a block under `tag`. */
static unsigned char pattern(int pe, int tag, size_t i)
{
    return (unsigned char)(i * 131u + (size_t)pe * 17u + (size_t)tag * 29u + (i >> 12));
}

static void fill(unsigned char *buf, size_t len, int pe, int tag)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(pe, tag, i);
}

/* What one round leaves in a block: tag `outer` outside [from, to), `inner`
 * inside, as written by PE pe. */
struct expect {
    int pe, outer, inner;
    size_t from, to;
};

static unsigned char expected(const struct expect *e, size_t i)
{
    return pattern(e->pe, i >= e->from && i < e->to ? e->inner : e->outer, i);
}

/* Checks bytes [from, to) of a copy of pe's block k, held in got[0, to - from). */
static void check(const unsigned char *got, size_t from, size_t to, const struct expect *e,
                  int pe, int k, const char *what)
{
    for (size_t i = from; i < to; i++)
        MPE_CHECK(got[i - from] == expected(e, i),
                  "%s: byte %zu of PE %d's block %d is 0x%02x, not 0x%02x (written by PE %d)",
                  what, i, pe, k, got[i - from], expected(e, i), e->pe);
}

/* The owner reads its whole block and checks it. */
static void owner_check(unsigned char *block, size_t len, const struct expect *e, int k,
                        unsigned char *back, const char *what)
{
    int me = shmem_my_pe();
    shmem_getmem(back, block, len, me);
    check(back, 0, len, e, me, k, what);
}

struct span {
    unsigned char **blocks;
    int count;
    size_t len;
    unsigned char *buf, *back; /* private, len bytes each */
};

/* Blocking put of the whole block, then of [1, len - 3); get of [3, len - 4). */
static void round_blocking(const struct span *s, int k, int target, int from_pe, int tag)
{
    int me = shmem_my_pe();
    size_t len = s->len;
    unsigned char *block = s->blocks[k];
    fill(s->buf, len, me, tag);
    shmem_putmem(block, s->buf, len, target);
    fill(s->buf, len, me, tag + 1);
    shmem_putmem(block + 1, s->buf + 1, len - 4, target);
    shmem_barrier_all();
    struct expect mine = {from_pe, tag, tag + 1, 1, len - 3};
    owner_check(block, len, &mine, k, s->back, "blocking put, read by its owner");
    struct expect theirs = {me, tag, tag + 1, 1, len - 3};
    shmem_getmem(s->back, block + 3, len - 7, target);
    check(s->back, 3, len - 4, &theirs, target, k, "blocking put, then get");
    shmem_barrier_all();
}

/* put_nbi in pieces of odd sizes (bounce slots: one of them crosses each
 * boundary), then one large put_nbi of [5, len); get_nbi of the block. */
static void round_nbi(const struct span *s, int k, int target, int from_pe, int tag)
{
    static const size_t pieces[] = {16383, 4093, 12289, 1};
    int me = shmem_my_pe();
    size_t len = s->len;
    unsigned char *block = s->blocks[k];
    fill(s->buf, len, me, tag);
    for (size_t done = 0, p = 0; done < len; p++) {
        size_t n = pieces[p % 4] < len - done ? pieces[p % 4] : len - done;
        shmem_putmem_nbi(block + done, s->buf + done, n, target);
        done += n;
    }
    shmem_quiet();
    fill(s->buf, len, me, tag + 1);
    shmem_putmem_nbi(block + 5, s->buf + 5, len - 5, target);
    memset(s->buf, 0, len); /* the caller may reuse the source at once */
    shmem_quiet();
    shmem_barrier_all();
    struct expect mine = {from_pe, tag, tag + 1, 5, len};
    owner_check(block, len, &mine, k, s->back, "put_nbi, read by its owner");
    struct expect theirs = {me, tag, tag + 1, 5, len};
    memset(s->back, 0, len);
    shmem_getmem_nbi(s->back, block, len, target);
    shmem_quiet();
    check(s->back, 0, len, &theirs, target, k, "put_nbi, then get_nbi");
    shmem_barrier_all();
}

/* This PE's own heap as the local side: the target's block k (as
 * round_nbi left it) is read into [7, len) of this PE's block k2, and
 * then put from there back into the target's block k shifted by one byte
 * ([0, len - 8) takes what was at [1, len - 7)). */
static void round_local(const struct span *s, int k, int target, int tag)
{
    int me = shmem_my_pe();
    size_t len = s->len;
    int k2 = (k + 1) % s->count;
    unsigned char *block = s->blocks[k], *own = s->blocks[k2];
    struct expect was = {me, tag, tag + 1, 5, len};
    shmem_getmem(own + 7, block, len - 7, target);
    shmem_getmem(s->back, own + 7, len - 7, me);
    check(s->back, 0, len - 7, &was, target, k, "get into this PE's heap");
    shmem_barrier_all(); /* nobody reads the target's block k any more */
    shmem_putmem(block, own + 8, len - 8, target);
    shmem_getmem(s->back, block, len, target);
    for (size_t i = 0; i < len; i++) {
        unsigned char want = expected(&was, i < len - 8 ? i + 1 : i);
        MPE_CHECK(s->back[i] == want, "put from this PE's heap: byte %zu of PE %d's block %d "
                  "is 0x%02x, not 0x%02x", i, target, k, s->back[i], want);
    }
    shmem_barrier_all();
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mpe_heap_grow_span STEP COUNT\n");
        return 2;
    }
    struct span s = {.len = parse_size(argv[1]), .count = atoi(argv[2])};
    if (s.len < 64 * 1024 || s.count < 2) {
        fprintf(stderr, "mpe_heap_grow_span: STEP must be at least 64K and COUNT at least 2\n");
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    s.blocks = calloc((size_t)s.count, sizeof(*s.blocks));
    s.buf = malloc(s.len);
    s.back = malloc(s.len);
    MPE_CHECK(s.blocks != NULL && s.buf != NULL && s.back != NULL, "out of host memory");
    for (int k = 0; k < s.count; k++) {
        s.blocks[k] = shmem_malloc(s.len);
        MPE_CHECK(s.blocks[k] != NULL, "shmem_malloc(%zu) of block %d returned NULL", s.len, k);
    }
    for (int r = 0; r < npes; r++) {
        int target = (me + r) % npes, from_pe = (me - r + npes) % npes;
        for (int k = 0; k < s.count; k++) {
            int tag = 4 * (r * s.count + k);
            round_blocking(&s, k, target, from_pe, tag);
            round_nbi(&s, k, target, from_pe, tag + 2);
            round_local(&s, k, target, tag + 2);
        }
    }
    for (int k = s.count - 1; k >= 0; k--)
        shmem_free(s.blocks[k]);
    free(s.back);
    free(s.buf);
    free(s.blocks);
    if (me == 0)
        printf("PE 0: %d blocks of %zu bytes across heap growths, every transfer checked on %d "
               "PEs\n", s.count, s.len, npes);
    shmem_finalize();
    return 0;
}
