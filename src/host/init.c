/* shmem_init and shmem_finalize: variables, bootstrap, device, heap, peers. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ushmem_config.h"
#include "../common/sigsave.h"
#include "../device/node_id.h"
#include "device_api.h"
#include "internal.h"
#include "sync_seg.h"
#include "watch.h"
#include "routes.h"

struct ushmemi_state ushmemi_g;

static ushmem_status_t oob_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    return ushmemi_bootstrap_allgather(ctx, mine, all, len);
}

static ushmem_status_t oob_barrier(void *ctx) { return ushmemi_bootstrap_barrier(ctx); }

static ushmem_status_t parse_fd_method(const char *text, enum ushmemi_fd_method *method_p)
{
    static const struct {
        const char *name;
        enum ushmemi_fd_method method;
    } names[] = {{"auto", USHMEMI_FD_AUTO}, {"pidfd", USHMEMI_FD_PIDFD}, {"socket", USHMEMI_FD_SOCKET}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(text, names[i].name) == 0) {
            *method_p = names[i].method;
            return USHMEM_OK;
        }
    }
    ushmemi_error("USHMEM_FD_PASSING=%s is not one of auto, pidfd, socket", text);
    return USHMEM_ERR_INVALID_VALUE;
}

/* The largest SHMEM_SYMMETRIC_SIZE. The heap, reserved area included, is
 * addressed by the offset part of a symmetric offset (60 bits), and the
 * device backends add page rounding and alignment slack to its size; half
 * the offset range keeps all of that from wrapping, and is still far more
 * memory than any machine has. */
static size_t symmetric_size_max(void)
{
    uint64_t limit = USHMEMI_SEG_OFFSET_MASK / 2;
    if (limit > SIZE_MAX / 2)
        limit = SIZE_MAX / 2;
    return (size_t)limit - USHMEMI_RESERVED_SIZE;
}

/* Loads the variables and sets the log level. Errors are logged here; the
 * caller ends the job once the bootstrap can do so on every PE. */
static ushmem_status_t load_settings(void)
{
    ushmem_status_t status = ushmemi_vars_load();
    int level = ushmemi_log_parse_level(ushmemi_settings.log_level);
    if (level < 0) {
        ushmemi_error("USHMEM_LOG_LEVEL=%s is not one of error, warn, info, debug, trace",
                      ushmemi_settings.log_level);
        status = USHMEM_ERR_INVALID_VALUE;
    } else {
        ushmemi_log_level = level;
    }
    if (ushmemi_settings.debug && ushmemi_log_level < USHMEMI_LOG_DEBUG)
        ushmemi_log_level = USHMEMI_LOG_DEBUG;
    /* The value as the user typed it ("16777214T"), then what it came to. */
    const char *size_text = getenv("SHMEM_SYMMETRIC_SIZE");
    if (ushmemi_settings.symmetric_size < 4096) {
        ushmemi_error("SHMEM_SYMMETRIC_SIZE=%s is too small (%zu bytes; at least 4096 bytes)",
                      size_text != NULL ? size_text : "", ushmemi_settings.symmetric_size);
        status = USHMEM_ERR_INVALID_VALUE;
    } else if (ushmemi_settings.symmetric_size > symmetric_size_max()) {
        ushmemi_error("SHMEM_SYMMETRIC_SIZE=%s is too large (%zu bytes; at most %zu bytes)",
                      size_text != NULL ? size_text : "", ushmemi_settings.symmetric_size,
                      symmetric_size_max());
        status = USHMEM_ERR_INVALID_VALUE;
    }
    if (ushmemi_settings.bootstrap_timeout < 1 ||
        ushmemi_settings.bootstrap_timeout > USHMEMI_BOOTSTRAP_TIMEOUT_MAX) {
        ushmemi_error("USHMEM_BOOTSTRAP_TIMEOUT=%ld must be between 1 and %d seconds",
                      ushmemi_settings.bootstrap_timeout, USHMEMI_BOOTSTRAP_TIMEOUT_MAX);
        status = USHMEM_ERR_INVALID_VALUE;
    }
    if (ushmemi_settings.hang_check < 0 || ushmemi_settings.hang_check > 1000000) {
        ushmemi_error("USHMEM_HANG_CHECK=%ld must be between 0 (never) and 1000000 seconds",
                      ushmemi_settings.hang_check);
        status = USHMEM_ERR_INVALID_VALUE;
    }
    return status;
}

