/* The heap grows: allocations past SHMEM_SYMMETRIC_SIZE, in steps, each
 * followed by a put, a get and an atomic into the newest block from every PE
 * to every PE, with the bytes checked; the older blocks keep their bytes.
 *
 * usage: mpe_heap_grow [STEP [TOTAL [CHECK]]]   sizes with K, M, G suffixes
 *   STEP   bytes per allocation (default 1G)
 *   TOTAL  bytes allocated in all (default 64G)
 *   CHECK  bytes of each peer's newest block read back and checked, at its
 *          end (default: the whole block)
 *        mpe_heap_grow --refuse PE MAX STEP
 *   PE runs with USHMEM_HEAP_MAX=MAX, the others as they are: the first
 *   allocation that PE's heap cannot grow for returns NULL on every PE, and
 *   the heap stays usable (an allocation that fits still works, with bytes
 *   checked). Exits 0 when all of it held on every PE.
 *        mpe_heap_grow --fault STEP
 *   Run with USHMEMI_FAULT_GROW_MAP=PE:PEER:GROWTH (src/host/heap_grow.c):
 *   PE fails to map PEER's new chunk at that growth, after every PE grew its
 *   own. Steps as --refuse (at most 16) until that allocation returns NULL
 *   on every PE; then the heap is still usable, and two more growths,
 *   without the fault, succeed, with bytes checked in every block old and
 *   new.
 * In both, an allocation that returns NULL must leave each PE's heap
 * memory as it found it (cpu backend: the memfd bytes mapped and held),
 * every PE having undone what it grew and mapped.
 *
 * With MPE_HEAP_GROW_DEVICE=1 (cpu backend only, where device code is host
 * threads) the same put, get and atomic also go through the device API
 * (include/ushmem/device.h): directly, or through the proxy thread with
 * USHMEM_DEVICE_ROUTE=proxy or USHMEM_IPC=0.
 *
 * Only the user API: the heap may be device memory (cuda), so every byte
 * moves through shmem_putmem and shmem_getmem. */
#include <dirent.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ushmem/device.h>

#include "mpe_check.h"

static int use_device; /* MPE_HEAP_GROW_DEVICE=1 */

static size_t parse_size(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    size_t mult = 1;
    switch (*end) {
    case 'K': case 'k': mult = (size_t)1 << 10; break;
    case 'M': case 'm': mult = (size_t)1 << 20; break;
    case 'G': case 'g': mult = (size_t)1 << 30; break;
    case 'T': case 't': mult = (size_t)1 << 40; break;
    case '\0': break;
    default:
        fprintf(stderr, "mpe_heap_grow: '%s' is not a size\n", text);
        exit(2);
    }
    if (v <= 0) {
        fprintf(stderr, "mpe_heap_grow: '%s' is not a positive size\n", text);
        exit(2);
    }
    return (size_t)(v * (double)mult);
}

/* The byte that PE `pe` writes at offset i of its block `step`. */
static unsigned char pattern(int pe, int step, size_t i)
{
    return (unsigned char)(i * 131u + (size_t)pe * 17u + (size_t)step * 5u + (i >> 12));
}

/* A buffer of private memory, in pieces of at most PIECE bytes, so a block
 * of gigabytes never needs as much host memory at once. */
#define PIECE ((size_t)64 << 20)

/* Fills this PE's own block with its pattern, through the RMA calls. */
static void fill_own(unsigned char *block, size_t len, int step, unsigned char *buf)
{
    int me = shmem_my_pe();
    for (size_t done = 0; done < len; done += PIECE) {
        size_t n = len - done < PIECE ? len - done : PIECE;
        for (size_t i = 0; i < n; i++)
            buf[i] = pattern(me, step, done + i);
        shmem_putmem(block + done, buf, n, me);
    }
}

/* Reads [from, len) of pe's block and checks it against pe's pattern, or
 * against `mark` for the slice [mark_at, mark_at + mark_len). */
static void check_range(const unsigned char *block, size_t from, size_t len, int pe, int step,
                        unsigned char *buf, const char *what)
{
    for (size_t done = from; done < len; done += PIECE) {
        size_t n = len - done < PIECE ? len - done : PIECE;
        shmem_getmem(buf, block + done, n, pe);
        for (size_t i = 0; i < n; i++) {
            unsigned char want = pattern(pe, step, done + i);
            MPE_CHECK(buf[i] == want, "%s: byte %zu of PE %d's block %d is 0x%02x, not 0x%02x",
                      what, done + i, pe, step, buf[i], want);
        }
    }
}

