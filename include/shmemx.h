/* ushmem extensions to OpenSHMEM. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starting a job without a launcher (the unique-id bootstrap). One process,
 * the future PE 0, makes an id; the program hands its 128 bytes to every
 * other process by its own means (MPI_Bcast, torch.distributed, a file or a
 * pipe); then each process, PE 0 included, calls ushmemx_init_uniqueid with
 * its rank, the number of PEs and the id, in place of shmem_init:
 *
 *     ushmemx_uniqueid_t id = USHMEMX_UNIQUEID_INITIALIZER;
 *     if (rank == 0 && ushmemx_get_uniqueid(&id) != 0) exit(1);
 *     ... every process gets PE 0's id ...
 *     if (ushmemx_init_uniqueid(rank, npes, &id) != 0) exit(1);
 *     ... shmem_* calls as after shmem_init ...
 *     shmem_finalize();
 *
 * ushmemx_get_uniqueid opens a TCP listening socket in the calling process,
 * kept until that process's ushmemx_init_uniqueid (its address is the host
 * name's, else loopback; USHMEM_BOOTSTRAP_UID_ADDR picks an address or an
 * interface for jobs across hosts), and writes the address, the port and a
 * random secret into the id: treat the id as a password. Calling it again
 * voids the previous id of the process. Returns 0, or nonzero after a
 * message on stderr.
 *
 * ushmemx_init_uniqueid: rank is this PE's number (0 to npes - 1, and 0 in
 * the process that made the id), npes the job's size, the same on every PE.
 * The PEs meet at PE 0 within USHMEM_BOOTSTRAP_TIMEOUT seconds. Returns 0
 * when the job is up, as after shmem_init; nonzero, after a message naming
 * the PE, when the arguments or the id are bad or the job could not start
 * (the other PEs then fail too). Once the job is up, a failure ends every
 * PE, as shmem_init does. Nested calls count like shmem_init's; after the
 * last shmem_finalize, shmem_init or ushmemx_init_uniqueid with the same id
 * start the same PEs again, and a new id (from a new ushmemx_get_uniqueid)
 * starts a new job. A PE that dies or calls shmem_global_exit ends every
 * PE of the job. */
typedef struct {
    int version;
    char internal[124];
} ushmemx_uniqueid_t;
#define USHMEMX_UNIQUEID_VERSION 1
#define USHMEMX_UNIQUEID_INITIALIZER {USHMEMX_UNIQUEID_VERSION, {0}}
int ushmemx_get_uniqueid(ushmemx_uniqueid_t *uid);
int ushmemx_init_uniqueid(int rank, int npes, const ushmemx_uniqueid_t *uid);

/* The road an operation class takes to a PE, decided at shmem_init (see
 * `ushmem_info --topology` and docs/guide/routes.md). */
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

/* The PEs of this node (of this simulated node under USHMEM_SIM_NODES),
 * mapped here or not, when they form a strided set (else this PE alone).
 * A PE's rank in it is the local rank that chose its device. */
extern shmem_team_t SHMEMX_TEAM_NODE;
/* Teams as small integers, for programs that keep a team in an int
 * (NVSHMEM's nvshmem_team_t): 0 SHMEM_TEAM_WORLD, 1 SHMEM_TEAM_SHARED,
 * 2 SHMEMX_TEAM_NODE, USHMEMX_TEAM_ID_SPLIT and up the split teams; -1 for
 * SHMEM_TEAM_INVALID. shmemx_team_from_id gives SHMEM_TEAM_INVALID for an
 * id that names no live team. */
#define USHMEMX_TEAM_ID_SPLIT 6
int shmemx_team_id(shmem_team_t team);
shmem_team_t shmemx_team_from_id(int id);

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
/* Reductions on a stream, every OpenSHMEM 1.5 reduction but long double
 * (GPUs have no such type):
 *
 *   int shmemx_TYPENAME_OP_reduce_on_stream(shmem_team_t team, TYPE *dest,
 *       const TYPE *source, size_t nreduce, CUstream stream);
 *
 * dest[i] = OP over the members of source[i], i < nreduce, as
 * shmem_TYPENAME_OP_reduce; and NVSHMEM's reduce-scatter,
 *
 *   int shmemx_TYPENAME_OP_reducescatter_on_stream(shmem_team_t team,
 *       TYPE *dest, const TYPE *source, size_t nreduce, CUstream stream);
 *
 * where source holds nreduce elements per member and member i gets in dest
 * the reduction of the members' block i: dest[j] = OP over the members of
 * source[i * nreduce + j], j < nreduce. OP and TYPENAME as in OpenSHMEM:
 * and, or, xor on the bitwise types; min, max on the integer types, float
 * and double (plain comparisons, as the host's reductions); sum, prod on
 * those and complexf, complexd (integers wrap). Each is a barrier of the
 * team, kernels on this PE's stream that read the members' sources where
 * they are mapped (peers of this node), and a barrier. Every member
 * combines in member order, so floating-point results are identical on all
 * of them. dest may be source itself (a reduce-scatter's dest may lie
 * anywhere in source): the result then goes through a buffer allocated on
 * the stream. */
