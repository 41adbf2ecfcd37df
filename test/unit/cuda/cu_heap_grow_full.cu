/* The heap grows to tens of GiB, every byte of every block checked on every
 * road, the way a user's program would do it: shmem_malloc(STEP) again and
 * again until MAX bytes are allocated (the heap grows inside the call), and
 * after each allocation the new block is written and read on each road
 * below, and a kernel on the receiving GPU checks every 8-byte word of what
 * the road wrote (no block is ever copied to the host to be checked). The
 * ring: each PE writes into the next PE's block and reads the next PE's
 * block; with one PE the peer is the PE itself.
 *
 *   host-put    a kernel fills a cudaMalloc buffer; shmem_putmem of the whole
 *               block into the next PE's block (the copy engine), barrier;
 *               each PE checks its own block
 *   host-get    shmem_getmem of the whole of the next PE's block into the
 *               buffer (poisoned first), checked
 *   dev-put     ushmemx_putmem_nbi_block of CHUNK-byte pieces, by blocks of
 *               256 threads, into the next PE's block, ushmem_quiet, the
 *               host's barrier; each PE checks its own block: DEV bytes of
 *               the device's pattern, the rest still the host put's
 *   dev-get     ushmemx_getmem_block of the next PE's DEV bytes into the
 *               poisoned buffer, checked (and the rest still poison)
 *   dev-ptr     ushmem_ptr in a kernel and plain 8-byte stores into the next
 *               PE's block; only where device code maps that PE (not through
 *               the proxy), else shown as "-"
 *   stream-put  shmemx_putmem_on_stream of DEV bytes, quiet_on_stream,
 *               barrier_all_on_stream and the checking kernel on one stream
 *   amo         the last word of every PE's block: AMO_THREADS threads of a
 *               kernel on every PE fetch-add (ushmem_long_atomic_fetch_add)
 *               my_pe + 1 to it, then the host fetch-adds (my_pe + 1) << 20
 *               (shmem_long_atomic_fetch_add); the word holds the sum and no
 *               fetched value passes it
 *   old         after each growth every older block of this PE is checked
 *               again whole (its last state), and the one before the new
 *               block also through the next PE's mapping where there is one
 * At the end every block is checked once more, here and through the next
 * PE's mapping. The device calls take the road the environment selects:
 * direct, or the proxy thread with USHMEM_DEVICE_ROUTE=proxy (then --dev-bytes
 * may move less per block; what is moved is still checked byte by byte, and
 * the rest of the block too).
 *
 * Each step prints the time shmem_malloc took (the growth), and per road the
 * GB/s that PE 0 saw and "ok" once every PE has checked its bytes; the last
 * line is "cu_heap_grow_full: PASS n_steps=.. heap=.. GiB" (exit 0), or a
 * PE says FAIL and what was wrong, the first bad offset among it (exit 1).
 *
 * Usage: oshrun -n N cu_heap_grow_full [options] [[START] STEP [MAX]]
 *   STEP   bytes per shmem_malloc (default 1G); a multiple of 8
 *   MAX    bytes to allocate in all (default 64G)
 *   START  SHMEM_SYMMETRIC_SIZE for this run (set before shmem_init); without
 *          it the environment's, else the library's default (512M)
 *   --dev-bytes N   bytes of each block the dev-put, dev-get, dev-ptr and
 *                   stream-put roads move (default: the whole block; 0: none)
 *   --chunk N       bytes per block-scope call in the device kernels (8M)
 *   --amo-threads N threads per PE in the atomics kernel (32)
 *   --null-ok-after N   a NULL once N bytes are allocated ends the run early
 *                   as a pass (the GPU is full: PEs share it)
 *   --expect-null   a NULL must come before MAX (a road that cannot grow the
 *                   heap): the run passes when every step before it did
 *   -v              every PE prints its own line per step
 * Sizes take K, M, G, T suffixes. Exits 77 without a GPU. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ushmem/device.h>

#include "cu_check.cuh"

#define MAX_PES 64
#define MAX_BLOCKS 4096
#define THREADS 256
#define POISON 0x5A5A5A5A5A5A5A5AULL
#define HOST_AMO_SHIFT 20

enum road { R_HOST_PUT, R_HOST_GET, R_DEV_PUT, R_DEV_GET, R_DEV_PTR, R_STREAM, R_AMO, R_OLD,
            R_COUNT };
static const char *const road_names[R_COUNT] = {"host-put", "host-get", "dev-put", "dev-get",
                                                "dev-ptr", "stream-put", "amo", "old"};
/* The pattern kinds: what wrote the bytes. */
enum { K_HOST = 4001, K_DEV, K_PTR, K_STREAM };