/* One allocation of `len` bytes, by the call that step picks. */
static void *allocate(int step, size_t len, const char **call_p)
{
    switch (step % 5) {
    case 0: *call_p = "shmem_malloc"; return shmem_malloc(len);
    case 1: *call_p = "shmem_calloc"; return shmem_calloc(len / 8, 8);
    case 2: *call_p = "shmem_align"; return shmem_align((size_t)1 << 21, len);
    case 3: *call_p = "shmem_malloc_with_hints";
            return shmem_malloc_with_hints(len, SHMEM_MALLOC_ATOMICS_REMOTE);
    default: {
        *call_p = "shmem_realloc";
        void *small = shmem_malloc(4096);
        MPE_CHECK(small != NULL, "shmem_malloc(4096) before a realloc returned NULL");
        return shmem_realloc(small, len);
    }
    }
}

/* The long that PE pe's pattern leaves at offset `at` of its block `step`. */
static long pattern_long(int pe, int step, size_t at)
{
    unsigned char bytes[sizeof(long)];
    long v;
    for (size_t i = 0; i < sizeof(long); i++)
        bytes[i] = pattern(pe, step, at + i);
    memcpy(&v, bytes, sizeof(v));
    return v;
}

/* The same through the device API: a long into a slot per source before
 * the host's slots, and fetch-adds on the word before the host's counter. */
static void exercise_device(unsigned char *block, size_t len, int step)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *slots = (long *)(block + len - 64 * (size_t)(npes + 1) - 8 * (size_t)npes);
    long *counter = (long *)(block + len - 2 * sizeof(long));
    for (int k = 0; k < npes; k++) {
        int pe = (me + k) % npes;
        long v = (long)me * 1000003L + step;
        ushmem_putmem(&slots[me], &v, sizeof(v), pe);
        (void)ushmem_long_atomic_fetch_add(counter, 2L * (me + 1), pe);
    }
    ushmem_quiet();
    shmem_barrier_all();
    for (int k = 0; k < npes; k++) {
        int pe = (me + k) % npes;
        long back = 0;
        ushmem_getmem(&back, &slots[me], sizeof(back), pe);
        MPE_CHECK(back == (long)me * 1000003L + step,
                  "device put then get of PE %d's block %d: %ld", pe, step, back);
        long got = ushmem_long_atomic_fetch(counter, pe);
        long want = pattern_long(pe, step, len - 2 * sizeof(long)) + (long)npes * (npes + 1);
        MPE_CHECK(got == want, "the device counter of PE %d's block %d is %ld, not %ld", pe,
                  step, got, want);
    }
    shmem_barrier_all();
}

/* Every PE puts a slice into the end of every PE's newest block, gets it
 * back, and adds to a counter there; then each checks its own block. The
 * block's last `check` bytes are compared with the owner's pattern first. */