/* Places this PE on its node. USHMEM_SIM_NODES (testing) splits a job on
 * one machine into n nodes of consecutive ranks, node k holding the ranks
 * from ceil(k * size / n) up to the next node's first, so that it takes the
 * roads of a job across machines: the node-local rank and size pick the
 * device and the peers to map, and the node identity that every layer
 * compares (ushmemi_node_simulate) keeps the simulated nodes apart. Helper
 * threads keep the launcher's numbers, which say where the PEs are bound. */
static ushmem_status_t place_on_node(const struct ushmemi_bootstrap *bs)
{
    long n = ushmemi_settings.sim_nodes;

    ushmemi_g.host_local_rank = ushmemi_g.local_rank = bs->local_rank;
    ushmemi_g.host_local_size = ushmemi_g.local_size = bs->local_size;
    ushmemi_g.node = bs->node_id;
    ushmemi_node_simulate(-1);
    if (n == 1)
        return USHMEM_OK;
    if (n < 1 || n > bs->size) {
        ushmemi_error("USHMEM_SIM_NODES=%ld must be between 1 and the number of PEs (%d)", n,
                      bs->size);
        return USHMEM_ERR_INVALID_VALUE;
    }
    if (bs->local_size != bs->size) {
        ushmemi_error("USHMEM_SIM_NODES=%ld splits a job on one machine, but only %d of the "
                      "job's %d PEs run on this one", n, bs->local_size, bs->size);
        return USHMEM_ERR_INVALID_VALUE;
    }
    int node = (int)((long)bs->rank * n / bs->size);
    int first = (int)(((long)node * bs->size + n - 1) / n);
    int next = (int)(((long)(node + 1) * bs->size + n - 1) / n);
    ushmemi_g.local_rank = bs->rank - first;
    ushmemi_g.local_size = next - first;
    ushmemi_g.node = node;
    ushmemi_node_simulate(node);
    ushmemi_debug("USHMEM_SIM_NODES=%ld: simulated node %d holds PEs %d to %d; this PE is its "
                  "local rank %d", n, node, first, next - 1, ushmemi_g.local_rank);
    return USHMEM_OK;
}

static void print_banner(void)
{
    if (ushmemi_g.my_pe != 0)
        return;
    if (ushmemi_settings.version || ushmemi_settings.info)
        printf("ushmem %s (OpenSHMEM %d.%d), backend %s, %d PEs\n", USHMEM_VERSION_STRING,
               SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, ushmemi_g.dev_ops->name, ushmemi_g.n_pes);
    if (ushmemi_settings.info) {
        printf("Variables:\n");
        ushmemi_vars_print(stdout);
    }
    fflush(stdout);
}

/* OpenSHMEM finalizes a program that ends without calling shmem_finalize, as
 * older ones using start_pes do. Finalize is collective: here a PE that gets
 * to exit first waits for its peers in the closing barrier, and if a peer
 * dies instead the launcher ends the job. Only exit status 0 finalizes, so
 * glibc's on_exit rather than atexit, which cannot see the status: a PE that
 * exits non-zero must end the job at once (the launcher does so), not wait
 * for its peers, nor meet them in a barrier of theirs as if it were its own.
 * shmem_global_exit, a fatal error and a signal leave through _exit or the
 * kernel and run no exit handler. */
static pid_t exit_finalize_pid; /* a child forked by the program is not a PE */
static bool exiting;             /* the finalize at exit is running */

/* The bootstrap outlives shmem_finalize, so that the program may initialise
 * again (OpenSHMEM 1.6): a PMIx client that finalized is gone for the
 * server, and a fence with a peer that already re-initialised fails. It is
 * closed at exit instead, once the library is down. */
static bool bootstrap_kept;

static void bootstrap_at_exit(void)
{
    if (bootstrap_kept && !ushmemi_g.initialized) {
        ushmemi_bootstrap_finalize(&ushmemi_g.bs);
        bootstrap_kept = false;
    }
}