static struct {
    size_t start, step, max, dev_bytes, chunk, null_ok_after;
    int amo_threads, expect_null, start_given;
} opt = {0, (size_t)1 << 30, (size_t)64 << 30, (size_t)-1, (size_t)8 << 20, 0, 32, 0, 0};

static int nsm; /* streaming multiprocessors: the grids of the word kernels */

/* ---- Patterns: word i of the bytes `tag` names (a PE, a peer, a block, a
 * road); different at every offset, and between any two tags. ---- */

__host__ __device__ static inline uint64_t word_at(uint64_t tag, uint64_t i)
{
    return (i * 0x9E3779B97F4A7C15ULL) ^ tag;
}

static uint64_t tag_of(int kind, int from, int to, int step)
{
    return cu_tag((uint64_t)kind, (uint64_t)from, (uint64_t)to, (uint64_t)step);
}

/* What a region of words should hold: words [0, split) tag a's pattern,
 * the rest tag b's (or the constant b when b_const), and the word at
 * special (if any) the value special_value. */
struct expect {
    uint64_t nwords, split, a, b;
    int b_const;
    uint64_t special, special_value;
};

struct vstat {
    unsigned long long bad, first;
};

__host__ __device__ static inline uint64_t expected_word(const struct expect &e, uint64_t i)
{
    if (i == e.special)
        return e.special_value;
    if (i < e.split)
        return word_at(e.a, i);
    return e.b_const ? e.b : word_at(e.b, i);
}

/* ---- Kernels ---- */

__global__ void fill_kernel(uint64_t *p, uint64_t nwords, uint64_t tag)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += stride)
        p[i] = word_at(tag, i);
}

__global__ void reset_kernel(struct vstat *st)
{
    st->bad = 0;
    st->first = ~0ULL;
}

/* Counts the words that differ from what e says, and the first one's index. */
__global__ void verify_kernel(const uint64_t *p, struct expect e, struct vstat *st)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    unsigned long long bad = 0, first = ~0ULL;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < e.nwords;
         i += stride) {
        if (p[i] != expected_word(e, i)) {
            if (bad++ == 0)
                first = i;
        }
    }
    if (bad != 0) {
        atomicAdd(&st->bad, bad);
        atomicMin(&st->first, first);
    }
}

/* Each block puts CHUNK-byte pieces, the blocks taking turns; then the
 * block's puts are completed. */
__global__ void dev_put_kernel(unsigned char *dst, const unsigned char *src, size_t n,
                               size_t chunk, int pe)
{
    for (size_t off = (size_t)blockIdx.x * chunk; off < n; off += (size_t)gridDim.x * chunk)
        ushmemx_putmem_nbi_block(dst + off, src + off, n - off < chunk ? n - off : chunk, pe);
    __syncthreads();
    if (threadIdx.x == 0)
        ushmem_quiet();
}

__global__ void dev_get_kernel(unsigned char *dst, const unsigned char *src, size_t n,
                               size_t chunk, int pe)
{
    for (size_t off = (size_t)blockIdx.x * chunk; off < n; off += (size_t)gridDim.x * chunk)
        ushmemx_getmem_block(dst + off, src + off, n - off < chunk ? n - off : chunk, pe);
}

/* Plain stores through the pointer ushmem_ptr gives for pe's block; a NULL
 * there is counted as every word wrong. */
__global__ void dev_ptr_kernel(uint64_t *block, uint64_t nwords, uint64_t tag, int pe,
                               struct vstat *st)
{
    uint64_t *q = (uint64_t *)ushmem_ptr(block, pe);
    if (q == NULL) {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            atomicAdd(&st->bad, (unsigned long long)nwords);
            atomicMin(&st->first, 0ULL);
        }
        return;
    }
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += stride)
        q[i] = word_at(tag, i);
}

