/* The host side of shapes.cu (gen_shapes.py): launches every generated
 * kernel at 1024 threads per block, several blocks, and in blocks of other
 * shapes (32x8x4, 16x16, 1000, 33 and 7 threads), checks the launch
 * (cudaGetLastError: a kernel that needs more than 64 registers cannot
 * launch 1024 threads) and then every byte and word it moved, on every PE.
 * Also: warps whose lanes diverge into thread-scope puts and gets.
 *
 * Every PE runs the same kernel at once; thread, warp or block g owns slots
 * g * iters + i (or g, repeated), puts and atomics go to the next PE, gets
 * come from it, and each PE checks what it holds afterwards against the
 * pattern of the PE that wrote it.
 *
 * Usage: oshrun -n N shapes [-v] [--only SUBSTRING]; exits 0 when every
 * check passed, 1 with a line naming the kernel, the block shape and the
 * first wrong byte or word otherwise, 77 without a GPU. */
#ifndef SHAPES_RUN_CUH
#define SHAPES_RUN_CUH

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>
#include <vector>

#include "cu_check.cuh"

#define SHAPE_MAX_PES 8
#define SHAPE_BUF ((size_t)8 << 20) /* bytes of each symmetric buffer */
#define SHAPE_GUARD 64              /* bytes after the data that must stay 0xEE */
#define SHAPE_FILL 0xEE

enum { SHAPE_S_THREAD, SHAPE_S_WARP, SHAPE_S_BLOCK };
enum { SHAPE_ONE, SHAPE_LOOP, SHAPE_REP };
enum {
    SHAPE_F_PUT,
    SHAPE_F_GET,
    SHAPE_F_AMO,
    SHAPE_F_PUT_SIGNAL,
    SHAPE_F_SIGNAL,
    SHAPE_F_SIGNAL_FETCH,
    SHAPE_F_SIGNAL_WAIT,
    SHAPE_F_WAIT,
    SHAPE_F_ORDER,
    SHAPE_F_BARRIER,
    SHAPE_F_ALLTOALLMEM,
    SHAPE_F_BROADCASTMEM,
    SHAPE_F_FCOLLECTMEM,
};
enum {
    SHAPE_FETCH_ADD,
    SHAPE_ADD,
    SHAPE_FETCH_INC,
    SHAPE_INC,
    SHAPE_CSWAP,
    SHAPE_FETCH,
    SHAPE_SET,
    SHAPE_SWAP,
    SHAPE_FETCH_AND,
    SHAPE_FETCH_OR,
    SHAPE_FETCH_XOR,
    SHAPE_AND,
    SHAPE_OR,
    SHAPE_XOR,
};

/* What one launch passes; each kernel's launcher takes the fields it has. */
struct shape_launch {
    dim3 grid, block;
    cudaStream_t stream;
    void *dst;
    const void *src;
    size_t chunk; /* bytes a group moves per call (elements: divided by the launcher) */
    void *out;
    uint64_t *sig;
    int sig_op;
    int iters;
    int pe;
};

struct shape_kernel {
    const char *name;
    const void *fn;
    void (*launch)(const struct shape_launch *);
    int family, scope, form;
    size_t elem; /* bytes of the kernel's type */
    int op;      /* the atomic */
};

/* Thread-scope calls made by diverging lanes: odd threads put to the next
 * PE, even ones get from it, into slots of their own. */
__global__ void shape_divergent(char *dst, const char *src, size_t chunk, int pe)
{
    size_t t = shape_thread();

    if (t & 1)
        ushmem_putmem(dst + t * chunk, src + t * chunk, chunk, pe);
    else
        ushmem_getmem(dst + t * chunk, src + t * chunk, chunk, pe);
    ushmem_quiet();
}

static struct {
    char *dst, *src, *out;
    uint64_t *sig;
    std::vector<unsigned char> pattern[SHAPE_MAX_PES]; /* each PE's src */
    std::vector<unsigned char> got;
    int proxy;
    int nblocks, iters;
    const char *only;
    const char *shape; /* the block shape being run, for messages */
} sh;