static void finalize_at_exit(int exit_status, void *arg)
{
    (void)arg;
    if (exit_status != 0 || !ushmemi_g.initialized || getpid() != exit_finalize_pid)
        return;
    ushmemi_debug("exit status 0 without shmem_finalize: finalizing now");
    ushmemi_g.init_count = 1;
    exiting = true;
    shmem_finalize();
}

static void register_exit_finalize(void)
{
    static int registered; /* init runs once per program, but be sure */
    if (registered)
        return;
#ifdef __GLIBC__
    exit_finalize_pid = getpid();
    if (on_exit(finalize_at_exit, NULL) != 0)
        ushmemi_warn("cannot register the finalize at exit; a program must call shmem_finalize");
    else
        registered = 1;
#else
    /* Without on_exit the status is unknown: the program must finalize, and
     * the launcher reports a PE that exits 0 without it. */
    (void)finalize_at_exit;
    (void)exit_finalize_pid;
#endif
}

/* The lowest address that can be mapped (vm.mmap_min_addr), below which a
 * private buffer is refused; a page when it cannot be read. */
static uintptr_t lowest_mappable(void)
{
    unsigned long value = 4096;
    FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "r");
    if (f != NULL) {
        if (fscanf(f, "%lu", &value) != 1)
            value = 4096;
        fclose(f);
    }
    return value > 0 ? (uintptr_t)value : 1; /* NULL is never a buffer */
}

/* Ends the job: before the bootstrap is up this PE just exits, since every
 * PE of the job sees the same error. */
_Noreturn static void init_failed(const char *what, ushmem_status_t status)
{
    ushmemi_error("shmem_init failed: %s (%s)", what, ushmemi_status_name(status));
    ushmemi_bootstrap_abort(&ushmemi_g.bs, 1, "shmem_init failed");
}

/* ushmemx_init_uniqueid's arguments: the unique-id bootstrap instead of
 * PMIx. */
struct uid_request {
    int rank, npes;
    const ushmemx_uniqueid_t *uid;
};

static const char uid_call[] = "ushmemx_init_uniqueid";

/* Brings up the unique-id bootstrap, or keeps the one that outlived the last
 * finalize when it came from the same id (the same PEs initialise again); a
 * bootstrap of another kind or id is closed first. Messages name the PE. */
