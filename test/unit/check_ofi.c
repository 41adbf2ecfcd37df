/* Check suite for the ofi transport, driven without the host layer: the PEs
 * are forked children that implement the out-of-band exchange among
 * themselves in an anonymous shared mapping, each with a heap from the cpu
 * backend. Every provider runs the same cases; FI_PROVIDER is set in each
 * child before its first libfabric call (libfabric reads it only once per
 * process), and a provider this machine lacks is skipped with a reason. */
#include <check.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_util.h"
#include "fake_oob.h"
#include "ushmem_config.h"

#include "../../src/common/log.h"
#include "../../src/device/device.h"
#include "../../src/transport/transport.h"
#if USHMEM_HAVE_OFI
#include "../../src/transport/ofi.h"
#endif

#define MAX_PES 4
#define MiB (1024 * 1024)
#define MAX_XFER (4 * MiB)
/* Heap layout: a receive region per source PE, a region each PE fills for
 * gets, then the atomic area. */
#define PUT_AREA 0
#define OWN_AREA ((uint64_t)MAX_PES * MAX_XFER)
#define AMO_AREA (OWN_AREA + MAX_XFER)
#define FLAG_AREA (AMO_AREA + 64 * 1024)
#define HEAP_SIZE ((size_t)FLAG_AREA + 64 * 1024)

#define SKIP_CODE 77

#if USHMEM_HAVE_OFI

/* ------------------------------------------------------------------------ */
/* The out-of-band exchange among forked PEs. */

struct shared_oob {
    struct fake_oob core;
    /* Results the PEs hand to each other for cross-PE checks. */
    int64_t fetched[MAX_PES][MAX_PES][64]; /* [target][source][i] */
    atomic_int winners[MAX_PES][6];        /* cswap winners per target and type */
};

struct fake_ctx {
    struct shared_oob *shm;
    int rank;
};

static ushmem_status_t fake_barrier(void *ctx)
{
    struct fake_ctx *c = ctx;
    return fake_oob_barrier(&c->shm->core);
}

static ushmem_status_t fake_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    struct fake_ctx *c = ctx;
    return fake_oob_allgather(&c->shm->core, c->rank, mine, all, len);
}

static struct shared_oob *shared_new(int npes)
{
    struct shared_oob *shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(shm, MAP_FAILED);
    memset(shm, 0, sizeof(*shm));
    shm->core.size = npes;
    return shm;
}

static const struct ushmemi_transport_ops *ops = &ushmemi_transport_ofi_ops;

/* One PE's world. */
struct pe {
    int rank, npes;
    const char *provider;
    struct fake_ctx ctx;
    struct ushmemi_oob oob;
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    unsigned char *heap;
    struct ushmemi_transport *t;
};

typedef int (*pe_body)(struct pe *pe);

/* Where the PEs are, for the endpoint address cases: on one host (the
 * default), or each on a host of its own with pe_iface as
 * USHMEM_FABRIC_IFACE. Set before the PEs are forked. */
static bool pe_hosts_apart;
static const char *pe_iface;

static int pe_barrier(struct pe *pe)
{
    return fake_barrier(&pe->ctx) == USHMEM_OK ? 0 : 1;
}

/* Sets up one PE, runs body and tears down; the exit code names the first
 * failure (0 pass, 77 provider missing). */
static int pe_main(struct shared_oob *shm, int rank, int npes, const char *provider, pe_body body)
{
    struct pe pe = {.rank = rank, .npes = npes, .provider = provider, .ctx = {shm, rank}};
    pe.oob = (struct ushmemi_oob){.rank = rank, .size = npes, .local_rank = rank,
                                  .local_size = npes, .host_local_rank = pe_hosts_apart ? 0 : rank,
                                  .host_local_size = pe_hosts_apart ? 1 : npes,
                                  .job_id = "chkofi", .ctx = &pe.ctx,
                                  .allgather = fake_allgather, .barrier = fake_barrier};
    if (setenv("FI_PROVIDER", provider, 1) != 0)
        return 2;
    /* The sockets provider's own progress thread spins 10 ms by default
     * before it sleeps, which on an oversubscribed node starves the PEs and
     * makes each operation cost about a millisecond. */
    if (setenv("FI_SOCKETS_PE_WAITTIME", "0", 0) != 0)
        return 2;
    ushmemi_log_set_pe(rank);
    if (ushmemi_device_open("cpu", rank, npes, &pe.dev_ops, &pe.dev) != USHMEM_OK)
        return 3;
    if (pe.dev_ops->heap_alloc(pe.dev, HEAP_SIZE, (void **)&pe.heap) != USHMEM_OK)
        return 4;
    memset(pe.heap, 0, HEAP_SIZE);
    struct ushmemi_transport_params params = {.oob = &pe.oob, .dev_ops = pe.dev_ops,
                                              .dev = pe.dev, .heap = pe.heap,
                                              .heap_size = HEAP_SIZE, .heap_is_device = 0,
                                              .fabric_iface = pe_iface};
    ushmem_status_t st = ops->init(&params, &pe.t);
    if (st == USHMEM_ERR_UNSUPPORTED)
        return SKIP_CODE;
    if (st != USHMEM_OK)
        return 5;
    int rc = body(&pe);
    if (rc == 0 && ops->quiet(pe.t) != USHMEM_OK)
        rc = 6;
    /* Peers may still be reading from this heap until everyone is done. */
    if (pe_barrier(&pe) != 0 && rc == 0)
        rc = 7;
    ops->fini(pe.t);
    pe.dev_ops->heap_free(pe.dev, pe.heap, HEAP_SIZE);
    pe.dev_ops->close(pe.dev);
    return rc;
}

