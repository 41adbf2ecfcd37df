/* The heap grows under running kernels' feet: each round allocates a block
 * past the end of the heap (shmem_malloc grows every PE's heap), then
 * reaches the newest block from kernels and streams the way a program
 * would, every byte checked on the GPU:
 *   device put   ushmemx_putmem_nbi_block from 4 blocks into the next PE's
 *                new block, a quiet, the host's barrier; checked in a kernel
 *   device get   ushmemx_getmem_block of the previous PE's new block into
 *                cudaMalloc memory, checked in a kernel
 *   atomics      every PE adds its number + 1 to a word at the end of every
 *                PE's new block (ushmem_long_atomic_add), quiet, barrier:
 *                the word holds n(n+1)/2
 *   stream put   shmemx_putmem_on_stream into the next PE's new block,
 *                quiet_on_stream, barrier_all_on_stream, a checking kernel
 *                on the same stream, no host synchronisation in between
 * The device calls take the road the environment selects (direct; the
 * proxy with USHMEM_DEVICE_ROUTE=proxy). Start it with a small
 * SHMEM_SYMMETRIC_SIZE so that every round grows the heap.
 *
 * Usage: oshrun -n N cu_heap_grow [-v]; exits 77 without a GPU. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ushmem/device.h>

#include "cu_check.cuh"

#define MAX_PES 16
#define ROUNDS 4
#define BLOCK_BYTES ((size_t)96 << 20) /* per round: past a 64M start at once */
#define DATA_BYTES (BLOCK_BYTES - 4096) /* then the atomic word, 4 KiB from the end */
#define PUT_BLOCKS 4

enum { K_DEV_PUT = 401, K_DEV_GET, K_STREAM_PUT };
enum { W_DEV_PUT, W_DEV_GET, W_STREAM_PUT, W_COUNT };
static const char *const what_names[] = {"device put from the previous PE (b: round)",
                                         "device get from the next PE (b: round)",
                                         "stream put from the previous PE (b: round)"};

static struct cu_log *dlog;

/* Each block puts its share of the message. */
__global__ void put_kernel(unsigned char *dst, const unsigned char *src, size_t n, int pe)
{
    size_t share = (n + gridDim.x - 1) / gridDim.x, off = share * blockIdx.x;
    if (off < n)
        ushmemx_putmem_nbi_block(dst + off, src + off, off + share > n ? n - off : share, pe);
    __syncthreads();
    if (threadIdx.x == 0)
        ushmem_quiet();
}

__global__ void get_kernel(unsigned char *dst, const unsigned char *src, size_t n, int pe)
{
    size_t share = (n + gridDim.x - 1) / gridDim.x, off = share * blockIdx.x;
    if (off < n)
        ushmemx_getmem_block(dst + off, src + off, off + share > n ? n - off : share, pe);
}

__global__ void add_kernel(long *word, long value, int npes)
{
    for (int pe = 0; pe < npes; pe++)
        ushmem_long_atomic_add(word, value, pe);
    ushmem_quiet();
}