struct shape_block_shape {
    const char *name;
    dim3 block;
};
static const struct shape_block_shape shape_shapes[] = {
    {"1024", dim3(1024)}, {"32x8x4", dim3(32, 8, 4)}, {"16x16", dim3(16, 16)},
    {"1000", dim3(1000)}, {"33", dim3(33)},           {"7", dim3(7)},
};
#define SHAPE_NSHAPES (sizeof(shape_shapes) / sizeof(shape_shapes[0]))

static int shape_prev(void)
{
    return (cu.me + cu.npes - 1) % cu.npes;
}

static int shape_next(void)
{
    return (cu.me + 1) % cu.npes;
}

static size_t shape_groups(int scope, dim3 block, int nblocks)
{
    size_t tpb = (size_t)block.x * block.y * block.z;

    if (scope == SHAPE_S_THREAD)
        return nblocks * tpb;
    if (scope == SHAPE_S_WARP)
        return nblocks * ((tpb + 31) / 32);
    return nblocks;
}

/* Launches, and ends the job with the reason when the launch fails (a
 * kernel with more registers than the block can have among them). */
static void shape_launch_one(const struct shape_kernel *k, const struct shape_launch *L)
{
    k->launch(L);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        struct cudaFuncAttributes a;
        memset(&a, 0, sizeof(a));
        cudaFuncGetAttributes(&a, k->fn);
        fprintf(stderr,
                "PE %d: %s: launch of %u blocks of %ux%ux%u threads failed: %s (%s); the kernel "
                "needs %d registers a thread, at most %d threads a block\n",
                cu.me, k->name, L->grid.x, L->block.x, L->block.y, L->block.z,
                cudaGetErrorString(err), cudaGetErrorName(err), a.numRegs, a.maxThreadsPerBlock);
        cu_die();
    }
    cu_wait(k->name);
}

/* Bytes [0, len) of this PE's dst are bytes [0, len) of PE from's src, and
 * the guard after them is untouched. */
static void shape_check_bytes(const struct shape_kernel *k, size_t chunk, const char *what,
                              const unsigned char *want, size_t len, size_t off)
{
    sh.got.resize(len + SHAPE_GUARD);
    cu_d2h(sh.got.data(), sh.dst + off, len + SHAPE_GUARD);
    if (memcmp(sh.got.data(), want, len) != 0) {
        size_t j = 0;
        while (sh.got[j] == want[j])
            j++;
        cu.errors++;
        cu_print("%s, blocks of %s, %zu bytes a call: %s: byte %zu: expected 0x%02x, got 0x%02x",
                 k->name, sh.shape, chunk, what, off + j, want[j], sh.got[j]);
        return;
    }
    for (size_t j = len; j < len + SHAPE_GUARD; j++) {
        if (sh.got[j] != SHAPE_FILL) {
            cu.errors++;
            cu_print("%s, blocks of %s, %zu bytes a call: byte %zu after the data written "
                     "(0x%02x)",
                     k->name, sh.shape, chunk, off + j, sh.got[j]);
            return;
        }
    }
}

static void shape_begin(size_t dst_bytes)
{
    CU_CHECK(cudaMemset(sh.dst, SHAPE_FILL, dst_bytes + SHAPE_GUARD));
    CU_CHECK(cudaMemset(sh.out, 0, SHAPE_BUF));
    CU_CHECK(cudaMemset(sh.sig, 0, SHAPE_BUF));
    CU_CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();
}

static struct shape_launch shape_base(dim3 block)
{
    struct shape_launch L = {};

    L.grid = dim3(sh.nblocks);
    L.block = block;
    L.stream = cu.stream;
    L.dst = sh.dst;
    L.src = sh.src;
    L.out = sh.out;
    L.sig = sh.sig;
    L.iters = sh.iters;
    L.pe = shape_next();
    return L;
}

/* Word-sized results: n words of `size` bytes at `p` on this PE. */
static void shape_words(std::vector<unsigned char> *buf, const void *p, size_t n, size_t size)
{
    buf->resize(n * size);
    cu_d2h(buf->data(), p, n * size);
}