/* Forks npes PEs running body over provider; returns 0 when all passed,
 * SKIP_CODE when the provider is absent, or the first failing code. */
static int run_pes(int npes, const char *provider, pe_body body, double limit_s)
{
    struct shared_oob *shm = shared_new(npes);
    pid_t pids[MAX_PES];
    for (int r = 0; r < npes; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(pe_main(shm, r, npes, provider, body));
    }
    int result = 0;
    for (int r = 0; r < npes; r++) {
        int rc = reap(pids[r], limit_s);
        if (rc != 0 && (result == 0 || result == SKIP_CODE)) {
            if (rc != 0)
                fprintf(stderr, "%s: PE %d of %d exited with %d\n", provider, r, npes, rc);
            result = rc;
        }
    }
    munmap(shm, sizeof(*shm));
    return result;
}

static int probe_body(struct pe *pe)
{
    (void)pe;
    return 0;
}

static const char *const providers[] = {"tcp", "shm", "sockets", "udp"};
#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

/* Whether each provider works on this machine at all: one PE alone, in a
 * child so that FI_PROVIDER is read fresh. The first test of a provider
 * probes it and keeps the answer in memory that main shared before the
 * tests were forked from it, so the later tests read it (a probe per test
 * cost 0.4-0.6 s each, a third of this suite, which runs alone). */
#define PROBE_NOT_YET (-1000)
static int *probe_rc;

static void share_probes(void)
{
    probe_rc = mmap(NULL, NPROVIDERS * sizeof(*probe_rc), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (probe_rc == MAP_FAILED) {
        probe_rc = NULL; /* every test probes for itself */
        return;
    }
    for (size_t i = 0; i < NPROVIDERS; i++)
        probe_rc[i] = PROBE_NOT_YET;
}

/* Provider number idx's probe, as a test sees it: false (and why) when the
 * provider is not offered here, a failed test when its init failed. */
static bool provider_present(size_t idx)
{
    const char *provider = providers[idx];
    int rc = probe_rc != NULL ? probe_rc[idx] : PROBE_NOT_YET;
    if (rc == PROBE_NOT_YET) {
        rc = run_pes(1, provider, probe_body, 20.0);
        if (probe_rc != NULL)
            probe_rc[idx] = rc;
    }
    if (rc == SKIP_CODE) {
        printf("SKIP: libfabric offers no FI_RMA RDM endpoint from provider '%s' here\n",
               provider);
        return false;
    }
    ck_assert_msg(rc == 0, "single-PE init over %s failed with %d", provider, rc);
    return true;
}

/* ------------------------------------------------------------------------ */
/* Put and get. */

static unsigned char pattern(int src, int dst, size_t size, size_t i)
{
    return (unsigned char)(src * 31 + dst * 7 + i * 13 + size + (i >> 8));
}

static const size_t sizes[] = {1, 7, 64, 4096, 65536 + 3, MiB, MAX_XFER};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int check_region(const unsigned char *p, int src, int dst, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (p[i] != pattern(src, dst, size, i)) {
            fprintf(stderr, "PE %d: byte %zu of a %zu-byte transfer from PE %d is %u, want %u\n",
                    dst, i, size, src, p[i], pattern(src, dst, size, i));
            return 1;
        }
    }
    return 0;
}

static int rma_body(struct pe *pe)
{
    unsigned char *buf = malloc(MAX_XFER);
    int rc = 0;
    if (buf == NULL)
        return 20;

    /* put: every PE writes into region[rank] of every PE, itself included;
     * the receiver checks every byte. */
    for (size_t s = 0; s < NSIZES && rc == 0; s++) {
        size_t size = sizes[s];
        for (int dst = 0; dst < pe->npes && rc == 0; dst++) {
            for (size_t i = 0; i < size; i++)
                buf[i] = pattern(pe->rank, dst, size, i);
            if (ops->put(pe->t, dst, PUT_AREA + (uint64_t)pe->rank * MAX_XFER, buf, size) !=
                USHMEM_OK)
                rc = 21;
        }
        if (pe_barrier(pe) != 0)
            rc = rc ? rc : 22;
        for (int src = 0; src < pe->npes && rc == 0; src++) {
            if (check_region(pe->heap + PUT_AREA + (size_t)src * MAX_XFER, src, pe->rank, size))
                rc = 23;
            /* The byte past the end stays untouched. */
            if (size < MAX_XFER && pe->heap[PUT_AREA + (size_t)src * MAX_XFER + size] != 0)
                rc = 24;
        }
        if (pe_barrier(pe) != 0)
            rc = rc ? rc : 25;
    }

    /* get: every PE fills its own region, then reads every peer's. */
    for (size_t s = 0; s < NSIZES && rc == 0; s++) {
        size_t size = sizes[s];
        for (size_t i = 0; i < size; i++)
            pe->heap[OWN_AREA + i] = pattern(pe->rank, pe->rank, size, i);
        if (pe_barrier(pe) != 0)
            rc = 26;
        for (int src = 0; src < pe->npes && rc == 0; src++) {
            memset(buf, 0xee, size);
            if (ops->get(pe->t, src, buf, OWN_AREA, size) != USHMEM_OK)
                rc = 27;
            else if (check_region(buf, src, src, size))
                rc = 28;
        }
        if (pe_barrier(pe) != 0)
            rc = rc ? rc : 29;
    }

    /* Out of range and bad PEs are refused, not sent. */
    if (rc == 0 && ops->put(pe->t, 0, HEAP_SIZE - 4, buf, 8) != USHMEM_ERR_OUT_OF_RANGE)
        rc = 30;
    if (rc == 0 && ops->get(pe->t, pe->npes, buf, 0, 8) != USHMEM_ERR_INVALID_PARAM)
        rc = 31;
    free(buf);
    return rc;
}