#define USHMEMI_STREAM_REDUCE_DECL(name, type, op)                             \
    int shmemx_##name##_##op##_reduce_on_stream(shmem_team_t team, type *dest, \
                                                const type *source, size_t nreduce, \
                                                CUstream stream);             \
    int shmemx_##name##_##op##_reducescatter_on_stream(shmem_team_t team, type *dest, \
                                                       const type *source,    \
                                                       size_t nreduce, CUstream stream);
/* Every stream reduction as USHMEMI_STREAM_REDUCE(name, type, op, cls),
 * cls INT, FLOAT or COMPLEX: one list that this header declares from and
 * the library defines from (define USHMEMI_STREAM_REDUCE, expand
 * USHMEMI_STREAM_REDUCTIONS, undefine it). */
#define USHMEMI_STREAM_REDUCE_BITWISE_(name, type)                             \
    USHMEMI_STREAM_REDUCE(name, type, and, INT)                               \
    USHMEMI_STREAM_REDUCE(name, type, or, INT)                                \
    USHMEMI_STREAM_REDUCE(name, type, xor, INT)
#define USHMEMI_STREAM_REDUCE_INT_(name, type)                                 \
    USHMEMI_STREAM_REDUCE(name, type, min, INT)                               \
    USHMEMI_STREAM_REDUCE(name, type, max, INT)                               \
    USHMEMI_STREAM_REDUCE(name, type, sum, INT)                               \
    USHMEMI_STREAM_REDUCE(name, type, prod, INT)
#define USHMEMI_STREAM_REDUCE_FLOAT_(name, type)                               \
    USHMEMI_STREAM_REDUCE(name, type, min, FLOAT)                             \
    USHMEMI_STREAM_REDUCE(name, type, max, FLOAT)                             \
    USHMEMI_STREAM_REDUCE(name, type, sum, FLOAT)                             \
    USHMEMI_STREAM_REDUCE(name, type, prod, FLOAT)
#define USHMEMI_STREAM_REDUCE_COMPLEX_(name, type)                             \
    USHMEMI_STREAM_REDUCE(name, type, sum, COMPLEX)                           \
    USHMEMI_STREAM_REDUCE(name, type, prod, COMPLEX)
#define USHMEMI_STREAM_REDUCTIONS                                              \
    USHMEMI_COLL_BITWISE_TYPES(USHMEMI_STREAM_REDUCE_BITWISE_)                \
    USHMEMI_COLL_INT_TYPES(USHMEMI_STREAM_REDUCE_INT_)                        \
    USHMEMI_STREAM_REDUCE_FLOAT_(float, float)                                \
    USHMEMI_STREAM_REDUCE_FLOAT_(double, double)                              \
    USHMEMI_COLL_COMPLEX_TYPES(USHMEMI_STREAM_REDUCE_COMPLEX_)
#define USHMEMX_HAVE_REDUCE_ON_STREAM 1
#define USHMEMI_STREAM_REDUCE(name, type, op, cls) USHMEMI_STREAM_REDUCE_DECL(name, type, op)
USHMEMI_STREAM_REDUCTIONS
#undef USHMEMI_STREAM_REDUCE

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

/* The cuda backend: a module the program loads itself (cuModuleLoad of a
 * cubin or PTX whose code includes <ushmem/device.h>; a CUmodule) gets the
 * device state with shmemx_cuda_module_init, after shmem_init and before
 * its kernels run. Returns 0, or nonzero after a message. */
int shmemx_cuda_module_init(void *module);
/* The CUDA device (its ordinal, as cudaSetDevice takes it) that holds this
 * PE's symmetric heap, whose kernels reach it; -1 before shmem_init or with
 * another backend. */
int shmemx_cuda_device(void);
/* dest (a symmetric heap address) as this PE's device code reaches it on
 * PE pe, for a kernel's own loads and stores: the device API's ushmem_ptr,
 * asked from the host (shmem_ptr gives only what the CPU may touch, so
 * NULL for a heap in GPU memory); NULL where device code does not reach pe
 * directly. */
void *shmemx_ptr_device(const void *dest, int pe);

#ifdef __cplusplus
}
#endif

#endif