static void shape_expect_u64(const struct shape_kernel *k, const char *what, size_t w,
                             unsigned long long want, unsigned long long got)
{
    if (want == got)
        return;
    cu.errors++;
    cu_print("%s, blocks of %s: %s [%zu]: expected %llu, got %llu", k->name, sh.shape, what, w,
             want, got);
}

/* ---- put, get, putmem_signal ---- */

static void shape_run_rma(const struct shape_kernel *k, dim3 block, size_t chunk)
{
    size_t groups = shape_groups(k->scope, block, sh.nblocks);
    size_t slots = k->form == SHAPE_LOOP ? groups * sh.iters : groups;
    size_t len = slots * chunk;
    int from = k->family == SHAPE_F_GET ? shape_next() : shape_prev();
    struct shape_launch L = shape_base(block);

    if (len + SHAPE_GUARD > SHAPE_BUF)
        return;
    L.chunk = chunk;
    L.sig_op = (chunk & 1) ? USHMEM_SIGNAL_SET : USHMEM_SIGNAL_ADD;
    shape_begin(len);
    shape_launch_one(k, &L);
    shmem_barrier_all();
    shape_check_bytes(k, chunk, k->family == SHAPE_F_GET ? "got from the next PE"
                                                          : "put by the previous PE",
                      sh.pattern[from].data(), len, 0);
    if (k->family == SHAPE_F_PUT_SIGNAL) {
        std::vector<unsigned char> b;
        shape_words(&b, sh.sig, slots, 8);
        const uint64_t *s = (const uint64_t *)b.data();
        int times = k->form == SHAPE_REP && L.sig_op == USHMEM_SIGNAL_ADD ? sh.iters : 1;
        for (size_t w = 0; w < slots; w++)
            shape_expect_u64(k, L.sig_op == USHMEM_SIGNAL_ADD ? "signal (ADD)" : "signal (SET)",
                             w, (w + 1) * times, s[w]);
    }
    shmem_barrier_all();
}

/* Bytes a group moves per call, by scope: at most one 16-byte word a
 * thread, four, more (the general copy), and an odd size; whole elements
 * of the typed calls. */
static size_t shape_chunk(int scope, size_t elem, int i)
{
    static const size_t bytes[3][4] = {
        {8, 64, 136, 37}, {512, 2048, 4112, 777}, {16384, 65536, 131088, 10001}};
    size_t b = bytes[scope][i];

    return elem > 1 ? (b + elem - 1) / elem * elem : b;
}

/* ---- atomics ---- */

template <typename T> static T shape_final(int op, size_t w, T *old_p)
{
    typedef typename std::make_unsigned<T>::type U;
    T init = shape_init<T>(w), arg = shape_arg<T>(w), cond = shape_cond<T>(w);

    *old_p = init;
    switch (op) {
    case SHAPE_FETCH_ADD:
    case SHAPE_ADD: return (T)((U)init + (U)arg);
    case SHAPE_FETCH_INC:
    case SHAPE_INC: return (T)((U)init + 1u);
    case SHAPE_CSWAP: return cond == init ? arg : init;
    case SHAPE_FETCH: return init;
    case SHAPE_SET:
    case SHAPE_SWAP: return arg;
    case SHAPE_FETCH_AND:
    case SHAPE_AND: return (T)(init & arg);
    case SHAPE_FETCH_OR:
    case SHAPE_OR: return (T)(init | arg);
    default: return (T)(init ^ arg);
    }
}

static int shape_fetching(int op)
{
    return op == SHAPE_FETCH_ADD || op == SHAPE_FETCH_INC || op == SHAPE_CSWAP ||
           op == SHAPE_FETCH || op == SHAPE_SWAP || op == SHAPE_FETCH_AND ||
           op == SHAPE_FETCH_OR || op == SHAPE_FETCH_XOR;
}