/* nbi: many small puts from one buffer that changes at once after each
 * call (the transport must have taken the bytes), a large one, then quiet. */
static int nbi_body(struct pe *pe)
{
    enum { N = 200, SZ = 96, BIG = 100 * 1024 };
    unsigned char src[SZ];
    unsigned char *big = malloc(BIG);
    int rc = 0;
    if (big == NULL)
        return 40;

    for (int dst = 0; dst < pe->npes && rc == 0; dst++) {
        uint64_t region = PUT_AREA + (uint64_t)pe->rank * MAX_XFER;
        for (int k = 0; k < N && rc == 0; k++) {
            for (size_t i = 0; i < SZ; i++)
                src[i] = pattern(pe->rank, dst, (size_t)k, i);
            if (ops->put_nbi(pe->t, dst, region + (uint64_t)k * SZ, src, SZ) != USHMEM_OK)
                rc = 41;
            memset(src, 0xdd, SZ); /* reused at once */
        }
        for (size_t i = 0; i < BIG; i++)
            big[i] = pattern(pe->rank, dst, BIG, i);
        if (rc == 0 && ops->put_nbi(pe->t, dst, region + MiB, big, BIG) != USHMEM_OK)
            rc = 42;
        memset(big, 0xdd, BIG);
    }
    if (rc == 0 && ops->quiet(pe->t) != USHMEM_OK)
        rc = 43;
    if (pe_barrier(pe) != 0)
        rc = rc ? rc : 44;
    for (int src_pe = 0; src_pe < pe->npes && rc == 0; src_pe++) {
        const unsigned char *region = pe->heap + PUT_AREA + (size_t)src_pe * MAX_XFER;
        for (int k = 0; k < N && rc == 0; k++) {
            for (size_t i = 0; i < SZ; i++) {
                if (region[(size_t)k * SZ + i] != pattern(src_pe, pe->rank, (size_t)k, i)) {
                    fprintf(stderr, "PE %d: nbi put %d from PE %d wrong at byte %zu\n", pe->rank,
                            k, src_pe, i);
                    rc = 45;
                    break;
                }
            }
        }
        if (rc == 0 && check_region(region + MiB, src_pe, pe->rank, BIG))
            rc = 46;
    }

    /* get_nbi: several gets from every peer in flight, complete at quiet. */
    for (size_t i = 0; i < BIG; i++)
        pe->heap[OWN_AREA + i] = pattern(pe->rank, pe->rank, BIG, i);
    if (pe_barrier(pe) != 0)
        rc = rc ? rc : 47;
    unsigned char *dst = calloc((size_t)pe->npes, BIG);
    if (dst == NULL)
        rc = rc ? rc : 48;
    for (int p = 0; p < pe->npes && rc == 0; p++) {
        for (size_t off = 0; off < BIG && rc == 0; off += BIG / 4) {
            if (ops->get_nbi(pe->t, p, dst + (size_t)p * BIG + off, OWN_AREA + off, BIG / 4) !=
                USHMEM_OK)
                rc = 49;
        }
    }
    if (rc == 0 && ops->quiet(pe->t) != USHMEM_OK)
        rc = 50;
    for (int p = 0; p < pe->npes && rc == 0; p++) {
        if (check_region(dst + (size_t)p * BIG, p, p, BIG))
            rc = 51;
    }
    free(dst);
    free(big);
    return rc;
}

/* fence: a payload then a flag to the next PE; whoever sees the flag must
 * see the payload. Repeated so that a reordering has a chance to show. */