/* Every thread fetch-adds `value` to the word on every PE, this PE last. */
__global__ void amo_kernel(long *word, long value, int npes, long *olds)
{
    int me = ushmem_my_pe();
    for (int k = 1; k <= npes; k++) {
        int pe = (me + k) % npes;
        olds[(size_t)pe * blockDim.x + threadIdx.x] = ushmem_long_atomic_fetch_add(word, value, pe);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        ushmem_quiet();
}

/* ---- Host ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double gib(size_t n) { return (double)n / (double)((size_t)1 << 30); }

/* A size with an optional K, M, G or T; 0 when text is none. */
static size_t size_or_zero(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    double mult = 1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; break;
    case 'M': case 'm': mult = 1024.0 * 1024; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; break;
    case 'T': case 't': mult = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
    }
    return end == text || v < 0 ? 0 : (size_t)(v * mult);
}

static size_t parse_size(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    double mult = 1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; end++; break;
    case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    case 'T': case 't': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (end == text || *end != '\0' || v < 0) {
        fprintf(stderr, "cu_heap_grow_full: '%s' is not a size\n", text);
        exit(2);
    }
    return (size_t)(v * mult);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--dev-bytes N] [--chunk N] [--amo-threads N] [--null-ok-after N] "
            "[--expect-null] [-v] [[START] STEP [MAX]]\n",
            prog);
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    const char *pos[3];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (strcmp(a, "-v") == 0) {
            cu.verbose = 1;
        } else if (strcmp(a, "--expect-null") == 0) {
            opt.expect_null = 1;
        } else if (strcmp(a, "--dev-bytes") == 0 && more) {
            opt.dev_bytes = parse_size(argv[++i]);
        } else if (strcmp(a, "--chunk") == 0 && more) {
            opt.chunk = parse_size(argv[++i]);
        } else if (strcmp(a, "--null-ok-after") == 0 && more) {
            opt.null_ok_after = parse_size(argv[++i]);
        } else if (strcmp(a, "--amo-threads") == 0 && more) {
            opt.amo_threads = atoi(argv[++i]);
        } else if (a[0] != '-' && npos < 3) {
            pos[npos++] = a;
        } else {
            usage(argv[0]);
        }
    }
    if (npos == 3) {
        opt.start = parse_size(pos[0]);
        opt.start_given = 1;
    }
    if (npos >= 1)
        opt.step = parse_size(pos[npos == 3 ? 1 : 0]);
    if (npos >= 2)
        opt.max = parse_size(pos[npos == 3 ? 2 : 1]);
    if (opt.step < 64 || opt.step % 8 != 0 || opt.max < opt.step) {
        fprintf(stderr, "cu_heap_grow_full: STEP must be a multiple of 8 of at least 64 bytes, "
                        "and MAX at least STEP\n");
        exit(2);
    }
    if (opt.dev_bytes > opt.step)
        opt.dev_bytes = opt.step;
    opt.dev_bytes &= ~(size_t)7;
    if (opt.chunk < 8 || opt.chunk % 8 != 0 || opt.amo_threads < 1 || opt.amo_threads > 1024) {
        fprintf(stderr, "cu_heap_grow_full: --chunk must be a multiple of 8, --amo-threads "
                        "1 to 1024\n");
        exit(2);
    }
}

/* Per step, this PE: seconds and bytes per road, and the road's mismatches. */
struct step_result {
    double malloc_ms, secs[R_COUNT];
    size_t bytes[R_COUNT];
    unsigned long long bad[R_COUNT];
    int ran[R_COUNT];
    int old_blocks;
};

static struct vstat *dstat;
static cudaEvent_t ev0, ev1;

static unsigned grid_for(uint64_t nwords)
{
    uint64_t want = (nwords + THREADS - 1) / THREADS, most = (uint64_t)nsm * 8;
    if (want < 1)
        want = 1;
    return (unsigned)(want < most ? want : most);
}

/* Checks the words at p (this GPU's memory, or a peer's as mapped here)
 * against e in a kernel; prints the first bad word. Returns mismatches. */
static unsigned long long verify(const char *what, int step, const void *p, const struct expect &e)
{
    struct vstat st;

    reset_kernel<<<1, 1, 0, cu.stream>>>(dstat);
    CU_CHECK(cudaGetLastError());
    verify_kernel<<<grid_for(e.nwords), THREADS, 0, cu.stream>>>((const uint64_t *)p, e, dstat);
    cu_wait(what);
    cu_d2h(&st, dstat, sizeof(st));
    if (st.bad != 0) {
        uint64_t got = 0, want = expected_word(e, st.first);
        cu_d2h(&got, (const uint64_t *)p + st.first, sizeof(got));
        cu_print("step %d: %s: %llu of %llu words wrong, the first at byte offset %llu: expected "
                 "0x%016llx, got 0x%016llx",
                 step, what, st.bad, (unsigned long long)e.nwords, st.first * 8ULL,
                 (unsigned long long)want, (unsigned long long)got);
        cu.errors += st.bad;
    }
    return st.bad;
}