template <typename T> static void shape_run_amo_t(const struct shape_kernel *k, dim3 block)
{
    size_t groups = shape_groups(SHAPE_S_THREAD, block, sh.nblocks);
    size_t slots = k->form == SHAPE_LOOP ? groups * sh.iters : groups;
    std::vector<T> init(slots);
    std::vector<unsigned char> b;
    struct shape_launch L = shape_base(block);

    for (size_t w = 0; w < slots; w++)
        init[w] = shape_init<T>(w);
    shape_begin(slots * sizeof(T));
    cu_h2d(sh.dst, init.data(), slots * sizeof(T));
    shmem_barrier_all();
    shape_launch_one(k, &L);
    shmem_barrier_all();
    shape_words(&b, sh.dst, slots, sizeof(T));
    const T *tgt = (const T *)b.data();
    for (size_t w = 0; w < slots; w++) {
        T old, want = shape_final<T>(k->op, w, &old);
        shape_expect_u64(k, "word after the previous PE's atomic", w, (unsigned long long)want,
                         (unsigned long long)tgt[w]);
    }
    if (shape_fetching(k->op)) {
        shape_words(&b, sh.out, slots, sizeof(T));
        const T *out = (const T *)b.data();
        for (size_t w = 0; w < slots; w++) {
            T old;
            shape_final<T>(k->op, w, &old);
            shape_expect_u64(k, "value fetched from the next PE", w, (unsigned long long)old,
                             (unsigned long long)out[w]);
        }
    }
    shmem_barrier_all();
}

static void shape_run_amo(const struct shape_kernel *k, dim3 block)
{
    if (k->elem == 4)
        shape_run_amo_t<unsigned int>(k, block);
    else
        shape_run_amo_t<unsigned long>(k, block);
}

/* ---- signals, waits, ordering, barriers ---- */

static void shape_run_words(const struct shape_kernel *k, dim3 block)
{
    size_t groups = shape_groups(SHAPE_S_THREAD, block, sh.nblocks);
    size_t slots = k->form == SHAPE_LOOP ? groups * sh.iters : groups;
    std::vector<unsigned char> b;
    struct shape_launch L = shape_base(block);

    if (k->family == SHAPE_F_BARRIER)
        slots = k->form == SHAPE_LOOP ? (size_t)sh.iters : 1;
    shape_begin(slots * 8);
    CU_CHECK(cudaMemset(sh.dst, 0, slots * 8));
    if (k->family == SHAPE_F_SIGNAL_FETCH) {
        std::vector<uint64_t> v(slots);
        for (size_t w = 0; w < slots; w++)
            v[w] = w * 3 + 1;
        cu_h2d(sh.sig, v.data(), slots * 8);
    }
    CU_CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();
    shape_launch_one(k, &L);
    shmem_barrier_all();
    switch (k->family) {
    case SHAPE_F_SIGNAL: {
        shape_words(&b, sh.sig, slots, 8);
        for (size_t w = 0; w < slots; w++)
            shape_expect_u64(k, "signal word", w, w + 1, ((const uint64_t *)b.data())[w]);
        break;
    }
    case SHAPE_F_SIGNAL_FETCH:
    case SHAPE_F_SIGNAL_WAIT: {
        unsigned long long want_sig = k->family == SHAPE_F_SIGNAL_WAIT ? 1 : 0;
        shape_words(&b, sh.out, slots, 8);
        for (size_t w = 0; w < slots; w++)
            shape_expect_u64(k, "value returned", w, want_sig ? want_sig : w * 3 + 1,
                             ((const uint64_t *)b.data())[w]);
        break;
    }
    case SHAPE_F_WAIT: {
        shape_words(&b, sh.dst, slots, k->elem);
        for (size_t w = 0; w < slots; w++) {
            unsigned long long got = k->elem == 4 ? ((const unsigned *)b.data())[w]
                                                  : ((const unsigned long long *)b.data())[w];
            shape_expect_u64(k, "word waited for", w, 1, got);
        }
        break;
    }
    case SHAPE_F_ORDER: {
        shape_words(&b, sh.dst, slots, 8);
        for (size_t w = 0; w < slots; w++)
            shape_expect_u64(k, "word put by the previous PE", w, w + 1,
                             ((const unsigned long long *)b.data())[w]);
        break;
    }
    default: { /* barrier */
        unsigned long long base = (unsigned long long)(shape_prev() + 1) * 1000;
        shape_words(&b, sh.out, slots, 8);
        for (size_t w = 0; w < slots; w++)
            shape_expect_u64(k, "previous PE's word read after the barrier", w, base + w,
                             ((const unsigned long long *)b.data())[w]);
        break;
    }
    }
    shmem_barrier_all();
}