__global__ void verify_kernel(struct cu_log *log, int what, int from, int round,
                              const unsigned char *p, size_t n, uint64_t tag)
{
    cu_dev_verify(log, what, from, round, p, n, tag, 0,
                  blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

static void check(const char *what)
{
    cu_wait(what);
    cu_log_report(dlog, what_names, W_COUNT);
}

int main(int argc, char **argv)
{
    cu_skip_without_device();
    cu_parse_args(argc, argv);
    cu_init(MAX_PES);
    int me = cu.me, npes = cu.npes, next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    unsigned char *src = NULL, *got = NULL, *host = (unsigned char *)malloc(DATA_BYTES);
    if (host == NULL) {
        fprintf(stderr, "PE %d: out of host memory\n", me);
        cu_die();
    }
    CU_CHECK(cudaMalloc((void **)&src, DATA_BYTES));
    CU_CHECK(cudaMalloc((void **)&got, DATA_BYTES));
    dlog = cu_log_alloc();
    unsigned char *blocks[ROUNDS];

    for (int r = 0; r < ROUNDS; r++) {
        char name[64];
        snprintf(name, sizeof(name), "round %d: a block that grows the heap", r);
        cu_phase_begin(name);
        blocks[r] = (unsigned char *)shmem_malloc(BLOCK_BYTES);
        if (blocks[r] == NULL) {
            fprintf(stderr, "PE %d: round %d: shmem_malloc(%zu) returned NULL\n", me, r,
                    BLOCK_BYTES);
            cu_die();
        }
        unsigned char *b = blocks[r];
        long *word = (long *)(b + DATA_BYTES);
        cu_memset(word, 0, sizeof(long));
        shmem_barrier_all();

        /* Device put into the next PE's new block. */
        cu_fill(host, DATA_BYTES, cu_tag(K_DEV_PUT, (uint64_t)me, (uint64_t)next, (uint64_t)r), 0);
        cu_h2d(src, host, DATA_BYTES);
        put_kernel<<<PUT_BLOCKS, 256, 0, cu.stream>>>(b, src, DATA_BYTES, next);
        cu_wait("put_kernel");
        shmem_barrier_all();
        verify_kernel<<<64, 256, 0, cu.stream>>>(
            dlog, W_DEV_PUT, prev, r, b, DATA_BYTES,
            cu_tag(K_DEV_PUT, (uint64_t)prev, (uint64_t)me, (uint64_t)r));
        check("verify device put");

        /* Device get of the next PE's new block (its previous PE's put). */
        get_kernel<<<PUT_BLOCKS, 256, 0, cu.stream>>>(got, b, DATA_BYTES, next);
        cu_wait("get_kernel");
        verify_kernel<<<64, 256, 0, cu.stream>>>(
            dlog, W_DEV_GET, next, r, got, DATA_BYTES,
            cu_tag(K_DEV_PUT, (uint64_t)me, (uint64_t)next, (uint64_t)r));
        check("verify device get");

        /* Atomics on every PE's new block. */
        add_kernel<<<1, 1, 0, cu.stream>>>(word, (long)me + 1, npes);
        cu_wait("add_kernel");
        shmem_barrier_all();
        long sum = 0, want = (long)npes * (npes + 1) / 2;
        shmem_getmem(&sum, word, sizeof(sum), me);
        if (sum != want) {
            cu_print("round %d: atomic word %ld, expected %ld", r, sum, want);
            cu.errors++;
        }
        shmem_barrier_all();

        /* Stream put into the next PE's new block, checked behind it. */
        cu_fill(host, DATA_BYTES, cu_tag(K_STREAM_PUT, (uint64_t)me, (uint64_t)next, (uint64_t)r),
                0);
        cu_h2d(src, host, DATA_BYTES);
        shmemx_putmem_on_stream(b, src, DATA_BYTES, next, (CUstream)cu.stream);
        shmemx_quiet_on_stream((CUstream)cu.stream);
        shmemx_barrier_all_on_stream((CUstream)cu.stream);
        verify_kernel<<<64, 256, 0, cu.stream>>>(
            dlog, W_STREAM_PUT, prev, r, b, DATA_BYTES,
            cu_tag(K_STREAM_PUT, (uint64_t)prev, (uint64_t)me, (uint64_t)r));
        check("verify stream put");
        cu_phase_end();
    }
    /* The older blocks stay put: the last round's bytes in the first block
     * were its own round's stream put. */
    cu_phase_begin("older blocks after the last growth");
    verify_kernel<<<64, 256, 0, cu.stream>>>(
        dlog, W_STREAM_PUT, prev, 0, blocks[0], DATA_BYTES,
        cu_tag(K_STREAM_PUT, (uint64_t)prev, (uint64_t)me, 0));
    check("verify the first block");
    cu_phase_end();
    for (int r = ROUNDS - 1; r >= 0; r--)
        shmem_free(blocks[r]);
    CU_CHECK(cudaFree(dlog));
    CU_CHECK(cudaFree(got));
    CU_CHECK(cudaFree(src));
    free(host);
    cu_finish();
    return 0;
}
