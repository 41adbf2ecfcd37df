/* The stream-ordered host calls (shmemx_*_on_stream) on the cuda backend:
 * puts, gets, put-with-signal and a stream wait, barriers that order kernels
 * of different PEs, and the world collectives, with every byte checked on
 * every PE. Nothing waits on the host between the queued steps of a phase:
 * the stream alone orders them. Exits 77 without a CUDA device.
 *
 * --no-sums leaves out the sum reductions, which read the members' arrays
 * through their mappings: for runs where peers are reached through the
 * proxy and the fabric (USHMEM_IPC=0, simulated nodes), where every other
 * call takes that road. -v prints each phase. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ushmem/device.h>

#include <type_traits>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static int me, npes, verbose;

static unsigned char pattern(int from, int to, size_t i, int round)
{
    return (unsigned char)(from * 31 + to * 7 + i * 13 + round * 101 + 1);
}

__global__ void fill(unsigned char *p, size_t n, int from, int to, int round)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = (unsigned char)(from * 31 + to * 7 + i * 13 + round * 101 + 1);
}

/* Counts the wrong bytes of a short copy's destination: p[off, off + n)
 * must be the pattern, the GUARD bytes around it (p[0, off) and
 * p[off + n, off + n + GUARD)) still GUARD_BYTE. */
#define GUARD 16
#define GUARD_BYTE 0xEE
__global__ void count_wrong(const unsigned char *p, size_t off, size_t n, int from, int to,
                            int round, int *errors)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < off + n + GUARD;
         i += gridDim.x * blockDim.x) {
        unsigned char want = i >= off && i < off + n
                                 ? (unsigned char)(from * 31 + to * 7 + (i - off) * 13 +
                                                   round * 101 + 1)
                                 : (unsigned char)GUARD_BYTE;
        if (p[i] != want)
            atomicAdd(errors, 1);
    }
}

/* Writes round into slot me of the next PE (device API). */
__global__ void tell_next(long *slots, long round)
{
    int next = (ushmem_my_pe() + 1) % ushmem_n_pes();
    ushmem_long_p(&slots[ushmem_my_pe()], round, next);
    ushmem_quiet();
}

/* Counts a slot of the previous PE that does not hold round yet. */
__global__ void check_prev(const long *slots, long round, int *errors)
{
    int prev = (ushmem_my_pe() + ushmem_n_pes() - 1) % ushmem_n_pes();
    if (ushmem_long_atomic_fetch((long *)&slots[prev], ushmem_my_pe()) != round)
        atomicAdd(errors, 1);
}

static int compare(const char *what, const unsigned char *got, int from, int to, size_t n,
                   int round, size_t offset)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char want = pattern(from, to, i, round);
        if (got[offset + i] != want) {
            fprintf(stderr, "PE %d: %s: byte %zu (from PE %d) is %u, want %u\n", me, what, i, from,
                    got[offset + i], want);
            return 1;
        }
    }
    return 0;
}

/* Source element i of PE pe for the sum reductions: integers that wrap at
 * narrow widths, floats with rounding that depends on the order. */
template <typename T> static T sum_value(int pe, size_t i)
{
    if (std::is_floating_point<T>::value)
        return (T)(0.1 * (pe + 1) + (double)(i % 1013) * 1e-3 + 1e6 * (pe == 1));
    return (T)((unsigned long long)(pe + 1) * 2654435761ull * (i + 1) + (unsigned long long)pe);
}

/* Runs one sum reduction of n elements over the team whose members are the
 * world PEs in `members` (this PE among them), in place or
 * not, and checks every element against the members' sum added in member
 * order, bit for bit. */