/* ---- collectives ---- */

static void shape_run_coll(const struct shape_kernel *k, dim3 block, size_t nb)
{
    int n = cu.npes, rounds = k->form == SHAPE_LOOP ? sh.iters : 1;
    size_t per = k->family == SHAPE_F_BROADCASTMEM ? nb : (size_t)n * nb;
    size_t len = per * rounds;
    std::vector<unsigned char> want(len);
    struct shape_launch L = shape_base(block);

    if (len + SHAPE_GUARD > SHAPE_BUF || (size_t)n * nb * rounds > SHAPE_BUF)
        return;
    for (int i = 0; i < rounds; i++) {
        for (size_t j = 0; j < nb; j++) {
            if (k->family == SHAPE_F_BROADCASTMEM) {
                want[i * nb + j] = sh.pattern[i % n][i * nb + j];
                continue;
            }
            for (int p = 0; p < n; p++) {
                size_t at = ((size_t)i * n + p) * nb + j;
                size_t from = k->family == SHAPE_F_ALLTOALLMEM ? ((size_t)i * n + cu.me) * nb + j
                                                               : (size_t)i * nb + j;
                want[at] = sh.pattern[p][from];
            }
        }
    }
    L.chunk = nb;
    shape_begin(len);
    shape_launch_one(k, &L);
    shmem_barrier_all();
    shape_check_bytes(k, nb, "collective's result", want.data(), len, 0);
    shmem_barrier_all();
}

/* ---- divergent lanes ---- */

static void shape_run_divergent(dim3 block)
{
    size_t chunk = 24, slots = shape_groups(SHAPE_S_THREAD, block, sh.nblocks);
    size_t len = slots * chunk;
    std::vector<unsigned char> want(len);
    static const struct shape_kernel k = {"shape_divergent", (const void *)shape_divergent, NULL,
                                          SHAPE_F_PUT, SHAPE_S_THREAD, SHAPE_ONE, 1, 0};

    for (size_t t = 0; t < slots; t++)
        memcpy(&want[t * chunk], &sh.pattern[(t & 1) ? shape_prev() : shape_next()][t * chunk],
               chunk);
    shape_begin(len);
    shape_divergent<<<sh.nblocks, block, 0, cu.stream>>>(sh.dst, sh.src, chunk, shape_next());
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "PE %d: shape_divergent: launch failed: %s\n", cu.me,
                cudaGetErrorName(err));
        cu_die();
    }
    cu_wait(k.name);
    shmem_barrier_all();
    shape_check_bytes(&k, chunk, "odd threads' puts and even threads' gets", want.data(), len, 0);
    shmem_barrier_all();
}

/* ---- the run ---- */

/* Every kernel must take 1024 threads a block: one that cannot is named
 * with its registers before anything runs. */
static void shape_preflight(const struct shape_kernel *ks, size_t nk)
{
    int bad = 0;

    for (size_t i = 0; i < nk; i++) {
        struct cudaFuncAttributes a;
        CU_CHECK(cudaFuncGetAttributes(&a, ks[i].fn));
        if (a.maxThreadsPerBlock < 1024) {
            if (cu.me == 0)
                fprintf(stderr,
                        "%s needs %d registers a thread: at most %d threads a block, not 1024\n",
                        ks[i].name, a.numRegs, a.maxThreadsPerBlock);
            bad++;
        }
    }
    if (bad > 0) {
        fprintf(stderr, "PE %d: %d kernels cannot launch 1024 threads a block\n", cu.me, bad);
        cu_die();
    }
}

