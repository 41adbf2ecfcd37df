/* ushmem extensions to OpenSHMEM. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The road an operation class takes to a PE, decided at shmem_init (see
 * `ushmem_info --topology` and the README's "Routes" section). */
enum shmemx_route_kind {
    SHMEMX_ROUTE_NONE = 0,  /* unreachable (shmem_init would have failed) */
    SHMEMX_ROUTE_SELF,      /* the calling PE */
    SHMEMX_ROUTE_DIRECT,    /* the PE's memory is mapped: loads, stores, atomics */
    SHMEMX_ROUTE_PROXY,     /* the fabric (libfabric); device code goes through the proxy */
    SHMEMX_ROUTE_STAGED,    /* the fabric, through host bounce buffers */
    SHMEMX_ROUTE_HOST_SYNC, /* synchronisation only: waits on the host (two PEs, one device) */
};

enum shmemx_op_class {
    SHMEMX_CLASS_RMA = 0, /* puts and gets */
    SHMEMX_CLASS_AMO,     /* atomics */
    SHMEMX_CLASS_SIGNAL,  /* put-with-signal's signal */
    SHMEMX_CLASS_SYNC,    /* barriers and collectives' synchronisation */
};

/* The route of op_class to pe (an shmemx_route_kind), or -1 for a PE or
 * class out of range. */
int shmemx_route(int pe, int op_class);
/* Why that route was chosen, as one phrase; NULL for bad arguments. */
const char *shmemx_route_why(int pe, int op_class);
/* "none", "self", "direct", "proxy/ofi", "staged", "host-sync"; NULL when
 * route is not an shmemx_route_kind. */
const char *shmemx_route_name(int route);

/* Stream-ordered calls (cuda backend): queued on the program's stream and
 * done in its order, by the GPU's copy engines and stream memory
 * operations, so the host thread does not wait. A cudaStream_t converts to
 * CUstream. Peers must be mapped (PEs of this node); collectives are on
 * SHMEM_TEAM_WORLD and, like the host ones, called by every PE in the same
 * order, one at a time. On backends without streams they end the job with a
 * message. */
typedef struct CUstream_st *CUstream;
#define USHMEMX_HAVE_ON_STREAM 1
void shmemx_putmem_on_stream(void *dest, const void *source, size_t nbytes, int pe,
                             CUstream stream);
void shmemx_getmem_on_stream(void *dest, const void *source, size_t nbytes, int pe,
                             CUstream stream);
/* sig_op SHMEM_SIGNAL_SET only: a stream can write a word, not add to it. */
void shmemx_putmem_signal_on_stream(void *dest, const void *source, size_t nbytes,
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                    CUstream stream);
/* cmp SHMEM_CMP_EQ, SHMEM_CMP_GE or SHMEM_CMP_GT. */
void shmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                        CUstream stream);
void shmemx_quiet_on_stream(CUstream stream);
void shmemx_barrier_all_on_stream(CUstream stream);
void shmemx_sync_all_on_stream(CUstream stream);
int shmemx_alltoallmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                 size_t nbytes, CUstream stream);
int shmemx_broadcastmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                  size_t nbytes, int pe_root, CUstream stream);
int shmemx_fcollectmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                 size_t nbytes, CUstream stream);
/* dest = the sum of every member's source, element by element, as
 * shmem_TYPENAME_sum_reduce: a barrier, a kernel on this PE's stream that
 * reads the members' sources where they are mapped, and a barrier. Every
 * member adds in member order, so floating-point results are identical on
 * all of them. dest may be source itself; long double is not offered (GPUs
 * have no such type). */
#define USHMEMX_DECL_SUM_ON_STREAM(name, type)                                  \
    int shmemx_##name##_sum_reduce_on_stream(shmem_team_t team, type *dest,    \
                                             const type *source, size_t nreduce, \
                                             CUstream stream);
USHMEMI_COLL_INT_TYPES(USHMEMX_DECL_SUM_ON_STREAM)
USHMEMX_DECL_SUM_ON_STREAM(float, float)
USHMEMX_DECL_SUM_ON_STREAM(double, double)
USHMEMX_DECL_SUM_ON_STREAM(complexf, float _Complex)
USHMEMX_DECL_SUM_ON_STREAM(complexd, double _Complex)
#undef USHMEMX_DECL_SUM_ON_STREAM

/* The ze backend (Level Zero). A program that creates its own modules of
 * device code and command lists uses the PE's context and device
 * (ze_context_handle_t, ze_device_handle_t; NULL with other backends or
 * before shmem_init). A module whose code includes <ushmem/device.h> gets
 * the device state with shmemx_ze_module_init (a ze_module_handle_t), after
 * shmem_init and before its kernels run: it writes the module's global
 * ushmem_device_state. Returns 0, or nonzero after a message. */
void *shmemx_ze_context(void);
void *shmemx_ze_device(void);
int shmemx_ze_module_init(void *module);

#ifdef __cplusplus
}
#endif

#endif