template <typename T>
static int check_sum(const char *what,
                     int (*reduce)(shmem_team_t, T *, const T *, size_t, CUstream),
                     shmem_team_t team, const int *members, int size, size_t n, bool in_place,
                     cudaStream_t st, void *sbuf, void *dbuf, T *host)
{
    T *src = (T *)sbuf, *dst = in_place ? src : (T *)dbuf;
    int my = -1;
    for (int m = 0; m < size; m++)
        if (members[m] == me)
            my = m;
    for (size_t i = 0; i < n; i++)
        host[i] = sum_value<T>(me, i);
    CHECK(cudaMemcpyAsync(src, host, n * sizeof(T), cudaMemcpyHostToDevice, st));
    if (reduce(team, dst, src, n, (CUstream)st) != 0) {
        fprintf(stderr, "PE %d: %s returned nonzero\n", me, what);
        return 1;
    }
    CHECK(cudaMemcpyAsync(host, dst, n * sizeof(T), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    for (size_t i = 0; i < n; i++) {
        T want = sum_value<T>(members[0], i);
        for (int m = 1; m < size; m++)
            want = (T)(want + sum_value<T>(members[m], i));
        if (memcmp(&host[i], &want, sizeof(T)) != 0) {
            fprintf(stderr, "PE %d (member %d of %d): %s%s, %zu elements: element %zu is %.17g, "
                            "want %.17g\n",
                    me, my, size, what, in_place ? " in place" : "", n, i, (double)host[i],
                    (double)want);
            return 1;
        }
    }
    /* The reduction's closing barrier means no member reads src any more:
     * the next check may refill it. */
    return 0;
}

/* Every element kind, two sizes, in place and not, on one team. */
static int check_sums(shmem_team_t team, const int *members, int size, cudaStream_t st,
                      void *sbuf, void *dbuf, void *host)
{
    const size_t sizes[] = {3, (1 << 16) + 5};
    int bad = 0;
    for (int s = 0; s < 2; s++) {
        for (int ip = 0; ip < 2; ip++) {
            size_t n = sizes[s];
            bool in_place = ip == 1;
#define SUM(T, name)                                                                        \
    bad |= check_sum<T>("shmemx_" #name "_sum_reduce_on_stream",                            \
                        shmemx_##name##_sum_reduce_on_stream, team, members, size, n,       \
                        in_place, st, sbuf, dbuf, (T *)host)
            SUM(signed char, schar);
            SUM(unsigned short, ushort);
            SUM(int, int);
            SUM(uint32_t, uint32);
            SUM(long, long);
            SUM(uint64_t, uint64);
            SUM(float, float);
            SUM(double, double);
#undef SUM
        }
    }
    /* complex: two floats per element, each summed */
    size_t n = 1001;
    for (size_t i = 0; i < 2 * n; i++)
        ((double *)host)[i] = sum_value<double>(me, i);
    CHECK(cudaMemcpyAsync(sbuf, host, 2 * n * sizeof(double), cudaMemcpyHostToDevice, st));
    shmemx_complexd_sum_reduce_on_stream(team, (double _Complex *)dbuf,
                                         (const double _Complex *)sbuf, n, (CUstream)st);
    CHECK(cudaMemcpyAsync(host, dbuf, 2 * n * sizeof(double), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    for (size_t i = 0; i < 2 * n && !bad; i++) {
        double want = sum_value<double>(members[0], i);
        for (int m = 1; m < size; m++)
            want += sum_value<double>(members[m], i);
        if (((double *)host)[i] != want) {
            fprintf(stderr, "PE %d: complexd sum: part %zu is %.17g, want %.17g\n", me, i,
                    ((double *)host)[i], want);
            bad = 1;
        }
    }
    return bad;
}

/* The team collectives on a team of `size` members (world PEs in members):
 * alltoall, broadcast from each root and fcollect, every byte checked. */
static int check_team_colls(shmem_team_t team, const int *members, int size, cudaStream_t st,
                            unsigned char *src, unsigned char *dst, unsigned char *host,
                            int *round)
{
    int bad = 0;
    size_t n = 4097;
    (*round)++;
    for (int m = 0; m < size; m++)
        fill<<<64, 256, 0, st>>>(src + m * n, n, me, members[m], *round);
    shmemx_alltoallmem_on_stream(team, dst, src, n, (CUstream)st);
    CHECK(cudaMemcpyAsync(host, dst, n * size, cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    for (int m = 0; m < size; m++)
        bad |= compare("team alltoallmem_on_stream", host, members[m], me, n, *round, m * n);
    for (int root = 0; root < size; root++) {
        (*round)++;
        fill<<<64, 256, 0, st>>>(src, n, me, -1, *round);
        shmemx_broadcastmem_on_stream(team, dst, src, n, root, (CUstream)st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("team broadcastmem_on_stream", host, members[root], -1, n, *round, 0);
    }
    (*round)++;
    fill<<<64, 256, 0, st>>>(src, n, me, -2, *round);
    shmemx_fcollectmem_on_stream(team, dst, src, n, (CUstream)st);
    CHECK(cudaMemcpyAsync(host, dst, n * size, cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    for (int m = 0; m < size; m++)
        bad |= compare("team fcollectmem_on_stream", host, members[m], -2, n, *round, m * n);
    return bad;
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    bool sums = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            verbose = 1;
        } else if (strcmp(argv[i], "--no-sums") == 0) {
            sums = false;
        } else {
            fprintf(stderr, "usage: %s [-v] [--no-sums]\n", argv[0]);
            return 2;
        }
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    /* Collectives that copy up to 8 MiB from a PE (the members times the
     * size; 256 KiB where not 16-byte aligned) run as one kernel of 1 to 32
     * blocks, larger ones as barriers and copies (src/host/stream.c): 4097
     * is the kernel's byte by byte, 65536 and 1 MiB its aligned copies over
     * 2 and many blocks, 1 MiB + 3 the pieces'. The last is past the size
     * from which a collective's own share runs beside the stream (8 MiB). */
    const size_t sizes[] = {1, 4097, 65536, 1 << 20, (1 << 20) + 3, (8 << 20) + 3};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    size_t maxn = sizes[nsizes - 1];
    unsigned char *src = (unsigned char *)shmem_malloc(maxn * npes);
    unsigned char *dst = (unsigned char *)shmem_malloc(maxn * npes);
    long *slots = (long *)shmem_calloc(npes, sizeof(long));
    uint64_t *sig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    int *errors;
    CHECK(cudaMalloc(&errors, sizeof(int)));
    CHECK(cudaMemset(errors, 0, sizeof(int)));
    unsigned char *host = (unsigned char *)malloc(maxn * npes);
    int bad = 0, round = 0;
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();

    /* Barriers order kernels of different PEs: each round's check kernel
     * runs after the previous PE's write kernel of that round. */
    for (long r = 1; r <= 200; r++) {
        tell_next<<<1, 1, 0, st>>>(slots, r);
        shmemx_barrier_all_on_stream(st);
        check_prev<<<1, 1, 0, st>>>(slots, r, errors);
        shmemx_sync_all_on_stream(st);
    }
    int nerr;
    CHECK(cudaMemcpyAsync(&nerr, errors, sizeof(int), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    if (nerr != 0) {
        fprintf(stderr, "PE %d: %d of 200 barrier rounds saw a stale slot\n", me, nerr);
        bad = 1;
    }
    if (verbose)
        printf("PE %d: barrier on stream: %d stale of 200\n", me, nerr);

    /* Short puts and gets, many in a row: sizes on both sides of 16-byte
     * pieces and of 64 KiB, at aligned and unaligned offsets. Nothing
     * waits on the host: the receiver's stream waits for the signal and a
     * kernel checks every byte at once, and the bytes around the message
     * must be untouched. */
    const size_t short_sizes[] = {1, 16, 17, 4096 + 15, 65536, 65536 + 16};
    const size_t offsets[] = {0, 16, 1, 8};
    CHECK(cudaMemsetAsync(errors, 0, sizeof(int), st));
    for (int r = 0; r < 10; r++) {
        for (size_t s = 0; s < sizeof(short_sizes) / sizeof(short_sizes[0]); s++) {
            for (size_t o = 0; o < sizeof(offsets) / sizeof(offsets[0]); o++) {
                size_t n = short_sizes[s], off = offsets[o];
                round++;
                CHECK(cudaMemsetAsync(dst, GUARD_BYTE, off + n + GUARD, st));
                fill<<<64, 256, 0, st>>>(src + off, n, me, next, round);
                shmemx_barrier_all_on_stream(st);
                shmemx_putmem_signal_on_stream(dst + off, src + off, n, sig, (uint64_t)round,
                                               SHMEM_SIGNAL_SET, next, st);
                shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, (uint64_t)round, st);
                count_wrong<<<64, 256, 0, st>>>(dst, off, n, prev, me, round, errors);
                shmemx_barrier_all_on_stream(st); /* checked before it is reset */
                CHECK(cudaMemsetAsync(dst, GUARD_BYTE, off + n + GUARD, st));
                shmemx_getmem_on_stream(dst + off, src + off, n, prev, st);
                count_wrong<<<64, 256, 0, st>>>(dst, off, n, prev, me, round, errors);
                shmemx_barrier_all_on_stream(st); /* prev refills src after the get */
            }
        }
    }
    CHECK(cudaMemcpyAsync(&nerr, errors, sizeof(int), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    if (nerr != 0) {
        fprintf(stderr, "PE %d: short puts and gets on a stream: %d wrong bytes\n", me, nerr);
        bad = 1;
    }
    if (verbose)
        printf("PE %d: short copies on stream: %d wrong bytes\n", me, nerr);

    for (size_t s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        round++;
        /* put to next, get from prev */
        fill<<<64, 256, 0, st>>>(src, n, me, next, round);
        shmemx_putmem_on_stream(dst, src, n, next, st);
        shmemx_barrier_all_on_stream(st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("putmem_on_stream", host, prev, me, n, round, 0);
        shmemx_barrier_all_on_stream(st); /* nobody refills src before every get is done */

        round++;
        fill<<<64, 256, 0, st>>>(src, n, me, 0, round);
        shmemx_barrier_all_on_stream(st);
        shmemx_getmem_on_stream(dst, src, n, prev, st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("getmem_on_stream", host, prev, 0, n, round, 0);
        shmemx_barrier_all_on_stream(st);

        /* put with signal, waited for on the receiver's stream */
        round++;
        fill<<<64, 256, 0, st>>>(src, n, me, next, round);
        shmemx_putmem_signal_on_stream(dst, src, n, sig, (uint64_t)round, SHMEM_SIGNAL_SET, next,
                                       st);
        shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, (uint64_t)round, st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("putmem_signal_on_stream", host, prev, me, n, round, 0);
        shmemx_barrier_all_on_stream(st);

        /* alltoall: block pe of src goes to pe */
        round++;
        for (int pe = 0; pe < npes; pe++)
            fill<<<64, 256, 0, st>>>(src + pe * n, n, me, pe, round);
        shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, st);
        CHECK(cudaMemcpyAsync(host, dst, n * npes, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        for (int pe = 0; pe < npes; pe++)
            bad |= compare("alltoallmem_on_stream", host, pe, me, n, round, pe * n);
        shmemx_barrier_all_on_stream(st);

        /* broadcast from every root */
        for (int root = 0; root < npes; root++) {
            round++;
            fill<<<64, 256, 0, st>>>(src, n, me, -1, round);
            shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, root, st);
            CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
            CHECK(cudaStreamSynchronize(st));
            bad |= compare("broadcastmem_on_stream", host, root, -1, n, round, 0);
            shmemx_barrier_all_on_stream(st);
        }

        /* fcollect */
        round++;
        fill<<<64, 256, 0, st>>>(src, n, me, -2, round);
        shmemx_fcollectmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, st);
        CHECK(cudaMemcpyAsync(host, dst, n * npes, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        for (int pe = 0; pe < npes; pe++)
            bad |= compare("fcollectmem_on_stream", host, pe, -2, n, round, pe * n);
        shmemx_barrier_all_on_stream(st);
        if (verbose)
            printf("PE %d: size %zu done, %s\n", me, n, bad ? "FAILED" : "ok");
    }
    CHECK(cudaStreamSynchronize(st));

    /* fcollect and broadcast from sources outside the heap: this process's
     * device memory (which the one-kernel form reads) and pinned host
     * memory (which goes by the copy engines), at sizes of each form. */
    for (int where = 0; where < 2; where++) {
        const size_t own_sizes[] = {4097, 1 << 20, (1 << 20) + 3};
        for (int s = 0; s < 3; s++) {
            size_t n = own_sizes[s];
            unsigned char *own, *staged;
            CHECK(cudaMalloc(&staged, n));
            if (where == 0)
                CHECK(cudaMalloc(&own, n));
            else
                CHECK(cudaMallocHost(&own, n));
            const char *what = where == 0 ? "fcollectmem_on_stream from cudaMalloc"
                                          : "fcollectmem_on_stream from cudaMallocHost";
            round++;
            fill<<<64, 256, 0, st>>>(staged, n, me, -3, round);
            CHECK(cudaMemcpyAsync(own, staged, n, cudaMemcpyDeviceToDevice, st));
            shmemx_fcollectmem_on_stream(SHMEM_TEAM_WORLD, dst, own, n, st);
            CHECK(cudaMemcpyAsync(host, dst, n * npes, cudaMemcpyDeviceToHost, st));
            CHECK(cudaStreamSynchronize(st));
            for (int pe = 0; pe < npes; pe++)
                bad |= compare(what, host, pe, -3, n, round, pe * n);
            shmemx_barrier_all_on_stream(st);
            int root = round % npes;
            round++;
            fill<<<64, 256, 0, st>>>(staged, n, me, -4, round);
            CHECK(cudaMemcpyAsync(own, staged, n, cudaMemcpyDeviceToDevice, st));
            shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, dst, own, n, root, st);
            CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
            CHECK(cudaStreamSynchronize(st));
            bad |= compare(where == 0 ? "broadcastmem_on_stream from cudaMalloc"
                                      : "broadcastmem_on_stream from cudaMallocHost",
                           host, root, -4, n, round, 0);
            shmemx_barrier_all_on_stream(st);
            CHECK(cudaStreamSynchronize(st));
            CHECK(cudaFree(staged));
            if (where == 0)
                CHECK(cudaFree(own));
            else
                CHECK(cudaFreeHost(own));
        }
    }

    /* Sum reductions on the world: 8 sources per kernel, so more than 8
     * PEs chain kernels. */
    int *world = (int *)malloc(sizeof(int) * npes);
    for (int pe = 0; pe < npes; pe++)
        world[pe] = pe;
    void *sum_host = malloc(((1 << 16) + 5) * sizeof(uint64_t));
    if (sums)
        bad |= check_sums(SHMEM_TEAM_WORLD, world, npes, st, src, dst, sum_host);
    if (verbose)
        printf("PE %d: world sums %s\n", me, !sums ? "left out" : bad ? "FAILED" : "ok");

    /* Split teams: the world reversed (stride -1), and the even PEs. Their
     * barriers interleave with the world's on the same pairs of PEs. */
    shmem_team_t reversed, evens;
    int *rev = (int *)malloc(sizeof(int) * npes);
    for (int m = 0; m < npes; m++)
        rev[m] = npes - 1 - m;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &reversed) != 0) {
        fprintf(stderr, "PE %d: the reversed split failed\n", me);
        return 1;
    }
    int n_even = (npes + 1) / 2;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, n_even, NULL, 0, &evens);
    int *even = (int *)malloc(sizeof(int) * n_even);
    for (int m = 0; m < n_even; m++)
        even[m] = 2 * m;
    for (int r = 0; r < 50; r++) {
        shmemx_barrier_all_on_stream(st);
        if (evens != SHMEM_TEAM_INVALID)
            shmemx_fcollectmem_on_stream(evens, dst, src, 64, (CUstream)st);
        shmemx_broadcastmem_on_stream(reversed, dst + 64 * npes, src, 64, r % npes,
                                      (CUstream)st);
    }
    bad |= check_team_colls(reversed, rev, npes, st, src, dst, host, &round);
    if (sums)
        bad |= check_sums(reversed, rev, npes, st, src, dst, sum_host);
    if (evens != SHMEM_TEAM_INVALID) {
        bad |= check_team_colls(evens, even, n_even, st, src, dst, host, &round);
        if (sums)
            bad |= check_sums(evens, even, n_even, st, src, dst, sum_host);
    }
    if (verbose)
        printf("PE %d: team collectives and sums %s\n", me, bad ? "FAILED" : "ok");
    CHECK(cudaStreamSynchronize(st));
    shmem_team_destroy(reversed);
    if (evens != SHMEM_TEAM_INVALID)
        shmem_team_destroy(evens);
    free(world);
    free(rev);
    free(even);
    free(sum_host);
    if (bad)
        return 1;
    shmem_barrier_all();
    if (me == 0)
        printf("all checks passed%s\n", sums ? "" : " (sum reductions left out: --no-sums)");
    CHECK(cudaFree(errors));
    free(host);
    shmem_free(sig);
    shmem_free(slots);
    shmem_free(dst);
    shmem_free(src);
    CHECK(cudaStreamDestroy(st));
    shmem_finalize();
    return 0;
}