static void shape_run_kernel(const struct shape_kernel *k)
{
    for (size_t s = 0; s < SHAPE_NSHAPES; s++) {
        const struct shape_block_shape *b = &shape_shapes[s];
        int all = s == 0; /* every size at 1024 threads, two elsewhere */

        /* Through the proxy each thread's call is a request: two shapes. */
        if (sh.proxy && s != 0 && s != 4)
            continue;
        sh.shape = b->name;
        switch (k->family) {
        case SHAPE_F_PUT:
        case SHAPE_F_GET:
        case SHAPE_F_PUT_SIGNAL:
            /* p and g move one element; the others every size. */
            if (strstr(k->name, "_p_") != NULL || strstr(k->name, "_g_") != NULL) {
                shape_run_rma(k, b->block, k->elem);
                break;
            }
            for (int i = 0; i < 4; i++) {
                if ((!all || sh.proxy) && i != 2 && i != 3)
                    continue;
                shape_run_rma(k, b->block, shape_chunk(k->scope, k->elem, i));
            }
            break;
        case SHAPE_F_AMO:
            shape_run_amo(k, b->block);
            break;
        case SHAPE_F_ALLTOALLMEM:
        case SHAPE_F_BROADCASTMEM:
        case SHAPE_F_FCOLLECTMEM:
            if (!all)
                break;
            shape_run_coll(k, b->block, k->scope == SHAPE_S_BLOCK ? 65552 : 1003);
            shape_run_coll(k, b->block, k->scope == SHAPE_S_BLOCK ? 10001 : 8);
            break;
        case SHAPE_F_BARRIER:
            if (all)
                shape_run_words(k, b->block);
            break;
        default:
            shape_run_words(k, b->block);
            break;
        }
    }
}

static int shape_main(int argc, char **argv, const struct shape_kernel *ks, size_t nk)
{
    const char *route = getenv("USHMEM_DEVICE_ROUTE");
    size_t ran = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            cu.verbose = 1;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            sh.only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [-v] [--only SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    cu_skip_without_device();
    cu_init(SHAPE_MAX_PES);
    sh.proxy = route != NULL && strcmp(route, "proxy") == 0;
    sh.nblocks = sh.proxy ? 1 : 4;
    sh.iters = sh.proxy ? 2 : 3;
    sh.dst = (char *)cu_shmalloc(SHAPE_BUF);
    sh.src = (char *)cu_shmalloc(SHAPE_BUF);
    sh.out = (char *)cu_shmalloc(SHAPE_BUF);
    sh.sig = (uint64_t *)cu_shmalloc(SHAPE_BUF);
    for (int p = 0; p < cu.npes; p++) {
        sh.pattern[p].resize(SHAPE_BUF);
        cu_fill(sh.pattern[p].data(), SHAPE_BUF, cu_tag(0x5ba9e5, p, 0, 0), 0);
    }
    cu_h2d(sh.src, sh.pattern[cu.me].data(), SHAPE_BUF);
    shmem_barrier_all();

    cu_phase_begin("launch bounds");
    shape_preflight(ks, nk);
    cu_phase_end();
    for (size_t i = 0; i < nk; i++) {
        if (sh.only != NULL && strstr(ks[i].name, sh.only) == NULL)
            continue;
        cu_phase_begin(ks[i].name);
        shape_run_kernel(&ks[i]);
        cu_phase_end();
        ran++;
    }
    if (sh.only == NULL || strstr("shape_divergent", sh.only) != NULL) {
        cu_phase_begin("shape_divergent");
        for (size_t s = 0; s < SHAPE_NSHAPES; s++) {
            if (sh.proxy && s != 0)
                continue;
            sh.shape = shape_shapes[s].name;
            shape_run_divergent(shape_shapes[s].block);
        }
        cu_phase_end();
        ran++;
    }
    if (cu.me == 0)
        printf("%zu kernels at %d blocks of 1024 threads and other shapes, %d PEs%s\n", ran,
               sh.nblocks, cu.npes, sh.proxy ? ", through the proxy" : "");
    cu_finish();
    return 0;
}

#endif