static void exercise(unsigned char *block, size_t len, size_t check, int step, unsigned char *buf)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    size_t from = check < len ? len - check : 0;

    fill_own(block, len, step, buf);
    shmem_barrier_all();
    for (int k = 0; k < npes; k++)
        check_range(block, from, len, (me + k) % npes, step, buf, "get");
    shmem_barrier_all();

    /* The last 64 bytes of every block: PE s writes 8 bytes at 8 * (s % 4)
     * of a slot per source near the end; the counter is the last word. */
    size_t slot = 64, slots_at = len - slot * (size_t)(npes + 1);
    long *counter = (long *)(block + len - sizeof(long));
    for (int k = 0; k < npes; k++) {
        int pe = (me + k) % npes;
        unsigned char mine[64];
        for (size_t i = 0; i < sizeof(mine); i++)
            mine[i] = (unsigned char)(0xa5 ^ (size_t)me ^ (size_t)step * 3u ^ i);
        shmem_putmem(block + slots_at + slot * (size_t)me, mine, sizeof(mine), pe);
        shmem_long_atomic_add(counter, me + 1, pe);
    }
    shmem_barrier_all();
    for (int k = 0; k < npes; k++) {
        int pe = (me + k) % npes;
        unsigned char back[64];
        shmem_getmem(back, block + slots_at + slot * (size_t)me, sizeof(back), pe);
        for (size_t i = 0; i < sizeof(back); i++)
            MPE_CHECK(back[i] == (unsigned char)(0xa5 ^ (size_t)me ^ (size_t)step * 3u ^ i),
                      "put then get of PE %d's block %d: byte %zu is 0x%02x", pe, step, i,
                      back[i]);
        long got = shmem_long_atomic_fetch(counter, pe);
        long want = pattern_long(pe, step, len - sizeof(long)) + (long)npes * (npes + 1) / 2;
        MPE_CHECK(got == want, "the counter of PE %d's block %d is %ld, not %ld", pe, step, got,
                  want);
    }
    shmem_barrier_all();
    if (use_device)
        exercise_device(block, len, step);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_steps(size_t step_len, size_t total, size_t check)
{
    int me = shmem_my_pe();
    int nsteps = (int)(total / step_len);
    unsigned char **blocks = calloc((size_t)nsteps, sizeof(*blocks));
    unsigned char *buf = malloc(PIECE);
    MPE_CHECK(blocks != NULL && buf != NULL, "out of host memory");
    for (int s = 0; s < nsteps; s++) {
        const char *call;
        double t0 = now();
        blocks[s] = allocate(s, step_len, &call);
        double t = now() - t0;
        MPE_CHECK(blocks[s] != NULL, "%s of %zu bytes (step %d, %zu bytes allocated before) "
                  "returned NULL", call, step_len, s, (size_t)s * step_len);
        if (s % 5 == 1) {
            /* shmem_calloc: zeroes, also in memory the heap just grew into. */
            unsigned char probe[256];
            shmem_getmem(probe, blocks[s] + step_len - sizeof(probe), sizeof(probe), me);
            for (size_t i = 0; i < sizeof(probe); i++)
                MPE_CHECK(probe[i] == 0, "shmem_calloc's block %d: byte %zu is 0x%02x", s,
                          step_len - sizeof(probe) + i, probe[i]);
        }
        exercise(blocks[s], step_len, check, s, buf);
        if (me == 0)
            printf("step %d: %s(%zu) in %.3f ms, %zu bytes allocated\n", s, call, step_len,
                   t * 1e3, (size_t)(s + 1) * step_len);
    }
    /* The older blocks kept their bytes while the heap grew behind them (a
     * slice at each block's start; its end holds the slots and counter). */
    size_t head = check < step_len / 2 ? check : step_len / 2;
    for (int s = 0; s < nsteps; s++)
        for (int k = 0; k < shmem_n_pes(); k++)
            check_range(blocks[s], 0, head, (me + k) % shmem_n_pes(), s, buf, "after growth");
    shmem_barrier_all();
    for (int s = nsteps - 1; s >= 0; s--)
        shmem_free(blocks[s]);
    /* Freed, the grown heap holds the whole total again in one block. */
    unsigned char *again = shmem_malloc(total);
    MPE_CHECK(again != NULL, "shmem_malloc(%zu) after freeing everything returned NULL", total);
    exercise(again, total < PIECE ? total : PIECE, check, nsteps, buf);
    shmem_free(again);
    free(buf);
    free(blocks);
    if (me == 0)
        printf("PE 0: %d steps of %zu bytes checked on %d PEs\n", nsteps, step_len,
               shmem_n_pes());
    return 0;
}

/* The refusing PE's USHMEM_HEAP_MAX, set before shmem_init from the
 * launcher's rank (PMIx's, which oshrun and mpirun both give). */
static int refuse_setup(int pe, const char *max)
{
    const char *rank = getenv("PMIX_RANK");
    if (rank == NULL) {
        fprintf(stderr, "mpe_heap_grow --refuse: no PMIX_RANK; run it under oshrun or mpirun\n");
        exit(2);
    }
    if (atoi(rank) == pe && setenv("USHMEM_HEAP_MAX", max, 1) != 0) {
        perror("setenv");
        exit(2);
    }
    return atoi(rank);
}

#define MAX_STEPS 256

/* On the cpu backend, whose heaps are memfds named "ushmem-heap": the bytes
 * of them this process maps (its own heap and its local peers') and the
 * size of the files it holds open (its own heap's). A growth that returned
 * NULL must leave both as they were: every PE undid what it grew and
 * mapped. Zeros elsewhere. */
struct footprint {
    size_t mapped, files;
};