static void fill(void *p, size_t nbytes, uint64_t tag)
{
    fill_kernel<<<grid_for(nbytes / 8), THREADS, 0, cu.stream>>>((uint64_t *)p, nbytes / 8, tag);
    CU_CHECK(cudaGetLastError());
}

static void poison(void *p, size_t nbytes)
{
    CU_CHECK(cudaMemsetAsync(p, 0x5A, nbytes, cu.stream));
}

static double event_seconds(void)
{
    float ms = 0;
    CU_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
    return ms * 1e-3;
}

/* Block k's words as its last road left them on PE `owner`, written by
 * `from`: DEV bytes of the stream put (or none), the rest the host put's,
 * and the atomic word's sum at the end. */
static struct expect final_expect(int from, int owner, int k, long amo_sum)
{
    struct expect e;
    e.nwords = opt.step / 8;
    e.split = opt.dev_bytes / 8;
    e.a = tag_of(K_STREAM, from, owner, k);
    e.b = tag_of(K_HOST, from, owner, k);
    e.b_const = 0;
    e.special = e.nwords - 1;
    e.special_value = (uint64_t)amo_sum;
    return e;
}

static void print_step(FILE *out, int who, int step, int nsteps, size_t alloc, size_t heap,
                       const struct step_result *r, int all_ok)
{
    char line[1024];
    int len = 0;
    if (who >= 0)
        len += snprintf(line + len, sizeof(line) - len, "PE %d: ", who);
    len += snprintf(line + len, sizeof(line) - len,
                    "step %3d/%d: alloc %7.2f GiB heap ~%7.2f GiB malloc %8.1f ms", step, nsteps,
                    gib(alloc), gib(heap), r->malloc_ms);
    for (int road = 0; road < R_COUNT && len < (int)sizeof(line) - 64; road++) {
        const char *verdict = r->bad[road] != 0 ? "FAIL" : all_ok ? "ok" : "ok here";
        if (!r->ran[road]) {
            len += snprintf(line + len, sizeof(line) - len, " | %s -", road_names[road]);
        } else if (road == R_AMO) {
            len += snprintf(line + len, sizeof(line) - len, " | %s %.2f ms %s", road_names[road],
                            r->secs[road] * 1e3, verdict);
        } else if (road == R_OLD) {
            double gbs = r->secs[road] > 0 ? (double)r->bytes[road] / r->secs[road] / 1e9 : 0;
            len += snprintf(line + len, sizeof(line) - len, " | %s %d blocks %.1f GB/s %s",
                            road_names[road], r->old_blocks, gbs, verdict);
        } else {
            double gbs = r->secs[road] > 0 ? (double)r->bytes[road] / r->secs[road] / 1e9 : 0;
            len += snprintf(line + len, sizeof(line) - len, " | %s %.1f GB/s %s",
                            road_names[road], gbs, verdict);
        }
    }
    fprintf(out, "%s\n", line);
    fflush(out);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    cu_skip_without_device();
    if (opt.start_given) {
        char text[32];
        snprintf(text, sizeof(text), "%zu", opt.start);
        if (setenv("SHMEM_SYMMETRIC_SIZE", text, 1) != 0) {
            perror("setenv SHMEM_SYMMETRIC_SIZE");
            return 2;
        }
    }
    const char *start_text = getenv("SHMEM_SYMMETRIC_SIZE");
    /* The start as the library reads it, for the heap column only. */
    size_t start = start_text != NULL ? size_or_zero(start_text) : (size_t)512 << 20;
    cu_init(MAX_PES);
    int me = cu.me, npes = cu.npes, next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    int dev = -1;
    CU_CHECK(cudaGetDevice(&dev));
    CU_CHECK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
    struct cudaDeviceProp prop;
    CU_CHECK(cudaGetDeviceProperties(&prop, dev));
    CU_CHECK(cudaEventCreate(&ev0));
    CU_CHECK(cudaEventCreate(&ev1));
    CU_CHECK(cudaMalloc((void **)&dstat, sizeof(*dstat)));

    size_t step_bytes = opt.step, nwords = step_bytes / 8, dev_bytes = opt.dev_bytes;
    int nsteps = (int)(opt.max / step_bytes);
    const char *route = getenv("USHMEM_DEVICE_ROUTE");
    if (me == 0) {
        printf("cu_heap_grow_full: %d PEs, PE 0 on %s (%.1f GiB); SHMEM_SYMMETRIC_SIZE %s "
               "(%.2f GiB); %d steps of %.3f GiB to %.2f GiB; device roads move %.3f GiB per "
               "block in %.1f MiB calls; USHMEM_DEVICE_ROUTE=%s\n",
               npes, prop.name, gib(prop.totalGlobalMem), start_text ? start_text : "unset",
               gib(start), nsteps, gib(step_bytes), gib((size_t)nsteps * step_bytes),
               gib(dev_bytes), (double)opt.chunk / (1 << 20), route ? route : "unset");
        printf("per step: the malloc's time (the growth), and per road PE 0's GB/s and \"ok\" "
               "once every PE has checked every byte\n");
        fflush(stdout);
    }

    /* The buffer the roads read from and land in: a block's size. */
    unsigned char *buf = NULL;
    CU_CHECK(cudaMalloc((void **)&buf, step_bytes));
    long *olds = NULL;
    size_t nolds = (size_t)opt.amo_threads * (size_t)npes;
    CU_CHECK(cudaMalloc((void **)&olds, nolds * sizeof(long)));
    long *olds_host = (long *)malloc(nolds * sizeof(long));
    unsigned char **blocks = (unsigned char **)calloc((size_t)nsteps, sizeof(*blocks));
    /* Where the previous PE says whether it took the dev-ptr road to this
     * PE (whether device code maps a peer is that PE's answer alone). */
    long *flag = (long *)shmem_malloc(64);
    if (flag == NULL) {
        fprintf(stderr, "PE %d: shmem_malloc(64) for a flag returned NULL\n", me);
        cu_die();
    }
    if (olds_host == NULL || blocks == NULL) {
        fprintf(stderr, "PE %d: out of host memory\n", me);
        cu_die();
    }
    /* Every block's atomic word ends with this sum (every PE adds to it). */
    long amo_sum = ((long)opt.amo_threads + (1L << HOST_AMO_SHIFT)) * (long)npes * (npes + 1) / 2;
    double t_start = now_s();
    int done = 0, null_at = 0;
    size_t alloc = 0;

    for (int s = 0; s < nsteps; s++) {
        struct step_result r;
        memset(&r, 0, sizeof(r));
        char phase[64];
        snprintf(phase, sizeof(phase), "step %d", s + 1);
        cu_phase_begin(phase);

        /* The growth. */
        double t0 = now_s();
        unsigned char *b = (unsigned char *)shmem_malloc(step_bytes);
        r.malloc_ms = (now_s() - t0) * 1e3;
        if (b == NULL) {
            int ok = opt.expect_null || (opt.null_ok_after != 0 && alloc >= opt.null_ok_after);
            printf("PE %d: step %d: shmem_malloc(%zu) returned NULL after %.2f GiB allocated "
                   "(%.1f ms)%s\n",
                   me, s + 1, step_bytes, gib(alloc), r.malloc_ms,
                   opt.expect_null ? ", as --expect-null expects"
                   : ok            ? ", past --null-ok-after: the run ends here"
                                   : "");
            fflush(stdout);
            if (!ok) {
                fprintf(stderr, "cu_heap_grow_full: FAIL: PE %d: step %d: shmem_malloc(%zu) "
                                "returned NULL after %zu bytes allocated\n",
                        me, s + 1, step_bytes, alloc);
                cu_die();
            }
            null_at = s + 1;
            cu_phase_end();
            break;
        }
        if ((uintptr_t)b % 8 != 0) {
            fprintf(stderr, "PE %d: step %d: shmem_malloc gave %p, not 8-byte aligned\n", me,
                    s + 1, (void *)b);
            cu_die();
        }
        blocks[s] = b;
        alloc += step_bytes;
        size_t heap = alloc > start ? alloc : start;
        void *next_mapped = shmemx_ptr_device(b, next);
        char what[96];

        /* old: every older block as its last step left it; the one before
         * this also through the next PE's mapping. */
        t0 = now_s();
        for (int k = 0; k < s; k++) {
            snprintf(what, sizeof(what), "old block %d here after the growth", k + 1);
            r.bad[R_OLD] += verify(what, s + 1, blocks[k], final_expect(prev, me, k, amo_sum));
            r.bytes[R_OLD] += step_bytes;
        }
        void *old_mapped = s > 0 ? shmemx_ptr_device(blocks[s - 1], next) : NULL;
        if (old_mapped != NULL) {
            snprintf(what, sizeof(what), "old block %d of PE %d through its mapping", s, next);
            r.bad[R_OLD] += verify(what, s + 1, old_mapped, final_expect(me, next, s - 1, amo_sum));
            r.bytes[R_OLD] += step_bytes;
        }
        r.secs[R_OLD] = now_s() - t0;
        r.old_blocks = s;
        r.ran[R_OLD] = s > 0;
        shmem_barrier_all();

        /* host-put: the whole block into the next PE's. */
        struct expect e;
        e.nwords = nwords;
        e.split = nwords;
        e.a = tag_of(K_HOST, prev, me, s);
        e.b = 0;
        e.b_const = 0;
        e.special = ~0ULL;
        e.special_value = 0;
        fill(buf, step_bytes, tag_of(K_HOST, me, next, s));
        cu_wait("fill for host-put");
        t0 = now_s();
        shmem_putmem(b, buf, step_bytes, next);
        r.secs[R_HOST_PUT] = now_s() - t0;
        r.bytes[R_HOST_PUT] = step_bytes;
        r.ran[R_HOST_PUT] = 1;
        shmem_barrier_all();
        r.bad[R_HOST_PUT] = verify("host-put: this PE's block", s + 1, b, e);
        shmem_barrier_all();

        /* host-get: the whole of the next PE's block. */
        poison(buf, step_bytes);
        cu_wait("poison for host-get");
        t0 = now_s();
        shmem_getmem(buf, b, step_bytes, next);
        r.secs[R_HOST_GET] = now_s() - t0;
        r.bytes[R_HOST_GET] = step_bytes;
        r.ran[R_HOST_GET] = 1;
        e.a = tag_of(K_HOST, me, next, s);
        r.bad[R_HOST_GET] = verify("host-get: the next PE's block", s + 1, buf, e);
        shmem_barrier_all();

        if (dev_bytes > 0) {
            size_t nchunks = (dev_bytes + opt.chunk - 1) / opt.chunk;
            unsigned grid = (unsigned)(nchunks < MAX_BLOCKS ? nchunks : MAX_BLOCKS);
            struct expect d = e;
            d.split = dev_bytes / 8;
            d.b = tag_of(K_HOST, prev, me, s); /* what the host put left */

            /* dev-put. */
            fill(buf, dev_bytes, tag_of(K_DEV, me, next, s));
            CU_CHECK(cudaEventRecord(ev0, cu.stream));
            dev_put_kernel<<<grid, THREADS, 0, cu.stream>>>(b, buf, dev_bytes, opt.chunk, next);
            CU_CHECK(cudaGetLastError());
            CU_CHECK(cudaEventRecord(ev1, cu.stream));
            cu_wait("dev_put_kernel");
            r.secs[R_DEV_PUT] = event_seconds();
            r.bytes[R_DEV_PUT] = dev_bytes;
            r.ran[R_DEV_PUT] = 1;
            shmem_barrier_all();
            d.a = tag_of(K_DEV, prev, me, s);
            r.bad[R_DEV_PUT] = verify("dev-put: this PE's block", s + 1, b, d);
            shmem_barrier_all();

            /* dev-get: the next PE's DEV bytes, the rest of the buffer
             * still poison. */
            struct expect g = d;
            g.a = tag_of(K_DEV, me, next, s);
            g.b = POISON;
            g.b_const = 1;
            poison(buf, step_bytes);
            CU_CHECK(cudaEventRecord(ev0, cu.stream));
            dev_get_kernel<<<grid, THREADS, 0, cu.stream>>>(buf, b, dev_bytes, opt.chunk, next);
            CU_CHECK(cudaGetLastError());
            CU_CHECK(cudaEventRecord(ev1, cu.stream));
            cu_wait("dev_get_kernel");
            r.secs[R_DEV_GET] = event_seconds();
            r.bytes[R_DEV_GET] = dev_bytes;
            r.ran[R_DEV_GET] = 1;
            r.bad[R_DEV_GET] = verify("dev-get: the next PE's block", s + 1, buf, g);
            shmem_barrier_all();

            /* dev-ptr: stores through ushmem_ptr, where device code maps
             * the next PE (every PE answers the same for its own next). */
            if (next_mapped != NULL) {
                reset_kernel<<<1, 1, 0, cu.stream>>>(dstat);
                CU_CHECK(cudaGetLastError());
                CU_CHECK(cudaEventRecord(ev0, cu.stream));
                dev_ptr_kernel<<<grid_for(dev_bytes / 8), THREADS, 0, cu.stream>>>(
                    (uint64_t *)b, dev_bytes / 8, tag_of(K_PTR, me, next, s), next, dstat);
                CU_CHECK(cudaGetLastError());
                CU_CHECK(cudaEventRecord(ev1, cu.stream));
                cu_wait("dev_ptr_kernel");
                r.secs[R_DEV_PTR] = event_seconds();
                r.bytes[R_DEV_PTR] = dev_bytes;
                r.ran[R_DEV_PTR] = 1;
                struct vstat st;
                cu_d2h(&st, dstat, sizeof(st));
                if (st.bad != 0) {
                    cu_print("step %d: dev-ptr: ushmem_ptr in the kernel gave NULL for PE %d, "
                             "which shmemx_ptr_device maps",
                             s + 1, next);
                    cu.errors += st.bad;
                    r.bad[R_DEV_PTR] += st.bad;
                }
            }
            /* Whether the previous PE stored into this block: its word in
             * the flag (a host put of 8 bytes from the stack). */
            long did = next_mapped != NULL ? (long)(s + 1) : -(long)(s + 1), prev_did = 0;
            shmem_putmem(flag, &did, sizeof(did), next);
            shmem_barrier_all();
            cu_d2h(&prev_did, flag, sizeof(prev_did));
            if (prev_did == (long)(s + 1)) {
                d.a = tag_of(K_PTR, prev, me, s);
                r.bad[R_DEV_PTR] += verify("dev-ptr: this PE's block", s + 1, b, d);
            } else if (prev_did != -(long)(s + 1)) {
                cu_print("step %d: dev-ptr: the previous PE's flag says %ld, not %d or %d", s + 1,
                         prev_did, s + 1, -(s + 1));
                cu.errors++;
                r.bad[R_DEV_PTR]++;
            }
            shmem_barrier_all();

            /* stream-put: DEV bytes, quiet, barrier and the check on one
             * stream, no host synchronisation in between. */
            fill(buf, dev_bytes, tag_of(K_STREAM, me, next, s));
            CU_CHECK(cudaEventRecord(ev0, cu.stream));
            shmemx_putmem_on_stream(b, buf, dev_bytes, next, (CUstream)cu.stream);
            shmemx_quiet_on_stream((CUstream)cu.stream);
            CU_CHECK(cudaEventRecord(ev1, cu.stream));
            shmemx_barrier_all_on_stream((CUstream)cu.stream);
            d.a = tag_of(K_STREAM, prev, me, s);
            r.bad[R_STREAM] = verify("stream-put: this PE's block", s + 1, b, d);
            r.secs[R_STREAM] = event_seconds();
            r.bytes[R_STREAM] = dev_bytes;
            r.ran[R_STREAM] = 1;
            shmem_barrier_all();
        }

        /* amo: the last word of every PE's block. */
        long *word = (long *)(b + step_bytes - 8);
        CU_CHECK(cudaMemsetAsync(word, 0, sizeof(long), cu.stream));
        cu_wait("zero the atomic word");
        shmem_barrier_all();
        t0 = now_s();
        amo_kernel<<<1, opt.amo_threads, 0, cu.stream>>>(word, (long)me + 1, npes, olds);
        cu_wait("amo_kernel");
        long host_olds[MAX_PES];
        for (int k = 1; k <= npes; k++) {
            int pe = (me + k) % npes;
            host_olds[pe] = shmem_long_atomic_fetch_add(word, (long)(me + 1) << HOST_AMO_SHIFT, pe);
        }
        r.secs[R_AMO] = now_s() - t0;
        r.ran[R_AMO] = 1;
        shmem_barrier_all();
        long sum = 0;
        cu_d2h(&sum, word, sizeof(sum));
        cu_d2h(olds_host, olds, nolds * sizeof(long));
        if (sum != amo_sum) {
            cu_print("step %d: amo: this PE's word holds %ld, not %ld", s + 1, sum, amo_sum);
            r.bad[R_AMO]++;
        }
        for (size_t i = 0; i < nolds; i++) {
            if (olds_host[i] < 0 || olds_host[i] > amo_sum - (me + 1)) {
                cu_print("step %d: amo: a kernel's fetch-add on PE %zu fetched %ld (the sum "
                         "ends at %ld)",
                         s + 1, i / (size_t)opt.amo_threads, olds_host[i], amo_sum);
                r.bad[R_AMO]++;
            }
        }
        for (int pe = 0; pe < npes; pe++) {
            if (host_olds[pe] < 0 || host_olds[pe] > amo_sum - ((long)(me + 1) << HOST_AMO_SHIFT)) {
                cu_print("step %d: amo: the host's fetch-add on PE %d fetched %ld", s + 1, pe,
                         host_olds[pe]);
                r.bad[R_AMO]++;
            }
        }
        cu.errors += r.bad[R_AMO];

        /* Every PE has checked: ok, or the PE that found a mismatch says
         * what and ends the job. */
        if (cu.verbose || cu.errors != 0)
            print_step(cu.errors != 0 ? stderr : stdout, me, s + 1, nsteps, alloc, heap, &r, 0);
        if (cu.errors != 0)
            fprintf(stderr, "cu_heap_grow_full: FAIL: PE %d: step %d: %llu mismatches\n", me,
                    s + 1, cu.errors);
        cu_phase_end();
        if (me == 0)
            print_step(stdout, -1, s + 1, nsteps, alloc, heap, &r, 1);
        done = s + 1;
    }

    if (opt.expect_null && null_at == 0) {
        if (me == 0)
            fprintf(stderr, "cu_heap_grow_full: FAIL: --expect-null, but every one of %d "
                            "allocations succeeded\n",
                    done);
        cu_die();
    }

    /* Every block once more: here, and through the next PE's mapping. */
    cu_phase_begin("every block at the end");
    double t0 = now_s();
    size_t here = 0, there = 0;
    for (int k = 0; k < done; k++) {
        char what[96];
        snprintf(what, sizeof(what), "block %d here at the end", k + 1);
        verify(what, done, blocks[k], final_expect(prev, me, k, amo_sum));
        here += step_bytes;
    }
    double t1 = now_s();
    for (int k = 0; k < done; k++) {
        void *mapped = shmemx_ptr_device(blocks[k], next);
        if (mapped == NULL)
            continue;
        char what[96];
        snprintf(what, sizeof(what), "block %d of PE %d through its mapping at the end", k + 1,
                 next);
        verify(what, done, mapped, final_expect(me, next, k, amo_sum));
        there += step_bytes;
    }
    double t2 = now_s();
    if (cu.errors != 0)
        fprintf(stderr, "cu_heap_grow_full: FAIL: PE %d: %llu mismatches in the last check\n", me,
                cu.errors);
    cu_phase_end();
    if (me == 0) {
        printf("every block at the end: %.2f GiB here (%.1f GB/s) and %.2f GiB through the next "
               "PE's mapping (%.1f GB/s): ok on every PE\n",
               gib(here), t1 > t0 ? (double)here / (t1 - t0) / 1e9 : 0.0, gib(there),
               t2 > t1 ? (double)there / (t2 - t1) / 1e9 : 0.0);
        fflush(stdout);
    }
    double total = now_s() - t_start;

    for (int k = done - 1; k >= 0; k--)
        shmem_free(blocks[k]);
    shmem_free(flag);
    shmem_barrier_all();
    if (me == 0) {
        size_t heap = alloc > start ? alloc : start;
        char why[96] = "";
        if (null_at != 0)
            snprintf(why, sizeof(why), " null_at_step=%d (%s)", null_at,
                     opt.expect_null ? "--expect-null" : "--null-ok-after");
        printf("cu_heap_grow_full: PASS n_steps=%d heap=%.2f GiB pes=%d step=%.3f GiB "
               "dev_bytes=%.3f GiB%s in %.1f s\n",
               done, gib(heap), npes, gib(step_bytes), gib(dev_bytes), why, total);
        fflush(stdout);
    }
    CU_CHECK(cudaFree(olds));
    CU_CHECK(cudaFree(buf));
    CU_CHECK(cudaFree(dstat));
    CU_CHECK(cudaEventDestroy(ev0));
    CU_CHECK(cudaEventDestroy(ev1));
    free(olds_host);
    free(blocks);
    CU_CHECK(cudaStreamDestroy(cu.stream));
    shmem_finalize();
    return 0;
}