static int fence_body(struct pe *pe)
{
    enum { ROUNDS = 20, CHUNK = 8 * 1024, CHUNKS = 8 };
    int next = (pe->rank + 1) % pe->npes, prev = (pe->rank + pe->npes - 1) % pe->npes;
    uint64_t payload = PUT_AREA + (uint64_t)pe->rank * MAX_XFER; /* region of sender */
    volatile uint64_t *flag = (volatile uint64_t *)(pe->heap + FLAG_AREA);
    unsigned char chunk[CHUNK];

    for (int round = 1; round <= ROUNDS; round++) {
        for (int c = 0; c < CHUNKS; c++) {
            memset(chunk, (round * 16 + c) & 0xff, CHUNK);
            if (ops->put_nbi(pe->t, next, payload + (uint64_t)c * CHUNK, chunk, CHUNK) != USHMEM_OK)
                return 60;
        }
        if (ops->fence(pe->t) != USHMEM_OK)
            return 61;
        uint64_t value = (uint64_t)round;
        if (ops->put_nbi(pe->t, next, FLAG_AREA, &value, sizeof(value)) != USHMEM_OK)
            return 62;
        /* Wait for our own flag from prev, then check its payload. */
        double deadline = now_s() + 10.0;
        while (*flag < (uint64_t)round) {
            if (now_s() > deadline)
                return 63;
            sched_yield();
        }
        atomic_thread_fence(memory_order_acquire);
        const unsigned char *got = pe->heap + PUT_AREA + (size_t)prev * MAX_XFER;
        for (size_t i = 0; i < (size_t)CHUNK * CHUNKS; i++) {
            if (got[i] != ((round * 16 + (int)(i / CHUNK)) & 0xff)) {
                fprintf(stderr, "PE %d: round %d payload byte %zu not there before the flag\n",
                        pe->rank, round, i);
                return 64;
            }
        }
        if (ops->quiet(pe->t) != USHMEM_OK || pe_barrier(pe) != 0)
            return 65;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Atomics. */

static const enum ushmemi_amo_type int_types[] = {USHMEMI_AMO_INT32, USHMEMI_AMO_UINT32,
                                                  USHMEMI_AMO_INT64, USHMEMI_AMO_UINT64};

static size_t type_size(enum ushmemi_amo_type type)
{
    return type == USHMEMI_AMO_INT32 || type == USHMEMI_AMO_UINT32 || type == USHMEMI_AMO_FLOAT
               ? 4
               : 8;
}

/* Values travel as the type's bytes; 64-bit holders convert. */
static void to_type(enum ushmemi_amo_type type, int64_t v, void *out)
{
    switch (type) {
    case USHMEMI_AMO_INT32: {
        int32_t x = (int32_t)v;
        memcpy(out, &x, 4);
        break;
    }
    case USHMEMI_AMO_UINT32: {
        uint32_t x = (uint32_t)v;
        memcpy(out, &x, 4);
        break;
    }
    case USHMEMI_AMO_FLOAT: {
        float x = (float)v;
        memcpy(out, &x, 4);
        break;
    }
    case USHMEMI_AMO_DOUBLE: {
        double x = (double)v;
        memcpy(out, &x, 8);
        break;
    }
    default:
        memcpy(out, &v, 8);
        break;
    }
}

static int64_t from_type(enum ushmemi_amo_type type, const void *in)
{
    switch (type) {
    case USHMEMI_AMO_INT32: {
        int32_t x;
        memcpy(&x, in, 4);
        return x;
    }
    case USHMEMI_AMO_UINT32: {
        uint32_t x;
        memcpy(&x, in, 4);
        return x;
    }
    case USHMEMI_AMO_FLOAT: {
        float x;
        memcpy(&x, in, 4);
        return (int64_t)x;
    }
    case USHMEMI_AMO_DOUBLE: {
        double x;
        memcpy(&x, in, 8);
        return (int64_t)x;
    }
    default: {
        int64_t x;
        memcpy(&x, in, 8);
        return x;
    }
    }
}

/* Slot offsets in the atomic area: one 64-byte line per (what, type). */
enum { SLOT_ADD, SLOT_FADD, SLOT_AND, SLOT_OR, SLOT_XOR, SLOT_CSWAP1, SLOT_CSWAP_LOOP, SLOT_SET };
static uint64_t amo_slot(int what, enum ushmemi_amo_type type, int index)
{
    return AMO_AREA + ((uint64_t)what * 6 + (uint64_t)type) * 64 * MAX_PES + (uint64_t)index * 8;
}

static int64_t local_value(struct pe *pe, uint64_t offset, enum ushmemi_amo_type type)
{
    return from_type(type, pe->heap + offset);
}

/* Equal in the type's width (a 32-bit all-ones reads back as -1 or 2^32-1). */
static bool same(enum ushmemi_amo_type type, int64_t a, int64_t b)
{
    uint64_t m = type_size(type) == 4 ? 0xffffffffu : ~(uint64_t)0;
    return ((uint64_t)a & m) == ((uint64_t)b & m);
}

static int amo(struct pe *pe, int target, uint64_t offset, enum ushmemi_amo_op op,
               enum ushmemi_amo_type type, int64_t operand, int64_t compare, int64_t *result)
{
    unsigned char o[8], c[8], r[8];
    to_type(type, operand, o);
    to_type(type, compare, c);
    ushmem_status_t st = ops->atomic(pe->t, target, offset, op, type, o, c,
                                     result != NULL ? r : NULL);
    if (st != USHMEM_OK) {
        fprintf(stderr, "PE %d: atomic %d type %d to PE %d: %s\n", pe->rank, (int)op, (int)type,
                target, ushmemi_status_name(st));
        return 1;
    }
    if (result != NULL)
        *result = from_type(type, r);
    return 0;
}

enum { K = 16 }; /* operations per PE per target */

static int amo_int_body(struct pe *pe, enum ushmemi_amo_type type)
{
    int n = pe->npes, me = pe->rank;
    int64_t all_ones = type_size(type) == 4 ? (int64_t)0xffffffff : -1;
    unsigned char init[8];

    /* Each PE prepares its own slots before anyone targets them. */
    to_type(type, all_ones, init);
    memcpy(pe->heap + amo_slot(SLOT_AND, type, 0), init, type_size(type));
    if (pe_barrier(pe) != 0)
        return 70;

    for (int dst = 0; dst < n; dst++) {
        int64_t prev = -1, got;
        for (int k = 0; k < K; k++) {
            if (amo(pe, dst, amo_slot(SLOT_ADD, type, 0), USHMEMI_AMO_ADD, type, me + 1, 0, NULL))
                return 71;
            if (amo(pe, dst, amo_slot(SLOT_FADD, type, 0), USHMEMI_AMO_ADD, type, 1, 0, &got))
                return 72;
            /* This PE's own fetches on one target only ever grow. */
            if (got <= prev) {
                fprintf(stderr, "PE %d: fetch-add %d on PE %d returned %lld after %lld\n",
                        pe->rank, k, dst, (long long)got, (long long)prev);
                return 73;
            }
            prev = got;
            pe->ctx.shm->fetched[dst][me][k] = got;
        }
        /* Fetching variants on odd ranks, plain ones on even ranks. */
        int64_t *res = (me & 1) ? &got : NULL;
        if (amo(pe, dst, amo_slot(SLOT_AND, type, 0), USHMEMI_AMO_AND, type, ~((int64_t)1 << me),
                0, res) ||
            amo(pe, dst, amo_slot(SLOT_OR, type, 0), USHMEMI_AMO_OR, type, (int64_t)1 << me, 0,
                res) ||
            amo(pe, dst, amo_slot(SLOT_XOR, type, 0), USHMEMI_AMO_XOR, type,
                (int64_t)0x101 << me, 0, res) ||
            amo(pe, dst, amo_slot(SLOT_XOR, type, 0), USHMEMI_AMO_XOR, type, (int64_t)1 << me, 0,
                res))
            return 74;
        /* Contention: exactly one PE turns 0 into its rank + 1. */
        if (amo(pe, dst, amo_slot(SLOT_CSWAP1, type, 0), USHMEMI_AMO_CSWAP, type, me + 1, 0, &got))
            return 75;
        if (got == 0)
            atomic_fetch_add(&pe->ctx.shm->winners[dst][type], 1);
        else if (got < 1 || got > n)
            return 76;
        /* Increment through a compare-and-swap loop, as locks do. */
        for (int k = 0; k < K; k++) {
            int64_t seen = 0, old;
            if (amo(pe, dst, amo_slot(SLOT_CSWAP_LOOP, type, 0), USHMEMI_AMO_FETCH, type, 0, 0,
                    &seen))
                return 77;
            for (int tries = 0;; tries++) {
                if (amo(pe, dst, amo_slot(SLOT_CSWAP_LOOP, type, 0), USHMEMI_AMO_CSWAP, type,
                        seen + 1, seen, &old))
                    return 78;
                if (old == seen)
                    break;
                if (tries > 100000)
                    return 79;
                seen = old;
            }
        }
        /* set, then swap back our own slot on the peer: the swap sees the set. */
        if (amo(pe, dst, amo_slot(SLOT_SET, type, me), USHMEMI_AMO_SET, type, 1000 + me * 10 + dst,
                0, NULL))
            return 80;
        if (amo(pe, dst, amo_slot(SLOT_SET, type, me), USHMEMI_AMO_SWAP, type, 2000 + me, 0, &got))
            return 81;
        if (got != 1000 + me * 10 + dst)
            return 82;
    }
    if (pe_barrier(pe) != 0)
        return 83;

    /* Every total is known: check our own heap. */
    int64_t sum_ranks = (int64_t)n * (n + 1) / 2, mask = ((int64_t)1 << n) - 1;
    if (local_value(pe, amo_slot(SLOT_ADD, type, 0), type) != K * sum_ranks)
        return 84;
    if (local_value(pe, amo_slot(SLOT_FADD, type, 0), type) != (int64_t)K * n)
        return 85;
    if (!same(type, local_value(pe, amo_slot(SLOT_AND, type, 0), type), all_ones & ~mask))
        return 86;
    if (local_value(pe, amo_slot(SLOT_OR, type, 0), type) != mask)
        return 87;
    if (local_value(pe, amo_slot(SLOT_XOR, type, 0), type) != (mask << 8))
        return 88;
    if (atomic_load(&pe->ctx.shm->winners[me][type]) != 1)
        return 89;
    int64_t won = local_value(pe, amo_slot(SLOT_CSWAP1, type, 0), type);
    if (won < 1 || won > n)
        return 90;
    if (local_value(pe, amo_slot(SLOT_CSWAP_LOOP, type, 0), type) != (int64_t)K * n)
        return 91;
    for (int src = 0; src < n; src++) {
        if (local_value(pe, amo_slot(SLOT_SET, type, src), type) != 2000 + src)
            return 92;
    }
    /* The fetch-adds on this PE handed out 0 .. K*n-1, each exactly once. */
    bool seen[K * MAX_PES] = {false};
    for (int src = 0; src < n; src++) {
        for (int k = 0; k < K; k++) {
            int64_t v = pe->ctx.shm->fetched[me][src][k];
            if (v < 0 || v >= K * n || seen[v])
                return 93;
            seen[v] = true;
        }
    }
    /* Remote fetch agrees with the local view. */
    int64_t got;
    int peer = (me + 1) % n;
    if (amo(pe, peer, amo_slot(SLOT_ADD, type, 0), USHMEMI_AMO_FETCH, type, 0, 0, &got) ||
        got != K * sum_ranks)
        return 94;
    return pe_barrier(pe) != 0 ? 95 : 0;
}

static int amo_float_body(struct pe *pe, enum ushmemi_amo_type type)
{
    int me = pe->rank;
    for (int dst = 0; dst < pe->npes; dst++) {
        int64_t got;
        if (amo(pe, dst, amo_slot(SLOT_SET, type, me), USHMEMI_AMO_SET, type, 300 + me, 0, NULL) ||
            amo(pe, dst, amo_slot(SLOT_SET, type, me), USHMEMI_AMO_FETCH, type, 0, 0, &got) ||
            got != 300 + me)
            return 100;
        if (amo(pe, dst, amo_slot(SLOT_SET, type, me), USHMEMI_AMO_SWAP, type, 400 + me, 0, &got) ||
            got != 300 + me)
            return 101;
    }
    if (pe_barrier(pe) != 0)
        return 102;
    for (int src = 0; src < pe->npes; src++) {
        if (local_value(pe, amo_slot(SLOT_SET, type, src), type) != 400 + src)
            return 103;
    }
    /* Arithmetic on floating point is not an OpenSHMEM atomic. */
    unsigned char one[8];
    to_type(type, 1, one);
    if (ops->atomic(pe->t, 0, amo_slot(SLOT_ADD, type, 0), USHMEMI_AMO_ADD, type, one, NULL,
                    NULL) != USHMEM_ERR_INVALID_PARAM)
        return 104;
    return pe_barrier(pe) != 0 ? 105 : 0;
}

/* A provider without usable atomics says so, naming itself, and refuses
 * every atomic instead of sending it. */
static int no_amo_body(struct pe *pe)
{
    const char *why = NULL;
    if (ops->can_atomic(pe->t, 0, &why) != 0 || why == NULL || strstr(why, pe->provider) == NULL)
        return 112;
    if (pe->rank == 0)
        printf("SKIP atomics over %s: %s\n", pe->provider, why), fflush(stdout);
    int64_t v = 1, r;
    if (ops->atomic(pe->t, 0, AMO_AREA, USHMEMI_AMO_ADD, USHMEMI_AMO_INT64, &v, NULL, &r) !=
        USHMEM_ERR_UNSUPPORTED)
        return 113;
    return 0;
}

static int amo_body(struct pe *pe)
{
    const char *why = NULL;
    if (strcmp(pe->provider, "udp") == 0)
        return no_amo_body(pe);
    for (int p = 0; p < pe->npes; p++) {
        if (!ops->can_atomic(pe->t, p, &why)) {
            fprintf(stderr, "PE %d: %s has no atomics to PE %d: %s\n", pe->rank, pe->provider, p,
                    why);
            return 110;
        }
    }
    if (ops->can_atomic(pe->t, pe->npes, &why) != 0 || why == NULL)
        return 111;
    for (size_t i = 0; i < sizeof(int_types) / sizeof(int_types[0]); i++) {
        int rc = amo_int_body(pe, int_types[i]);
        if (rc != 0) {
            fprintf(stderr, "PE %d: %s atomics on type %d failed with %d\n", pe->rank,
                    pe->provider, (int)int_types[i], rc);
            return rc;
        }
    }
    int rc = amo_float_body(pe, USHMEMI_AMO_FLOAT);
    return rc != 0 ? rc : amo_float_body(pe, USHMEMI_AMO_DOUBLE);
}

/* Latency of blocking 8-byte operations from PE 0 to PE 1, printed only. */
/* Back-to-back operations to one peer: each kind in a row, then the peer's
 * words hold what the last one left (every add counted, the last put's
 * value). The times are printed for reference; test/perf measures. */
static int latency_body(struct pe *pe)
{
    enum { ITERS = 500 };
    if (pe->rank == 0) {
        uint64_t v = 1, r;
        double t0 = now_s();
        for (int i = 0; i < ITERS; i++) {
            if (ops->put(pe->t, 1, FLAG_AREA + 64, &v, 8) != USHMEM_OK)
                return 120;
        }
        double t1 = now_s();
        for (int i = 0; i < ITERS; i++) {
            if (ops->get(pe->t, 1, &r, FLAG_AREA + 64, 8) != USHMEM_OK || r != v)
                return 121;
        }
        double t2 = now_s();
        const char *why;
        bool amo = ops->can_atomic(pe->t, 1, &why);
        for (int i = 0; i < ITERS && amo; i++) {
            if (ops->atomic(pe->t, 1, FLAG_AREA + 128, USHMEMI_AMO_ADD, USHMEMI_AMO_INT64, &v,
                            NULL, &r) != USHMEM_OK)
                return 122;
        }
        double t3 = now_s();
        uint64_t vals[ITERS];
        for (int i = 0; i < ITERS; i++) {
            vals[i] = (uint64_t)i + 2;
            if (ops->put_nbi(pe->t, 1, FLAG_AREA + 64, &vals[i], 8) != USHMEM_OK)
                return 123;
        }
        if (ops->quiet(pe->t) != USHMEM_OK)
            return 124;
        double t4 = now_s();
        if (ops->get(pe->t, 1, &r, FLAG_AREA + 64, 8) != USHMEM_OK || r != (uint64_t)ITERS + 1)
            return 125;
        if (amo && (ops->get(pe->t, 1, &r, FLAG_AREA + 128, 8) != USHMEM_OK ||
                    r != (uint64_t)ITERS))
            return 126;
        printf("latency %-8s put8 %.2f us  get8 %.2f us  fadd8 %.2f us  put_nbi8 rate %.2f M/s\n",
               pe->provider, (t1 - t0) / ITERS * 1e6, (t2 - t1) / ITERS * 1e6,
               (t3 - t2) / ITERS * 1e6, ITERS / (t4 - t3) / 1e6);
        fflush(stdout);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Cases, one set per provider. */

static void run_case(size_t idx, int npes, pe_body body)
{
    const char *provider = providers[idx];
    if (!provider_present(idx))
        return;
    int rc = run_pes(npes, provider, body, 60.0);
    ck_assert_msg(rc == 0, "%d PEs over %s: a PE exited with %d", npes, provider, rc);
}

#define PROVIDER_CASES(p, idx)                                                \
    START_TEST(rma_##p) { run_case(idx, 2 + 2 * _i, rma_body); }              \
    END_TEST                                                                  \
    START_TEST(nbi_##p) { run_case(idx, 2 + 2 * _i, nbi_body); }              \
    END_TEST                                                                  \
    START_TEST(fence_##p) { run_case(idx, 2 + 2 * _i, fence_body); }          \
    END_TEST                                                                  \
    START_TEST(amo_##p) { run_case(idx, 2 + 2 * _i, amo_body); }              \
    END_TEST                                                                  \
    START_TEST(latency_##p) { run_case(idx, 2, latency_body); }               \
    END_TEST

PROVIDER_CASES(tcp, 0)
PROVIDER_CASES(shm, 1)
PROVIDER_CASES(sockets, 2)
PROVIDER_CASES(udp, 3)

/* ------------------------------------------------------------------------ */
/* The endpoint's address (ofi_addr.c): loopback when every PE is on this
 * host, USHMEM_FABRIC_IFACE's across hosts, the provider's own otherwise;
 * the PEs still reach each other. */

static const char *expect_addr, *expect_why;

static int address_body(struct pe *pe)
{
    char text[512];
    ushmemi_ofi_endpoint_text(pe->t, text, sizeof(text));
    if ((expect_addr != NULL && strstr(text, expect_addr) != text) ||
        strstr(text, expect_why) == NULL) {
        fprintf(stderr, "PE %d: endpoint \"%s\", wanted one starting \"%s\" and saying \"%s\"\n",
                pe->rank, text, expect_addr != NULL ? expect_addr : "", expect_why);
        return 30;
    }
    return rma_body(pe);
}

static void run_address_case(size_t idx, bool apart, const char *iface, const char *addr,
                             const char *why, int want_rc)
{
    if (!provider_present(idx))
        return;
    pe_hosts_apart = apart;
    pe_iface = iface;
    expect_addr = addr;
    expect_why = why;
    int rc = run_pes(2, providers[idx], address_body, 60.0);
    pe_hosts_apart = false;
    pe_iface = NULL;
    ck_assert_msg(rc == want_rc, "2 PEs over %s, %s, USHMEM_FABRIC_IFACE=%s: exit %d, wanted %d",
                  providers[idx], apart ? "hosts apart" : "one host", iface ? iface : "",
                  rc, want_rc);
}

START_TEST(address_one_host_tcp)
{
    run_address_case(0, false, NULL, "fi_sockaddr_in://127.0.0.1:",
                     "(loopback only: every PE of the job is on this host)", 0);
}
END_TEST

START_TEST(address_one_host_ignores_iface_sockets)
{
    run_address_case(2, false, "127.0.0.1", "127.0.0.1:", "(loopback only", 0);
}
END_TEST

START_TEST(address_hosts_apart_iface_name_tcp)
{
    run_address_case(0, true, "lo", "fi_sockaddr_in://127.0.0.1:", "(USHMEM_FABRIC_IFACE=lo)", 0);
}
END_TEST

START_TEST(address_hosts_apart_iface_address_sockets)
{
    run_address_case(2, true, "127.0.0.1", "127.0.0.1:", "(USHMEM_FABRIC_IFACE=127.0.0.1)", 0);
}
END_TEST

START_TEST(address_hosts_apart_default_tcp)
{
    run_address_case(0, true, NULL, NULL,
                     "(the provider's choice: the job spans hosts and USHMEM_FABRIC_IFACE is "
                     "unset)", 0);
}
END_TEST

START_TEST(address_unknown_iface_fails_tcp)
{
    run_address_case(0, true, "nosuch0", NULL, "", 5); /* 5: init failed */
}
END_TEST

START_TEST(address_shm_random_name)
{
    run_address_case(1, false, NULL, "fi_ns://ushmem-", "(a random name", 0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* A device heap on this libfabric: init fails cleanly, says why once, and
 * leaks nothing. */

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* One PE alone; the device backend is the cpu one renamed, which is how a
 * Level Zero heap reaches libfabric's registration (FI_HMEM_ZE). */
static int device_heap_child(const char *provider, const char *backend_name, int rounds)
{
    struct shared_oob *shm = shared_new(1);
    struct fake_ctx ctx = {shm, 0};
    struct ushmemi_oob oob = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1,
                              .host_local_rank = 0, .host_local_size = 1,
                              .job_id = "chkofi-dev", .ctx = &ctx, .allgather = fake_allgather,
                              .barrier = fake_barrier};
    struct ushmemi_device_ops fake = ushmemi_device_cpu_ops;
    fake.name = backend_name;
    struct ushmemi_device *dev;
    void *heap;

    if (provider != NULL && setenv("FI_PROVIDER", provider, 1) != 0)
        return 2;
    if (fake.open(0, 1, &dev) != USHMEM_OK || fake.heap_alloc(dev, 1 * MiB, &heap) != USHMEM_OK)
        return 3;
    /* stderr into a memfd, so that the message can be counted. */
    FILE *log = tmpfile();
    if (log == NULL || dup2(fileno(log), STDERR_FILENO) < 0)
        return 4;
    struct ushmemi_transport_params params = {.oob = &oob, .dev_ops = &fake, .dev = dev,
                                              .heap = heap, .heap_size = 1 * MiB,
                                              .heap_is_device = 1};
    struct ushmemi_transport *t = (struct ushmemi_transport *)&params; /* a canary */
    if (ops->init(&params, &t) != USHMEM_ERR_UNSUPPORTED)
        return 5;
    if (t != (struct ushmemi_transport *)&params)
        return 6; /* output touched on failure */
    int fds = count_fds();
    for (int i = 1; i < rounds; i++) {
        if (ops->init(&params, &t) != USHMEM_ERR_UNSUPPORTED)
            return 7;
    }
    if (count_fds() != fds)
        return 8;

    char text[64 * 1024];
    size_t len = (size_t)ftell(log);
    rewind(log);
    len = fread(text, 1, len < sizeof(text) - 1 ? len : sizeof(text) - 1, log);
    text[len] = '\0';
    int msgs = count_lines_with(text, "no GPU-RMA for this memory");
    int lines = count_lines_with(text, "\n");
    if (msgs != rounds || lines != rounds) {
        fprintf(stdout, "%d messages in %d lines for %d attempts:\n%.2000s", msgs, lines,
                rounds, text);
        return 9;
    }
    printf("device heap over %s (%s backend): %.300s", provider ? provider : "any provider",
           backend_name, text);
    fake.heap_free(dev, heap, 1 * MiB);
    fake.close(dev);
    return 0;
}

static void run_device_heap(const char *provider, const char *backend_name)
{
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int rc = device_heap_child(provider, backend_name, 100);
        fflush(stdout);
        _exit(rc);
    }
    int rc = reap(pid, 60.0);
    ck_assert_msg(rc == 0, "device heap over %s: child exited with %d",
                  provider ? provider : "default", rc);
}

START_TEST(device_heap_default_provider)
{
    /* shm offers FI_HMEM but not FI_ATOMIC with it; registering the buffer
     * is what fails (-FI_ENOSYS). */
    unsetenv("FI_PROVIDER");
    run_device_heap(NULL, "ze");
}
END_TEST

START_TEST(device_heap_tcp)
{
    run_device_heap("tcp", "cuda"); /* tcp has no FI_HMEM at all */
}
END_TEST

START_TEST(device_heap_unknown_backend)
{
    run_device_heap("shm", "cpu");
}
END_TEST

START_TEST(init_rejects_missing_heap)
{
    struct ushmemi_transport_params params = {0};
    struct ushmemi_transport *t = NULL;
    ck_assert_int_eq(ops->init(&params, &t), USHMEM_ERR_INVALID_PARAM);
    ck_assert_ptr_null(t);
}
END_TEST

static Suite *ofi_suite(void)
{
    Suite *s = suite_create("ofi");
    struct {
        const char *name;
        const TTest *rma, *nbi, *fence, *amo, *latency;
    } cases[] = {
        {"tcp", rma_tcp, nbi_tcp, fence_tcp, amo_tcp, latency_tcp},
        {"shm", rma_shm, nbi_shm, fence_shm, amo_shm, latency_shm},
        {"sockets", rma_sockets, nbi_sockets, fence_sockets, amo_sockets, latency_sockets},
        {"udp", rma_udp, nbi_udp, fence_udp, amo_udp, latency_udp},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 120);
        /* _i = 0: 2 PEs, _i = 1: 4 PEs. udp (ofi_rxd in libfabric 1.17) runs
         * at 2 PEs only: with 4 PEs on 2 cores it at times never completes a
         * put, even one to the PE itself ("no completion after 30 s", 2 of 6
         * runs of this case), which the other providers never do. */
        int loops = strcmp(cases[i].name, "udp") == 0 ? 1 : 2;
        tcase_add_loop_test(tc, cases[i].rma, 0, loops);
        tcase_add_loop_test(tc, cases[i].nbi, 0, loops);
        tcase_add_loop_test(tc, cases[i].fence, 0, loops);
        tcase_add_loop_test(tc, cases[i].amo, 0, loops);
        tcase_add_test(tc, cases[i].latency);
        suite_add_tcase(s, tc);
    }
    TCase *addr = tcase_create("address");
    tcase_set_timeout(addr, 60);
    tcase_add_test(addr, address_one_host_tcp);
    tcase_add_test(addr, address_one_host_ignores_iface_sockets);
    tcase_add_test(addr, address_hosts_apart_iface_name_tcp);
    tcase_add_test(addr, address_hosts_apart_iface_address_sockets);
    tcase_add_test(addr, address_hosts_apart_default_tcp);
    tcase_add_test(addr, address_unknown_iface_fails_tcp);
    tcase_add_test(addr, address_shm_random_name);
    suite_add_tcase(s, addr);
    TCase *dev = tcase_create("device_heap");
    tcase_set_timeout(dev, 60);
    tcase_add_test(dev, device_heap_default_provider);
    tcase_add_test(dev, device_heap_tcp);
    tcase_add_test(dev, device_heap_unknown_backend);
    tcase_add_test(dev, init_rejects_missing_heap);
    suite_add_tcase(s, dev);
    return s;
}

#endif

int main(void)
{
#if USHMEM_HAVE_OFI
    share_probes();
    SRunner *sr = srunner_create(ofi_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
#else
    printf("SKIP: this build has no libfabric, so no ofi transport\n");
    return SKIP_CODE;
#endif
}