static ushmem_status_t uid_bootstrap(const struct uid_request *req)
{
    struct ushmemi_bootstrap *bs = &ushmemi_g.bs;
    if (bootstrap_kept && !ushmemi_bootstrap_uid_same(bs, req->uid)) {
        ushmemi_bootstrap_finalize(bs);
        bootstrap_kept = false;
    }
    if (!bootstrap_kept)
        return ushmemi_bootstrap_uid_init(bs, uid_call, req->rank, req->npes, req->uid);
    if (bs->rank != req->rank || bs->size != req->npes) {
        ushmemi_error("%s: PE %d passed rank %d and npes %d, but the job it started from this "
                      "id had it as PE %d of %d", uid_call, bs->rank, req->rank, req->npes,
                      bs->rank, bs->size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    return USHMEM_OK;
}

/* Returns 0; or, only for a unique-id start whose bootstrap failed, -1
 * after a message. Later failures end the job. */
static int do_init(int requested, const struct uid_request *uid)
{
    /* OpenSHMEM 1.6: every init is matched by a finalize; only the first
     * initialises (the thread level it chose stays) and the last finalizes. */
    if (ushmemi_g.initialized) {
        ushmemi_g.init_count++;
        return 0;
    }
    /* 1.6: a program may initialise again after its last finalize. */
    ushmemi_g.finalized = 0;
    ushmemi_barrier_reset();
    ushmemi_mbox_reset();
    /* What init starts (PMIx, the GPU driver and runtime, NVML, libfabric)
     * may install signal handlers; the program keeps its own dispositions. */
    static struct ushmemi_sigsave program_signals; /* large for a stack */
    ushmemi_sigsave(&program_signals);

    /* The bootstrap first, so that every message below names the PE; its
     * own debug lines honour SHMEM_DEBUG through a quick look-up. */
    if (getenv("SHMEM_DEBUG") && strcmp(getenv("SHMEM_DEBUG"), "0") != 0)
        ushmemi_log_level = USHMEMI_LOG_DEBUG;
    ushmem_status_t status;
    if (uid != NULL) {
        status = uid_bootstrap(uid);
        if (status != USHMEM_OK)
            return -1; /* said where it failed; the other PEs fail too */
    } else {
        status = bootstrap_kept ? USHMEM_OK : ushmemi_bootstrap_init(&ushmemi_g.bs);
        if (status != USHMEM_OK) {
            ushmemi_error("shmem_init failed: %s", ushmemi_status_string(status));
            _exit(1);
        }
    }
    ushmemi_g.my_pe = ushmemi_g.bs.rank;
    ushmemi_g.n_pes = ushmemi_g.bs.size;
    ushmemi_log_set_pe(ushmemi_g.my_pe);
    ushmem_status_t settings_status = load_settings();
    if (settings_status != USHMEM_OK)
        init_failed("a variable has a malformed value (see above)", settings_status);

    enum ushmemi_fd_method fd_method;
    status = parse_fd_method(ushmemi_settings.fd_passing, &fd_method);
    if (status != USHMEM_OK)
        init_failed("bad USHMEM_FD_PASSING", status);
    status = place_on_node(&ushmemi_g.bs);
    if (status != USHMEM_OK)
        init_failed("bad USHMEM_SIM_NODES", status);

    status = ushmemi_device_open(ushmemi_settings.backend, ushmemi_g.local_rank,
                                 ushmemi_g.local_size, &ushmemi_g.dev_ops, &ushmemi_g.dev);
    if (status != USHMEM_OK)
        init_failed("no device backend could be opened", status);

    size_t heap_size = USHMEMI_RESERVED_SIZE + ushmemi_settings.symmetric_size;
    void *heap;
    /* The heap starts at its start size in front of the address space it
     * may grow into (heap_grow.c). */
    size_t heap_reserve = ushmemi_heap_reserve_for(heap_size, &ushmemi_g.heap_max_from);
    status = heap_reserve > heap_size
                 ? ushmemi_g.dev_ops->heap_reserve(ushmemi_g.dev, heap_size, heap_reserve, &heap)
                 : ushmemi_g.dev_ops->heap_alloc(ushmemi_g.dev, heap_size, &heap);
    if (status != USHMEM_OK)
        init_failed(heap_reserve > heap_size
                        ? "cannot allocate the symmetric heap (SHMEM_SYMMETRIC_SIZE) in front of "
                          "the address space it may grow into (USHMEM_HEAP_MAX)"
                        : "cannot allocate the symmetric heap (SHMEM_SYMMETRIC_SIZE)",
                    status);
    ushmemi_g.heap_base = heap;
    ushmemi_g.heap_size = heap_size;
    ushmemi_g.heap_start = heap_size;
    ushmemi_g.heap_reserve = heap_reserve;
    ushmemi_g.reserved = heap;
    ushmemi_g.user_base = ushmemi_g.heap_base + USHMEMI_RESERVED_SIZE;
    ushmemi_g.user_size = ushmemi_settings.symmetric_size;
    ushmemi_g.addr_min = lowest_mappable();

    struct ushmemi_ptr_attr attr;
    status = ushmemi_g.dev_ops->pointer_query(ushmemi_g.dev, heap, &attr);
    if (status != USHMEM_OK)
        init_failed("pointer query of the heap failed", status);
    ushmemi_g.heap_host_accessible = attr.host_accessible;
    ushmemi_g.heap_is_device = attr.kind == USHMEMI_MEM_DEVICE;
    ushmemi_g.heap_host_backed = attr.host_backed;

    ushmemi_g.peers = calloc((size_t)ushmemi_g.n_pes, sizeof(*ushmemi_g.peers));
    if (ushmemi_g.peers == NULL)
        init_failed("out of memory for the peer table", USHMEM_ERR_NO_MEMORY);

    static struct ushmemi_oob oob; /* the fabric keeps a pointer to it */
    oob = (struct ushmemi_oob){
        .rank = ushmemi_g.bs.rank,
        .size = ushmemi_g.bs.size,
        .local_rank = ushmemi_g.local_rank,
        .local_size = ushmemi_g.local_size,
        .host_local_rank = ushmemi_g.host_local_rank,
        .host_local_size = ushmemi_g.host_local_size,
        .job_id = ushmemi_g.bs.job_id,
        .ctx = &ushmemi_g.bs,
        .allgather = oob_allgather,
        .barrier = oob_barrier,
    };
    struct ushmemi_ipc_config ipc_config = {
        .fd_method = fd_method,
        .timeout_s = (int)ushmemi_settings.bootstrap_timeout,
    };
    if (ushmemi_settings.ipc) {
        status = ushmemi_ipc_connect(&oob, ushmemi_g.dev_ops, ushmemi_g.dev, heap, heap_size,
                                     &ipc_config, ushmemi_g.peers);
        if (status != USHMEM_OK)
            init_failed("cannot map the local peers' heaps", status);
    } else {
        for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
            ushmemi_g.peers[pe].map_why = "USHMEM_IPC=0: not mapped";
        ushmemi_g.peers[ushmemi_g.my_pe].base = heap;
        ushmemi_g.peers[ushmemi_g.my_pe].map_why = "this PE";
    }

    if (ushmemi_settings.symmetric_data) {
        status = ushmemi_static_share(&oob, &ipc_config, ushmemi_settings.ipc);
        if (status != USHMEM_OK)
            init_failed("cannot share the data segment (USHMEM_SYMMETRIC_DATA=0 avoids it)",
                        status);
    }

    if (ushmemi_settings.ipc) {
        status = ushmemi_sync_seg_open(&oob, &ipc_config);
        if (status != USHMEM_OK)
            init_failed("cannot share the host sync segment", status);
    }

    status = ushmemi_idle_decide();
    if (status != USHMEM_OK)
        init_failed("cannot decide how this PE waits (see above)", status);

    status = ushmemi_routes_build(&oob);
    if (status != USHMEM_OK)
        init_failed("no route for some operation class to some PE (see above)", status);

    status = ushmemi_heap_init(ushmemi_g.user_base, ushmemi_g.user_size);
    if (status != USHMEM_OK)
        init_failed("cannot set up the heap allocator", status);

    ushmemi_teams_init();
    ushmemi_g.thread_level = requested < SHMEM_THREAD_SINGLE ? SHMEM_THREAD_SINGLE
                             : requested > SHMEM_THREAD_MULTIPLE ? SHMEM_THREAD_MULTIPLE
                                                                 : requested;
    ushmemi_g.initialized = 1;
    ushmemi_g.init_count = 1;
    register_exit_finalize();
    status = ushmemi_device_api_init();
    if (status != USHMEM_OK)
        init_failed("cannot set up the device API (see above)", status);
    /* The blocks allocated above are the library's, like the reserved
     * area before them: the user's part of the heap starts after them, at
     * the boundary where the allocator places its next block (the bytes up
     * to it hold no block of anyone's). The allocator is deterministic, so
     * this is the same offset on every PE. */
    size_t own_blocks = (ushmemi_heap_prefix_in_use() + USHMEMI_HEAP_BLOCK_ALIGN - 1) &
                        ~(USHMEMI_HEAP_BLOCK_ALIGN - 1);
    ushmemi_g.user_base += own_blocks;
    ushmemi_g.user_size -= own_blocks;
    print_banner();
    ushmemi_barrier_world();
    char changed[256] = "";
    if (ushmemi_sigrestore(&program_signals, changed, sizeof(changed)) > 0)
        ushmemi_debug("shmem_init: what it started installed handlers for %s; the program's own "
                      "dispositions are back", changed);
    return 0;
}

USHMEMI_API void shmem_init(void) { (void)do_init(SHMEM_THREAD_SINGLE, NULL); }

USHMEMI_API int ushmemx_init_uniqueid(int rank, int npes, const ushmemx_uniqueid_t *uid)
{
    if (getenv("SHMEM_DEBUG") && strcmp(getenv("SHMEM_DEBUG"), "0") != 0)
        ushmemi_log_level = USHMEMI_LOG_DEBUG;
    if (!ushmemi_g.initialized && rank >= 0 && rank < npes)
        ushmemi_log_set_pe(rank);
    if (ushmemi_bootstrap_uid_check(uid_call, rank, npes, uid) != USHMEM_OK)
        return -1;
    if (ushmemi_g.initialized) {
        /* A nested init, counted as shmem_init's, of the same job. */
        if (!ushmemi_bootstrap_uid_same(&ushmemi_g.bs, uid) || rank != ushmemi_g.my_pe ||
            npes != ushmemi_g.n_pes) {
            ushmemi_error("%s: PE %d is initialized already, as PE %d of %d; this call (rank "
                          "%d, npes %d, %s id) is not a nested init of that job: call "
                          "shmem_finalize first", uid_call, ushmemi_g.my_pe, ushmemi_g.my_pe,
                          ushmemi_g.n_pes, rank, npes,
                          ushmemi_bootstrap_uid_same(&ushmemi_g.bs, uid) ? "its" : "another");
            return -1;
        }
        ushmemi_g.init_count++;
        return 0;
    }
    struct uid_request req = {.rank = rank, .npes = npes, .uid = uid};
    return do_init(SHMEM_THREAD_SINGLE, &req);
}

USHMEMI_API int shmem_init_thread(int requested, int *provided)
{
    /* Every level is provided: the data path keeps no per-call shared state
     * beyond atomics, and the allocator is collective. */
    (void)do_init(requested, NULL);
    if (provided)
        *provided = ushmemi_g.thread_level;
    return 0;
}

USHMEMI_API void shmem_query_thread(int *provided)
{
    ushmemi_check_init("shmem_query_thread");
    if (provided)
        *provided = ushmemi_g.thread_level;
}

USHMEMI_API void start_pes(int npes)
{
    (void)npes;
    shmem_init();
}

USHMEMI_API void shmem_query_initialized(int *initialized)
{
    if (initialized)
        *initialized = ushmemi_g.initialized;
}

USHMEMI_API void shmem_finalize(void)
{
    if (!ushmemi_g.initialized)
        return;
    if (ushmemi_g.init_count > 1) {
        /* Not the last: a barrier, as the specification asks, and nothing freed. */
        ushmemi_g.init_count--;
        shmem_barrier_all();
        return;
    }
    ushmemi_g.init_count = 0;
    shmem_quiet();
    ushmemi_watch_finalizing(exiting); /* for peers that wait long (watch.c) */
    ushmemi_barrier_world();
    ushmemi_watch_left();
    ushmemi_device_api_fini();
    ushmemi_ipc_disconnect(ushmemi_g.dev_ops, ushmemi_g.dev, ushmemi_g.peers, ushmemi_g.n_pes,
                           ushmemi_g.my_pe, ushmemi_g.heap_size);
    ushmemi_static_unshare();
    ushmemi_sync_seg_close(ushmemi_g.n_pes, ushmemi_g.my_pe);
    /* Nobody may touch our heap once we free it. */
    if (ushmemi_bootstrap_barrier(&ushmemi_g.bs) != USHMEM_OK)
        ushmemi_warn("shmem_finalize: the closing barrier failed; freeing the heap anyway");
    ushmemi_heap_fini();
    ushmemi_ctx_fini();
    ushmemi_teams_fini();
    ushmemi_routes_close();
    ushmemi_g.dev_ops->heap_free(ushmemi_g.dev, ushmemi_g.heap_base, ushmemi_g.heap_size);
    ushmemi_g.dev_ops->close(ushmemi_g.dev);
    free(ushmemi_g.peers);
    ushmemi_g.peers = NULL;
    ushmemi_g.heap_base = NULL;
    ushmemi_g.user_base = NULL;
    ushmemi_g.user_size = 0;
    ushmemi_g.initialized = 0;
    ushmemi_g.finalized = 1;
    if (exiting) {
        ushmemi_bootstrap_finalize(&ushmemi_g.bs);
    } else if (!bootstrap_kept) {
        static bool registered;
        if (!registered && atexit(bootstrap_at_exit) == 0)
            registered = true;
        if (registered)
            bootstrap_kept = true;
        else
            ushmemi_bootstrap_finalize(&ushmemi_g.bs);
    }
}

USHMEMI_API void shmem_global_exit(int status)
{
    ushmemi_device_api_fault_report();
    fflush(stdout);
    fflush(stderr);
    ushmemi_bootstrap_abort(&ushmemi_g.bs, status, "shmem_global_exit");
}