static struct footprint heap_footprint(void)
{
    struct footprint fp = {0, 0};
    char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");
    MPE_CHECK(maps != NULL, "cannot read /proc/self/maps");
    while (fgets(line, sizeof(line), maps) != NULL) {
        unsigned long from, to;
        if (strstr(line, "/memfd:ushmem-heap") != NULL && sscanf(line, "%lx-%lx", &from, &to) == 2)
            fp.mapped += to - from;
    }
    fclose(maps);
    DIR *fds = opendir("/proc/self/fd");
    MPE_CHECK(fds != NULL, "cannot list /proc/self/fd");
    for (struct dirent *e; (e = readdir(fds)) != NULL;) {
        char path[300];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, line, sizeof(line) - 1);
        if (n <= 0)
            continue;
        line[n] = '\0';
        if (strstr(line, "/memfd:ushmem-heap") != NULL && stat(path, &st) == 0)
            fp.files += (size_t)st.st_size;
    }
    closedir(fds);
    return fp;
}

/* Allocates blocks of step_len bytes until one returns NULL, checking that
 * every PE agrees on each answer; returns the step that returned NULL, or
 * -1 when none did in max_steps (at most MAX_STEPS). */
static int grow_until_null(unsigned char **blocks, int max_steps, size_t step_len,
                           unsigned char *buf)
{
    int me = shmem_my_pe();
    for (int s = 0; s < max_steps; s++) {
        struct footprint before = heap_footprint();
        blocks[s] = shmem_malloc(step_len);
        struct footprint after = heap_footprint();
        MPE_CHECK(blocks[s] != NULL || (after.mapped == before.mapped &&
                                        after.files == before.files),
                  "step %d returned NULL but left %zu bytes of heap memfds mapped (%zu before) "
                  "and %zu bytes in its heap's file (%zu before)", s, after.mapped,
                  before.mapped, after.files, before.files);
        /* Every PE must agree: NULL on one is NULL on all. */
        long got = blocks[s] != NULL, all = 0;
        long *flag = shmem_malloc(2 * sizeof(long));
        MPE_CHECK(flag != NULL, "a 16-byte allocation after step %d returned NULL", s);
        shmem_putmem(&flag[0], &got, sizeof(got), me);
        shmem_barrier_all();
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &flag[1], &flag[0], 1);
        shmem_getmem(&all, &flag[1], sizeof(all), me);
        shmem_free(flag);
        MPE_CHECK(all == 0 || all == shmem_n_pes(),
                  "step %d: %ld of %d PEs got a block (this PE: %s)", s, all, shmem_n_pes(),
                  got ? "yes" : "NULL");
        if (!got)
            return s;
        exercise(blocks[s], step_len, 1 << 20, s, buf);
    }
    return -1;
}

/* The heap is still usable after a growth that returned NULL: what fits in
 * it is allocated and works, and a freed block is reused without growing. */
static void check_usable(unsigned char **blocks, int refused_at, size_t step_len,
                         unsigned char *buf)
{
    unsigned char *small = shmem_malloc(1 << 20);
    MPE_CHECK(small != NULL, "a 1 MiB allocation after the refused growth returned NULL");
    exercise(small, 1 << 20, 1 << 20, 1000, buf);
    shmem_free(small);
    if (refused_at > 0) {
        shmem_free(blocks[refused_at - 1]);
        blocks[refused_at - 1] = shmem_malloc(step_len);
        MPE_CHECK(blocks[refused_at - 1] != NULL, "reallocating a freed block returned NULL");
        exercise(blocks[refused_at - 1], step_len, 1 << 20, refused_at - 1, buf);
    }
}

static int run_refuse(int refusing, size_t max, size_t step_len)
{
    int me = shmem_my_pe();
    unsigned char *buf = malloc(PIECE);
    MPE_CHECK(buf != NULL, "out of host memory");
    /* Steps grow every heap until the refusing PE's maximum stops them. */
    unsigned char *blocks[MAX_STEPS];
    int refused_at = grow_until_null(blocks, MAX_STEPS, step_len, buf);
    MPE_CHECK(refused_at >= 0, "PE %d's USHMEM_HEAP_MAX=%zu never refused a step", refusing, max);
    MPE_CHECK((size_t)refused_at * step_len <= max,
              "the heap grew to %zu bytes of blocks past PE %d's maximum of %zu",
              (size_t)refused_at * step_len, refusing, max);
    check_usable(blocks, refused_at, step_len, buf);
    for (int k = refused_at - 1; k >= 0; k--)
        shmem_free(blocks[k]);
    free(buf);
    if (me == 0)
        printf("PE 0: growth refused at step %d (%zu bytes of blocks) by PE %d, NULL on every "
               "PE; the heap stayed usable\n", refused_at, (size_t)refused_at * step_len,
               refusing);
    return 0;
}

#define FAULT_STEPS 16

static int run_fault(size_t step_len)
{
    int me = shmem_my_pe();
    const char *fault = getenv("USHMEMI_FAULT_GROW_MAP");
    unsigned char *buf = malloc(PIECE);
    MPE_CHECK(buf != NULL, "out of host memory");
    MPE_CHECK(fault != NULL, "--fault without USHMEMI_FAULT_GROW_MAP");
    /* Steps grow every heap until the fault's growth, which every PE made
     * before one failed to map a peer's chunk; the tests' growth comes
     * within FAULT_STEPS steps. */
    unsigned char *blocks[FAULT_STEPS + 2];
    int refused_at = grow_until_null(blocks, FAULT_STEPS, step_len, buf);
    MPE_CHECK(refused_at >= 0, "USHMEMI_FAULT_GROW_MAP=%s refused none of %d steps", fault,
              FAULT_STEPS);
    check_usable(blocks, refused_at, step_len, buf);
    /* Two more growths without the fault: every PE grows its own chunk and
     * maps its peers' where the failed growth had mapped and unmapped them
     * (a chunk left behind on any PE makes these fail, or their bytes). */
    for (int s = refused_at; s < refused_at + 2; s++) {
        blocks[s] = shmem_malloc(step_len);
        MPE_CHECK(blocks[s] != NULL, "step %d: shmem_malloc(%zu) after the failed growth "
                  "returned NULL", s, step_len);
        exercise(blocks[s], step_len, 1 << 20, s, buf);
    }
    /* Every block, from before the failed growth and after, kept its bytes
     * (a slice at its start; its end holds the slots and counter). */
    size_t head = step_len / 2 < ((size_t)1 << 20) ? step_len / 2 : (size_t)1 << 20;
    for (int s = 0; s < refused_at + 2; s++)
        for (int k = 0; k < shmem_n_pes(); k++)
            check_range(blocks[s], 0, head, (me + k) % shmem_n_pes(), s, buf,
                        "after the failed growth");
    shmem_barrier_all();
    for (int s = refused_at + 1; s >= 0; s--)
        shmem_free(blocks[s]);
    free(buf);
    if (me == 0)
        printf("PE 0: USHMEMI_FAULT_GROW_MAP=%s refused step %d (%zu bytes of blocks), NULL on "
               "every PE; the heap stayed usable and grew twice more\n", fault, refused_at,
               (size_t)refused_at * step_len);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dev = getenv("MPE_HEAP_GROW_DEVICE");
    use_device = dev != NULL && strcmp(dev, "1") == 0;
    if (argc > 1 && strcmp(argv[1], "--refuse") == 0) {
        if (argc != 5) {
            fprintf(stderr, "usage: mpe_heap_grow --refuse PE MAX STEP\n");
            return 2;
        }
        int refusing = atoi(argv[2]);
        refuse_setup(refusing, argv[3]);
        shmem_init();
        int rc = run_refuse(refusing, parse_size(argv[3]), parse_size(argv[4]));
        shmem_finalize();
        return rc;
    }
    if (argc > 1 && strcmp(argv[1], "--fault") == 0) {
        if (argc != 3) {
            fprintf(stderr, "usage: mpe_heap_grow --fault STEP\n");
            return 2;
        }
        shmem_init();
        int rc = run_fault(parse_size(argv[2]));
        shmem_finalize();
        return rc;
    }
    size_t step_len = argc > 1 ? parse_size(argv[1]) : (size_t)1 << 30;
    size_t total = argc > 2 ? parse_size(argv[2]) : (size_t)64 << 30;
    size_t check = argc > 3 ? parse_size(argv[3]) : step_len;
    if (step_len < 4096 || total < step_len) {
        fprintf(stderr, "mpe_heap_grow: STEP must be at least 4K and TOTAL at least STEP\n");
        return 2;
    }
    shmem_init();
    int rc = run_steps(step_len, total, check);
    shmem_finalize();
    return rc;
}
