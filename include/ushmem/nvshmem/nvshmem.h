/* NVSHMEM 3.x programs under ushmem: NVSHMEM's names and types, mapped onto
 * ushmem's host API (<shmem.h>, <shmemx.h>) and device API
 * (<ushmem/device.h>). Installed in a folder of its own
 * (include/ushmem/nvshmem), which `oshnvcc --nvshmem` and pkg-config's
 * `nvshmem_includedir` add, so it never shadows a real NVSHMEM.
 *
 * What maps: setup and queries, the heap, RMA in every typed, sized, _nbi,
 * _warp and _block form, atomics, put-with-signal and nvshmemx_signal_op,
 * waits and tests, quiet and fence, barriers and syncs (device, host, on a
 * stream), teams and their queries and collectives on the host and device,
 * collectives on the device, the host and streams, collective launches,
 * cubin modules and the unique-id and MPI start-ups. NVSHMEM's numbers for
 * constants are not kept (programs use the names). What ushmem does not
 * offer fails to compile with a message naming the call (C++; in C such a
 * call is undeclared), or, where only the arguments decide, fails at run
 * time in one sentence naming it: never a silent no-op. docs/guide/nvshmem.md
 * lists both.
 *
 * Every function here is static inline: a program links libushmem and
 * nothing else. Functions that NVSHMEM offers on both sides are
 * __host__ __device__ here and choose ushmem's host or device call by
 * __CUDA_ARCH__. */
#ifndef USHMEM_NVSHMEM_H
#define USHMEM_NVSHMEM_H

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime.h>
#if defined(__cplusplus)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include <shmem.h>
#include <shmemx.h>
#include <ushmem/cuda_launch.h>
#if defined(__CUDACC__)
#include <ushmem/device.h>
#endif

#define USHMEM_NVSHMEM_COMPAT 1
/* The NVSHMEM release whose API this header follows. */
#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 4
#define NVSHMEM_VENDOR_PATCH_VERSION 5
/* The OpenSHMEM version behind it, as nvshmem_info_get_version gives it. */
#define NVSHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define NVSHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define NVSHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define NVSHMEM_VENDOR_STRING "ushmem (NVSHMEM 3.4 API)"

/* ---- Qualifiers ---- */
#if defined(__CUDACC__)
#define USHMEMI_NV_HD static inline __host__ __device__
#define USHMEMI_NV_DEV static __forceinline__ __device__
/* Both sides, always inlined where the device's form chooses its road
 * from an argument the caller usually passes as a constant (a team): the
 * choice is then made before the optimizer works on the function. */
#define USHMEMI_NV_HD_FORCE static __forceinline__ __host__ __device__
#else
#define USHMEMI_NV_HD static inline
#define USHMEMI_NV_HD_FORCE static inline
#endif
#define USHMEMI_NV_HOST static inline
#if defined(__CUDA_ARCH__)
#define USHMEMI_NV_ON_DEVICE 1
#else
#define USHMEMI_NV_ON_DEVICE 0
#endif

/* A call ushmem does not offer: a template whose use fails to compile with
 * a message naming it (C++ only). */
#if defined(__cplusplus)
#define USHMEMI_NV_REFUSE(NAME, WHY)                                                       \
    template <typename USHMEMI_T = void, typename... USHMEMI_A>                            \
    USHMEMI_NV_HD int NAME(USHMEMI_A...)                                                   \
    {                                                                                      \
        static_assert(sizeof(USHMEMI_T *) == 0, #NAME " is not offered by ushmem: " WHY);   \
        return 0;                                                                          \
    }
#else
#define USHMEMI_NV_REFUSE(NAME, WHY)
#endif

/* ---- Constants and types ---- */
enum {
    NVSHMEMX_SUCCESS = 0,
    NVSHMEMX_ERROR_INVALID_VALUE,
    NVSHMEMX_ERROR_OUT_OF_MEMORY,
    NVSHMEMX_ERROR_NOT_SUPPORTED,
    NVSHMEMX_ERROR_SYMMETRY,
    NVSHMEMX_ERROR_GPU_NOT_SELECTED,
    NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
    NVSHMEMX_ERROR_INTERNAL,
};
#if defined(__cplusplus)
static_assert(NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED == USHMEMX_LAUNCH_REFUSED,
              "ushmemx_collective_launch's refusal is NVSHMEM's number");
#endif

enum {
    NVSHMEM_THREAD_SINGLE = SHMEM_THREAD_SINGLE,
    NVSHMEM_THREAD_FUNNELED = SHMEM_THREAD_FUNNELED,
    NVSHMEM_THREAD_SERIALIZED = SHMEM_THREAD_SERIALIZED,
    NVSHMEM_THREAD_MULTIPLE = SHMEM_THREAD_MULTIPLE,
};

/* ushmem's comparison and signal numbers serve host and device alike. */
enum {
    NVSHMEM_CMP_EQ = SHMEM_CMP_EQ,
    NVSHMEM_CMP_NE = SHMEM_CMP_NE,
    NVSHMEM_CMP_GT = SHMEM_CMP_GT,
    NVSHMEM_CMP_GE = SHMEM_CMP_GE,
    NVSHMEM_CMP_LT = SHMEM_CMP_LT,
    NVSHMEM_CMP_LE = SHMEM_CMP_LE,
};
enum { NVSHMEM_SIGNAL_SET = SHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD = SHMEM_SIGNAL_ADD };
typedef int nvshmemx_signal_op_t;
#if defined(__CUDACC__)
static_assert(SHMEM_CMP_EQ == USHMEM_CMP_EQ && SHMEM_CMP_NE == USHMEM_CMP_NE &&
                  SHMEM_CMP_GT == USHMEM_CMP_GT && SHMEM_CMP_GE == USHMEM_CMP_GE &&
                  SHMEM_CMP_LT == USHMEM_CMP_LT && SHMEM_CMP_LE == USHMEM_CMP_LE &&
                  SHMEM_SIGNAL_SET == USHMEM_SIGNAL_SET && SHMEM_SIGNAL_ADD == USHMEM_SIGNAL_ADD,
              "host and device number comparisons and signals alike");
#endif

enum {
    NVSHMEM_STATUS_NOT_INITIALIZED = 0,
    NVSHMEM_STATUS_IS_BOOTSTRAPPED,
    NVSHMEM_STATUS_IS_INITIALIZED,
};

enum {
    NVSHMEMX_INIT_THREAD_PES = 1,
    NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1,
    NVSHMEMX_INIT_WITH_SHMEM = 1 << 2,
    NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3,
};

/* Teams are small integers (shmemx_team_id): NVSHMEM's numbers for the
 * predefined teams, ushmem's for the split ones. */
typedef int32_t nvshmem_team_t;
typedef nvshmem_team_t nvshmemx_team_t;
enum {
    NVSHMEM_TEAM_INVALID = -1,
    NVSHMEM_TEAM_WORLD = 0,
    NVSHMEM_TEAM_WORLD_INDEX = 0,
    NVSHMEM_TEAM_SHARED = 1,
    NVSHMEM_TEAM_SHARED_INDEX = 1,
    NVSHMEMX_TEAM_NODE = 2,
    NVSHMEM_TEAM_NODE_INDEX = 2,
    NVSHMEMX_TEAM_SAME_MYPE_NODE = 3,
    NVSHMEM_TEAMS_MIN = USHMEMX_TEAM_ID_SPLIT,
};
typedef struct {
    int version;
    int num_contexts;
    uint64_t uniqueid;
    char padding[48];
} nvshmem_team_config_t;
#define NVSHMEM_TEAM_CONFIG_INITIALIZER {2, 0, 0, {0}}
#define NVSHMEM_TEAM_NUM_CONTEXTS SHMEM_TEAM_NUM_CONTEXTS
#define NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS SHMEM_TEAM_NUM_CONTEXTS

/* Start-up attributes: NVSHMEM 3's layout, of which ushmem reads the MPI
 * communicator, the unique-id arguments and the CUDA device. */
typedef ushmemx_uniqueid_t nvshmemx_uniqueid_t;
#define NVSHMEMX_UNIQUEID_INITIALIZER USHMEMX_UNIQUEID_INITIALIZER
typedef struct {
    int version;
    nvshmemx_uniqueid_t *id;
    int myrank;
    int nranks;
} nvshmemx_uniqueid_args_t;
typedef struct {
    int version;
    nvshmemx_uniqueid_args_t uid_args;
    int cuda_device_id; /* -1: the program's current device, or ushmem's choice */
    char content[92];
} nvshmemx_init_args_t;
typedef struct {
    int version;
    void *mpi_comm; /* points to an MPI_Comm */
    nvshmemx_init_args_t args;
} nvshmemx_init_attr_t;
#define NVSHMEMX_UNIQUEID_ARGS_INITIALIZER {1, NULL, -1, -1}
#define NVSHMEMX_INIT_ATTR_INITIALIZER {2, NULL, {2, NVSHMEMX_UNIQUEID_ARGS_INITIALIZER, -1, {0}}}

/* The message macros that NVSHMEM's own programs (its perftests) use. */
#define NVSHMEMI_ERROR_PRINT(...)                                                          \
    do {                                                                                   \
        fprintf(stderr, "%s:%s:%d: ", __FILE__, __func__, __LINE__);                       \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fprintf(stderr, "\n");                                                             \
    } while (0)
#define NVSHMEMI_WARN_PRINT(...)                                                           \
    do {                                                                                   \
        fprintf(stderr, "WARN: ");                                                         \
        fprintf(stderr, __VA_ARGS__);                                                      \
    } while (0)

/* ---- Setup, exit and queries ---- */

USHMEMI_NV_HOST void nvshmem_init(void)
{
    shmem_init();
}

USHMEMI_NV_HOST int nvshmem_init_thread(int requested, int *provided)
{
    return shmem_init_thread(requested, provided);
}

USHMEMI_NV_HOST void nvshmem_query_thread(int *provided)
{
    shmem_query_thread(provided);
}

USHMEMI_NV_HOST void nvshmem_finalize(void)
{
    shmem_finalize();
}

USHMEMI_NV_HOST int nvshmemx_init_status(void)
{
    int initialized = 0;
    shmem_query_initialized(&initialized);
    return initialized ? NVSHMEM_STATUS_IS_INITIALIZED : NVSHMEM_STATUS_NOT_INITIALIZED;
}

USHMEMI_NV_HOST int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *uid)
{
    return ushmemx_get_uniqueid(uid);
}

USHMEMI_NV_HOST int nvshmemx_set_attr_uniqueid_args(int myrank, int nranks,
                                                    const nvshmemx_uniqueid_t *uid,
                                                    nvshmemx_init_attr_t *attr)
{
    if (attr == NULL)
        return NVSHMEMX_ERROR_INVALID_VALUE;
    attr->args.uid_args.id = (nvshmemx_uniqueid_t *)uid;
    attr->args.uid_args.myrank = myrank;
    attr->args.uid_args.nranks = nranks;
    return NVSHMEMX_SUCCESS;
}

USHMEMI_NV_HOST int nvshmemx_set_attr_mpi_comm_args(void *mpi_comm, nvshmemx_init_attr_t *attr)
{
    if (attr == NULL)
        return NVSHMEMX_ERROR_INVALID_VALUE;
    attr->mpi_comm = mpi_comm;
    return NVSHMEMX_SUCCESS;
}

/* NVSHMEMX_INIT_WITH_MPI_COMM: ushmem starts from the launcher (PMIx), which
 * places every rank of the job, so the communicator must hold them all: the
 * job's MPI_COMM_WORLD, or one congruent to it. Read through the MPI
 * library the program loaded (Open MPI's handles are pointers, MPICH's are
 * ints); 0 when it is, else after one sentence. */
USHMEMI_NV_HOST int ushmemi_nv_world_comm(const void *mpi_comm)
{
    typedef int (*compare_ptr_fn)(void *, void *, int *);
    typedef int (*compare_int_fn)(int, int, int *);
    void *ompi_world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
    void *compare = dlsym(RTLD_DEFAULT, "MPI_Comm_compare");
    int result = -1;

    if (mpi_comm == NULL) {
        fprintf(stderr, "ushmem: nvshmemx_init_attr: NVSHMEMX_INIT_WITH_MPI_COMM with "
                        "attr->mpi_comm NULL; point it to MPI_COMM_WORLD\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    if (compare == NULL) {
        fprintf(stderr, "ushmem: nvshmemx_init_attr: NVSHMEMX_INIT_WITH_MPI_COMM, but no MPI "
                        "library is loaded in this process (MPI_Comm_compare not found)\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    if (ompi_world != NULL) {
        if (*(void *const *)mpi_comm == ompi_world)
            return NVSHMEMX_SUCCESS;
        ((compare_ptr_fn)compare)(*(void *const *)mpi_comm, ompi_world, &result);
    } else {
        const int mpich_world = 0x44000000; /* MPICH's MPI_COMM_WORLD */
        if (*(const int *)mpi_comm == mpich_world)
            return NVSHMEMX_SUCCESS;
        ((compare_int_fn)compare)(*(const int *)mpi_comm, mpich_world, &result);
    }
    if (result == 0 /* MPI_IDENT */ || result == 1 /* MPI_CONGRUENT */)
        return NVSHMEMX_SUCCESS;
    fprintf(stderr, "ushmem: nvshmemx_init_attr: NVSHMEMX_INIT_WITH_MPI_COMM with a "
                    "communicator other than MPI_COMM_WORLD: ushmem's PEs are the job's ranks "
                    "as the launcher started them; split a team after nvshmem_init instead\n");
    return NVSHMEMX_ERROR_NOT_SUPPORTED;
}

/* Starts ushmem as attr says: a unique id (ushmemx_init_uniqueid), the
 * job's MPI_COMM_WORLD or an OpenSHMEM start (the launcher's PMIx, as
 * shmem_init), or plainly. args.cuda_device_id, when set, is made current
 * first, so that the heap goes to that device. */
USHMEMI_NV_HOST int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr)
{
    if ((flags & (NVSHMEMX_INIT_WITH_UNIQUEID | NVSHMEMX_INIT_WITH_MPI_COMM)) && attr == NULL) {
        fprintf(stderr, "ushmem: nvshmemx_init_attr: flags %#x need attr, which is NULL\n",
                flags);
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    if (attr != NULL && attr->args.cuda_device_id >= 0) {
        cudaError_t err = cudaSetDevice(attr->args.cuda_device_id);
        if (err != cudaSuccess) {
            fprintf(stderr, "ushmem: nvshmemx_init_attr: cuda_device_id %d: %s\n",
                    attr->args.cuda_device_id, cudaGetErrorString(err));
            return NVSHMEMX_ERROR_INVALID_VALUE;
        }
    }
    if (flags & NVSHMEMX_INIT_WITH_UNIQUEID) {
        const nvshmemx_uniqueid_args_t *u = &attr->args.uid_args;
        return ushmemx_init_uniqueid(u->myrank, u->nranks, u->id) == 0
                   ? NVSHMEMX_SUCCESS
                   : NVSHMEMX_ERROR_INTERNAL;
    }
    if (flags & NVSHMEMX_INIT_WITH_MPI_COMM) {
        int status = ushmemi_nv_world_comm(attr->mpi_comm);
        if (status != NVSHMEMX_SUCCESS)
            return status;
    }
    if (flags & NVSHMEMX_INIT_WITH_SHMEM) {
        int initialized = 0;
        shmem_query_initialized(&initialized);
        if (initialized)
            return NVSHMEMX_SUCCESS; /* ushmem is the OpenSHMEM library that started */
    }
    shmem_init();
    return NVSHMEMX_SUCCESS;
}

USHMEMI_NV_REFUSE(nvshmemx_hostlib_init_attr,
                  "ushmem has no host-only library; call nvshmem_init or nvshmemx_init_attr")
USHMEMI_NV_REFUSE(nvshmemx_hostlib_finalize, "ushmem has no host-only library")

USHMEMI_NV_HD int nvshmem_my_pe(void)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_my_pe();
#else
    return shmem_my_pe();
#endif
}

USHMEMI_NV_HD int nvshmem_n_pes(void)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_n_pes();
#else
    return shmem_n_pes();
#endif
}

USHMEMI_NV_HD void nvshmem_info_get_version(int *major, int *minor)
{
    *major = NVSHMEM_MAJOR_VERSION;
    *minor = NVSHMEM_MINOR_VERSION;
}

USHMEMI_NV_HD void nvshmem_info_get_name(char *name)
{
    const char *s = NVSHMEM_VENDOR_STRING;
    int i = 0;
    for (; i < NVSHMEM_MAX_NAME_LEN - 1 && s[i] != '\0'; i++)
        name[i] = s[i];
    name[i] = '\0';
}

USHMEMI_NV_HD void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch)
{
    *major = NVSHMEM_VENDOR_MAJOR_VERSION;
    *minor = NVSHMEM_VENDOR_MINOR_VERSION;
    *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}

USHMEMI_NV_HOST void nvshmem_global_exit(int status)
{
    shmem_global_exit(status);
}

/* NVSHMEM programs choose their GPU before nvshmem_init (ushmem takes the
 * current device) or right after it, by their rank in NVSHMEMX_TEAM_NODE
 * (ushmem's choice is that rank modulo the device count, so the same GPU).
 * A program on another GPU than its heap's, whose kernels would not see
 * ushmem's state there, is stopped at its next allocation or collective
 * launch with one sentence. */
USHMEMI_NV_HOST void ushmemi_nv_check_device(const char *call)
{
    int current = -1, heap = shmemx_cuda_device();
    if (heap < 0 || cudaGetDevice(&current) != cudaSuccess || current == heap)
        return;
    fprintf(stderr, "ushmem: PE %d: %s: the current CUDA device is %d, but this PE's symmetric "
                    "heap is on device %d; call cudaSetDevice(%d) (the PE's rank in "
                    "NVSHMEMX_TEAM_NODE modulo the device count), or choose the device before "
                    "nvshmem_init\n",
            shmem_my_pe(), call, current, heap, heap);
    shmem_global_exit(1);
}

/* ---- Heap ---- */

USHMEMI_NV_HOST void *nvshmem_malloc(size_t size)
{
    ushmemi_nv_check_device("nvshmem_malloc");
    return shmem_malloc(size);
}

USHMEMI_NV_HOST void *nvshmem_calloc(size_t count, size_t size)
{
    ushmemi_nv_check_device("nvshmem_calloc");
    return shmem_calloc(count, size);
}

USHMEMI_NV_HOST void *nvshmem_align(size_t alignment, size_t size)
{
    ushmemi_nv_check_device("nvshmem_align");
    return shmem_align(alignment, size);
}

USHMEMI_NV_HOST void nvshmem_free(void *ptr)
{
    shmem_free(ptr);
}

/* On the host, as NVSHMEM's: the address a kernel uses (for a heap in GPU
 * memory the CPU cannot use it). */
USHMEMI_NV_HD void *nvshmem_ptr(const void *ptr, int pe)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_ptr(ptr, pe);
#else
    return shmemx_ptr_device(ptr, pe);
#endif
}

/* No NVLink multicast (ushmem never creates multicast objects): NULL, as
 * NVSHMEM gives where multicast is off. */
USHMEMI_NV_HD void *nvshmemx_mc_ptr(nvshmem_team_t team, const void *ptr)
{
    (void)team;
    (void)ptr;
    return NULL;
}

/* A local buffer used with RMA: every road ushmem takes between mapped
 * heaps reads and writes any device or pinned memory, so there is nothing
 * to register; over the fabric only the heap is registered, and such a
 * buffer is refused. */
USHMEMI_NV_HOST int nvshmemx_buffer_register(void *addr, size_t length)
{
    for (int pe = 0; pe < shmem_n_pes(); pe++) {
        int route = shmemx_route(pe, SHMEMX_CLASS_RMA);
        if (route == SHMEMX_ROUTE_PROXY || route == SHMEMX_ROUTE_STAGED) {
            fprintf(stderr, "ushmem: PE %d: nvshmemx_buffer_register(%p, %zu) refused: PE %d is "
                            "reached over the fabric, which takes only the symmetric heap; "
                            "allocate the buffer with nvshmem_malloc\n",
                    shmem_my_pe(), addr, length, pe);
            return NVSHMEMX_ERROR_NOT_SUPPORTED;
        }
    }
    return NVSHMEMX_SUCCESS;
}

USHMEMI_NV_HOST int nvshmemx_buffer_unregister(void *addr)
{
    (void)addr;
    return NVSHMEMX_SUCCESS;
}

USHMEMI_NV_HOST void nvshmemx_buffer_unregister_all(void) {}

/* Memory the program mapped itself cannot join ushmem's heap, whose every
 * part is mapped into every peer at allocation: refused. */
USHMEMI_NV_HOST void *nvshmemx_buffer_register_symmetric(void *buf_ptr, size_t size, int flags)
{
    fprintf(stderr, "ushmem: PE %d: nvshmemx_buffer_register_symmetric(%p, %zu, %d) refused: "
                    "ushmem's symmetric memory comes from nvshmem_malloc only; allocate the "
                    "buffer there\n",
            shmem_my_pe(), buf_ptr, size, flags);
    return NULL;
}

USHMEMI_NV_HOST int nvshmemx_buffer_unregister_symmetric(void *mmap_ptr, size_t size)
{
    fprintf(stderr, "ushmem: PE %d: nvshmemx_buffer_unregister_symmetric(%p, %zu): no buffer "
                    "was registered (see nvshmemx_buffer_register_symmetric)\n",
            shmem_my_pe(), mmap_ptr, size);
    return NVSHMEMX_ERROR_INVALID_VALUE;
}

/* ---- Modules, launches ---- */

/* A module the program loaded (cuModuleLoad) whose code includes this
 * header gets its copy of the device state, as NVSHMEM's does. */
USHMEMI_NV_HOST int nvshmemx_cumodule_init(CUmodule module)
{
    return shmemx_cuda_module_init((void *)module) == 0 ? NVSHMEMX_SUCCESS
                                                        : NVSHMEMX_ERROR_INTERNAL;
}

USHMEMI_NV_HOST int nvshmemx_cumodule_finalize(CUmodule module)
{
    (void)module; /* the module holds nothing of ushmem's */
    return NVSHMEMX_SUCCESS;
}

USHMEMI_NV_REFUSE(nvshmemx_culibrary_init,
                  "load the code with cuModuleLoad and call nvshmemx_cumodule_init")
USHMEMI_NV_REFUSE(nvshmemx_culibrary_finalize, "see nvshmemx_culibrary_init")

USHMEMI_NV_HOST int nvshmemx_collective_launch(const void *func, dim3 gridDims, dim3 blockDims,
                                               void **args, size_t sharedMem,
                                               cudaStream_t stream)
{
    ushmemi_nv_check_device("nvshmemx_collective_launch");
    return ushmemx_collective_launch(func, gridDims, blockDims, args, sharedMem, stream);
}

USHMEMI_NV_HOST int nvshmemx_collective_launch_query_gridsize(const void *func, dim3 blockDims,
                                                              void **args, size_t sharedMem,
                                                              int *gridsize)
{
    return ushmemx_collective_launch_query_gridsize(func, blockDims, args, sharedMem, gridsize);
}

/* ---- Teams (host) ---- */

/* The shmem_team_t of an id, or SHMEM_TEAM_INVALID. */
USHMEMI_NV_HOST shmem_team_t ushmemi_nv_team(nvshmem_team_t team)
{
    return shmemx_team_from_id(team);
}

USHMEMI_NV_HOST nvshmem_team_t ushmemi_nv_team_id(shmem_team_t team)
{
    return team == SHMEM_TEAM_INVALID ? NVSHMEM_TEAM_INVALID : shmemx_team_id(team);
}

USHMEMI_NV_HOST int ushmemi_nv_config(const nvshmem_team_config_t *config, long mask,
                                      shmem_team_config_t *out_p)
{
    out_p->num_contexts = config != NULL && (mask & SHMEM_TEAM_NUM_CONTEXTS)
                              ? config->num_contexts
                              : 0;
    return config != NULL;
}

USHMEMI_NV_HOST int nvshmem_team_split_strided(nvshmem_team_t parent_team, int PE_start,
                                               int PE_stride, int PE_size,
                                               const nvshmem_team_config_t *config,
                                               long config_mask, nvshmem_team_t *new_team)
{
    shmem_team_config_t c;
    shmem_team_t t = SHMEM_TEAM_INVALID;
    int have = ushmemi_nv_config(config, config_mask, &c);
    int rc = shmem_team_split_strided(ushmemi_nv_team(parent_team), PE_start, PE_stride, PE_size,
                                      have ? &c : NULL, have ? config_mask : 0, &t);
    *new_team = ushmemi_nv_team_id(t);
    return rc;
}

USHMEMI_NV_HOST int nvshmem_team_split_2d(nvshmem_team_t parent_team, int xrange,
                                          const nvshmem_team_config_t *xaxis_config,
                                          long xaxis_mask, nvshmem_team_t *xaxis_team,
                                          const nvshmem_team_config_t *yaxis_config,
                                          long yaxis_mask, nvshmem_team_t *yaxis_team)
{
    shmem_team_config_t xc, yc;
    shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    int hx = ushmemi_nv_config(xaxis_config, xaxis_mask, &xc);
    int hy = ushmemi_nv_config(yaxis_config, yaxis_mask, &yc);
    int rc = shmem_team_split_2d(ushmemi_nv_team(parent_team), xrange, hx ? &xc : NULL,
                                 hx ? xaxis_mask : 0, &x, hy ? &yc : NULL, hy ? yaxis_mask : 0,
                                 &y);
    *xaxis_team = ushmemi_nv_team_id(x);
    *yaxis_team = ushmemi_nv_team_id(y);
    return rc;
}

USHMEMI_NV_HOST void nvshmem_team_destroy(nvshmem_team_t team)
{
    shmem_team_destroy(ushmemi_nv_team(team));
}

USHMEMI_NV_HOST void nvshmem_team_get_config(nvshmem_team_t team, nvshmem_team_config_t *config)
{
    shmem_team_config_t c = {0};
    shmem_team_get_config(ushmemi_nv_team(team), SHMEM_TEAM_NUM_CONTEXTS, &c);
    config->num_contexts = c.num_contexts;
}

USHMEMI_NV_REFUSE(nvshmemx_team_get_uniqueid,
                  "teams are split from existing ones (nvshmem_team_split_strided)")
USHMEMI_NV_REFUSE(nvshmemx_team_init,
                  "teams are split from existing ones (nvshmem_team_split_strided)")

/* ---- Device helpers ---- */
#if defined(__CUDACC__)
/* The team of a device collective: NULL for NVSHMEM_TEAM_WORLD (the
 * world's own barrier and paths), else the team as this PE knows it
 * (device.h's team table). An id that is not a team of this PE ends the
 * kernel, and the host prints one line naming the call and the team
 * (ushmemi_dev_fault, device_state.h's fault record). */
USHMEMI_NV_DEV const struct ushmem_device_team *ushmemi_nv_team_of(nvshmem_team_t team,
                                                                  const char *call)
{
    const struct ushmem_device_team *t;

    if (team == NVSHMEM_TEAM_WORLD)
        return NULL;
    t = ushmemi_dev_team(ushmemi_dev_state_fresh(), team);
    if (t == NULL)
        ushmemi_dev_fault(USHMEM_DEVICE_FAULT_TEAM, (int)team, call);
    return t;
}

/* Bit-for-bit moves between a value and an unsigned word of its size. */
template <size_t N> struct ushmemi_nv_word;
template <> struct ushmemi_nv_word<1> { typedef uint8_t type; };
template <> struct ushmemi_nv_word<2> { typedef uint16_t type; };
template <> struct ushmemi_nv_word<4> { typedef uint32_t type; };
template <> struct ushmemi_nv_word<8> { typedef uint64_t type; };

template <typename T>
USHMEMI_NV_DEV typename ushmemi_nv_word<sizeof(T)>::type ushmemi_nv_bits(T v)
{
    typename ushmemi_nv_word<sizeof(T)>::type w;
    memcpy(&w, &v, sizeof(T));
    return w;
}

template <typename T, typename W> USHMEMI_NV_DEV T ushmemi_nv_from_bits(W w)
{
    T v;
    memcpy(&v, &w, sizeof(T));
    return v;
}

USHMEMI_NV_DEV void ushmemi_nv_p_word(uint8_t *d, uint8_t v, int pe) { ushmem_uint8_p(d, v, pe); }
USHMEMI_NV_DEV void ushmemi_nv_p_word(uint16_t *d, uint16_t v, int pe) { ushmem_uint16_p(d, v, pe); }
USHMEMI_NV_DEV void ushmemi_nv_p_word(uint32_t *d, uint32_t v, int pe) { ushmem_uint32_p(d, v, pe); }
USHMEMI_NV_DEV void ushmemi_nv_p_word(uint64_t *d, uint64_t v, int pe) { ushmem_uint64_p(d, v, pe); }
USHMEMI_NV_DEV uint8_t ushmemi_nv_g_word(const uint8_t *s, int pe) { return ushmem_uint8_g(s, pe); }
USHMEMI_NV_DEV uint16_t ushmemi_nv_g_word(const uint16_t *s, int pe) { return ushmem_uint16_g(s, pe); }
USHMEMI_NV_DEV uint32_t ushmemi_nv_g_word(const uint32_t *s, int pe) { return ushmem_uint32_g(s, pe); }
USHMEMI_NV_DEV uint64_t ushmemi_nv_g_word(const uint64_t *s, int pe) { return ushmem_uint64_g(s, pe); }

template <typename T> USHMEMI_NV_DEV void ushmemi_nv_p(T *dest, T value, int pe)
{
    typedef typename ushmemi_nv_word<sizeof(T)>::type W;
    ushmemi_nv_p_word((W *)dest, ushmemi_nv_bits(value), pe);
}

template <typename T> USHMEMI_NV_DEV T ushmemi_nv_g(const T *src, int pe)
{
    typedef typename ushmemi_nv_word<sizeof(T)>::type W;
    return ushmemi_nv_from_bits<T>(ushmemi_nv_g_word((const W *)src, pe));
}

/* Strided puts and gets: element i of the group's share, one p or g each. */
template <typename T>
USHMEMI_NV_DEV void ushmemi_nv_iput(T *dest, const T *src, ptrdiff_t dst, ptrdiff_t sst,
                                    size_t nelems, int pe, ushmemi_dev_scope scope)
{
    unsigned rank = ushmemi_dev_group_rank(scope), size = ushmemi_dev_group_size(scope);
    ushmemi_dev_group_sync(scope);
    for (size_t i = rank; i < nelems; i += size)
        ushmemi_nv_p(dest + (ptrdiff_t)i * dst, src[(ptrdiff_t)i * sst], pe);
    ushmemi_dev_group_sync(scope);
}

template <typename T>
USHMEMI_NV_DEV void ushmemi_nv_iget(T *dest, const T *src, ptrdiff_t dst, ptrdiff_t sst,
                                    size_t nelems, int pe, ushmemi_dev_scope scope)
{
    unsigned rank = ushmemi_dev_group_rank(scope), size = ushmemi_dev_group_size(scope);
    ushmemi_dev_group_sync(scope);
    for (size_t i = rank; i < nelems; i += size)
        dest[(ptrdiff_t)i * dst] = ushmemi_nv_g(src + (ptrdiff_t)i * sst, pe);
    ushmemi_dev_group_sync(scope);
}

/* A word of this PE, with acquire for 4 and 8 bytes (2-byte words, short
 * and ushort, are read volatile after a fence). */
template <typename T> USHMEMI_NV_DEV T ushmemi_nv_load(const T *ivar)
{
    if (sizeof(T) == 4 || sizeof(T) == 8) {
        T v;
        ushmemi_dev_unbits(ushmemi_dev_load_bits(ivar, sizeof(T)), &v, sizeof(T));
        return v;
    }
    T v = *(const volatile T *)ivar;
    __threadfence_system();
    return v;
}

template <typename T> USHMEMI_NV_DEV int ushmemi_nv_compare(T a, int cmp, T b)
{
    switch (cmp) {
    case NVSHMEM_CMP_EQ: return a == b;
    case NVSHMEM_CMP_NE: return a != b;
    case NVSHMEM_CMP_GT: return a > b;
    case NVSHMEM_CMP_GE: return a >= b;
    case NVSHMEM_CMP_LT: return a < b;
    case NVSHMEM_CMP_LE: return a <= b;
    default: return 1;
    }
}

template <typename T> USHMEMI_NV_DEV int ushmemi_nv_test(T *ivar, int cmp, T value)
{
    return ushmemi_nv_compare(ushmemi_nv_load(ivar), cmp, value);
}

template <typename T> USHMEMI_NV_DEV void ushmemi_nv_wait_until(T *ivar, int cmp, T value)
{
    unsigned spins = 0;
    while (!ushmemi_nv_test(ivar, cmp, value))
        ushmem_ring_backoff(&spins);
}

/* The _all, _any and _some waits and tests, over nelems words (status[i]
 * nonzero leaves word i out; NULL: none left out). */
template <typename T>
USHMEMI_NV_DEV int ushmemi_nv_test_all(T *ivars, size_t nelems, const int *status, int cmp,
                                       const T *values, int vector)
{
    for (size_t i = 0; i < nelems; i++)
        if ((status == NULL || !status[i]) &&
            !ushmemi_nv_test(&ivars[i], cmp, vector ? values[i] : values[0]))
            return 0;
    return 1;
}

template <typename T>
USHMEMI_NV_DEV size_t ushmemi_nv_test_any(T *ivars, size_t nelems, const int *status, int cmp,
                                          const T *values, int vector)
{
    for (size_t i = 0; i < nelems; i++)
        if ((status == NULL || !status[i]) &&
            ushmemi_nv_test(&ivars[i], cmp, vector ? values[i] : values[0]))
            return i;
    return SIZE_MAX;
}

template <typename T>
USHMEMI_NV_DEV size_t ushmemi_nv_test_some(T *ivars, size_t nelems, size_t *indices,
                                           const int *status, int cmp, const T *values,
                                           int vector)
{
    size_t n = 0;
    for (size_t i = 0; i < nelems; i++)
        if ((status == NULL || !status[i]) &&
            ushmemi_nv_test(&ivars[i], cmp, vector ? values[i] : values[0]))
            indices[n++] = i;
    return n;
}

/* Reduction operators. */
enum { USHMEMI_NV_SUM, USHMEMI_NV_PROD, USHMEMI_NV_MIN, USHMEMI_NV_MAX, USHMEMI_NV_AND,
       USHMEMI_NV_OR, USHMEMI_NV_XOR };
template <int OP> struct ushmemi_nv_op;
template <> struct ushmemi_nv_op<USHMEMI_NV_SUM> {
    template <typename T> __device__ static T apply(T a, T b) { return a + b; }
};
template <> struct ushmemi_nv_op<USHMEMI_NV_PROD> {
    template <typename T> __device__ static T apply(T a, T b) { return a * b; }
};
template <> struct ushmemi_nv_op<USHMEMI_NV_MIN> {
    template <typename T> __device__ static T apply(T a, T b) { return b < a ? b : a; }
};
template <> struct ushmemi_nv_op<USHMEMI_NV_MAX> {
    template <typename T> __device__ static T apply(T a, T b) { return b > a ? b : a; }
};
template <> struct ushmemi_nv_op<USHMEMI_NV_AND> {
    template <typename T> __device__ static T apply(T a, T b) { return a & b; }
};
template <> struct ushmemi_nv_op<USHMEMI_NV_OR> {
    template <typename T> __device__ static T apply(T a, T b) { return a | b; }
};
template <> struct ushmemi_nv_op<USHMEMI_NV_XOR> {
    template <typename T> __device__ static T apply(T a, T b) { return a ^ b; }
};
/* MAXLOC over double2 {value, location}: the larger value, the smaller
 * location on a tie. */
struct ushmemi_nv_maxloc {
    __device__ static double2 apply(double2 a, double2 b)
    {
        return b.x > a.x || (b.x == a.x && b.y < a.y) ? b : a;
    }
};

/* Element i of PE pe's source through the proxy (pe's heap not mapped for
 * RMA; the element lies in the heap, so the 8-byte words around it do
 * too), and the group's barrier. Inline: a function of its own costs every
 * kernel built with relocatable device code (-rdc, as NVSHMEM programs are)
 * the registers ptxas gives such functions, more than a block of 1024
 * threads has. */
template <typename T> USHMEMI_NV_DEV T ushmemi_nv_read_far(const T *src, size_t i, int pe)
{
    /* The 8-byte words the element lies in (one, or two for a 16-byte
     * element: every type is aligned to its size), each as an atomic fetch
     * through the proxy (the value travels back in the ring),
     * the element's bytes shifted out of them (little-endian). A get into
     * a thread's own memory, or the bytes copied through an array, inlines
     * far more code, and every register it takes counts in the kernel's
     * budget whether or not this road is ever taken. */
    const uintptr_t at = (uintptr_t)(src + i), first = at & ~(uintptr_t)7;
    uint64_t words[2] = {0, 0};
    T v;

    for (unsigned w = 0; w < (sizeof(T) + 7) / 8; w++)
        words[w] = ushmemi_dev_amo_proxy(ushmemi_dev_state_fresh(), (void *)(first + 8 * w), pe,
                                         USHMEM_RING_AMO_FETCH, USHMEM_RING_AMO_UINT64, 8, 0, 0,
                                         1);
    words[0] >>= sizeof(T) < 8 ? 8 * (at - first) : 0;
    memcpy(&v, words, sizeof(T));
    return v;
}

USHMEMI_NV_DEV void ushmemi_nv_group_barrier(ushmemi_dev_scope scope)
{
    ushmemi_dev_group_barrier(scope, 1);
}

/* A reduction over every PE by the threads of `scope` (the world; t, when
 * not NULL, another team: ushmemi_nv_reduce_team): dest[i] = OP over PEs
 * 0, 1, ... of their source[offset + i], PEs taken in order so that
 * every PE computes the same bits; offset is 0 for reduce and my_pe *
 * nreduce for reducescatter (`scatter`). A barrier
 * before (every source is written) and after (no source changes while a
 * peer reads it). Where every PE's heap is mapped and dest is not the
 * source, each thread takes U elements a round from G PEs at once (a
 * peer's load takes a microsecond; G * U loads in flight whatever the PE
 * count), combines them in PE order in registers and stores each element
 * of dest once (ushmemi_nv_reduce_rounds); otherwise one element a thread
 * a round (ushmemi_nv_reduce_any). The two forms are apart so that the
 * gets' code does not add to the registers of the loads' (a block of 1024
 * threads has 64 a thread). */
template <typename OP, typename T, int G, int U>
USHMEMI_NV_DEV void ushmemi_nv_reduce_rounds(const struct ushmem_device_state *s, unsigned rank,
                                             unsigned size, T *dest, const T *own,
                                             size_t nreduce)
{
    const int n = s->n_pes;

    for (size_t base = 0; base < nreduce; base += (size_t)size * U) {
        T acc[U];
        for (int pe0 = 0; pe0 < n; pe0 += G) {
            T v[G][U];
#pragma unroll
            for (int g = 0; g < G; g++) {
                const T *p = pe0 + g < n ? (const T *)ushmemi_dev_mapped(
                                               s, own, pe0 + g, USHMEM_DEVICE_CLASS_RMA)
                                         : NULL;
#pragma unroll
                for (int u = 0; u < U; u++) {
                    size_t i = base + rank + (size_t)u * size;
                    v[g][u] = p != NULL && i < nreduce ? p[i] : T();
                }
            }
#pragma unroll
            for (int g = 0; g < G; g++) {
#pragma unroll
                for (int u = 0; u < U; u++) {
                    if (pe0 + g < n)
                        acc[u] = pe0 + g == 0 ? v[g][u] : OP::apply(acc[u], v[g][u]);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            size_t i = base + rank + (size_t)u * size;
            if (i < nreduce)
                dest[i] = acc[u];
        }
    }
}

/* Four loads in flight a thread (L = 4: 1-, 2- and 8-byte elements, at
 * every scope), shaped by the PE count at run time: two PEs by two
 * elements a round where there are at most two PEs, four PEs by one
 * element otherwise. Those are ushmemi_nv_reduce_rounds<2, 2> and <4, 1>,
 * combined in the same PE order, in one body. Both inlined into one
 * kernel took a loop of collectives of ints and doubles on a team
 * argument to 80 registers at warp scope, and <2, 2> for every PE count
 * at thread scope took it to 72; this takes both to 64
 * (nvshmem-registers-loops' mixed_team_*). */
template <typename OP, typename T>
USHMEMI_NV_DEV void ushmemi_nv_reduce_rounds4(const struct ushmem_device_state *s, unsigned rank,
                                              unsigned size, T *dest, const T *own,
                                              size_t nreduce)
{
    const int n = s->n_pes;
    const bool two = n <= 2;

    for (size_t base = 0; base < nreduce; base += two ? (size_t)size * 2 : size) {
        T acc0 = T(), acc1 = T();
        for (int pe0 = 0; pe0 < n; pe0 += 4) {
            T v[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int pe = two ? (k & 1) : pe0 + k;
                const size_t i = base + rank + (two && k >= 2 ? size : 0);
                const T *p = pe < n ? (const T *)ushmemi_dev_mapped(s, own, pe,
                                                                    USHMEM_DEVICE_CLASS_RMA)
                                    : NULL;
                v[k] = p != NULL && i < nreduce ? p[i] : T();
            }
            if (two) {
                acc0 = n > 1 ? OP::apply(v[0], v[1]) : v[0];
                acc1 = n > 1 ? OP::apply(v[2], v[3]) : v[2];
            } else {
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    if (pe0 + k < n)
                        acc0 = pe0 + k == 0 ? v[k] : OP::apply(acc0, v[k]);
                }
            }
        }
        const size_t i = base + rank;
        if (i < nreduce)
            dest[i] = acc0;
        if (two && i + size < nreduce)
            dest[i + size] = acc1;
    }
}

/* Every other case: some PE through the proxy, or dest the source itself.
 * A round of one element a thread, each PE's by a load or a get, PEs in
 * order; where dest is the source, the group meets after reading a round
 * and before writing it. One place that gets and one that meets: each is
 * much inlined code, and a copy of it in each branch took a reduce-scatter
 * called in a loop to 95 registers. */
template <typename OP, typename T, bool TEAM>
USHMEMI_NV_DEV void ushmemi_nv_reduce_any(const struct ushmem_device_state *s,
                                          const struct ushmem_device_team *t,
                                          ushmemi_dev_scope scope, T *dest, const T *own,
                                          size_t nreduce, int overlap)
{
    const unsigned rank = ushmemi_dev_group_rank(scope), size = ushmemi_dev_group_size(scope);

    for (size_t base = 0; base < nreduce; base += size) {
        size_t i = base + rank;
        T acc = T();
        /* TEAM: team t's members; otherwise (t NULL) the world's PEs,
         * with the world's code as it was. */
        for (int m = 0; m < (TEAM ? t->size : s->n_pes) && i < nreduce; m++) {
            const int pe = TEAM ? ushmemi_dev_team_pe(t, m) : m;
            const T *p = (const T *)ushmemi_dev_mapped(s, own, pe, USHMEM_DEVICE_CLASS_RMA);
            T v = p != NULL ? p[i] : ushmemi_nv_read_far(own, i, pe);
            acc = m == 0 ? v : OP::apply(acc, v);
        }
        if (overlap && TEAM)
            ushmemi_dev_group_team_barrier(scope, t, 1);
        else if (overlap)
            ushmemi_nv_group_barrier(scope);
        if (i < nreduce)
            dest[i] = acc;
    }
}

/* The same reduction over a team other than the world, its members in
 * their order: always one element a thread a round (ushmemi_nv_reduce_any),
 * between the team's barriers. A function of its own: inlined beside the
 * world's, it changed how the compiler laid out the world's thread-scope
 * reductions (20 % more PTX in a kernel that passes NVSHMEM_TEAM_WORLD);
 * called, the world's code is what it was, instruction for instruction. */
template <typename OP, typename T>
USHMEMI_NV_DEV int ushmemi_nv_reduce_team(ushmemi_dev_scope scope,
                                          const struct ushmem_device_team *t, T *dest,
                                          const T *source, size_t nreduce, int scatter)
{
    const T *own = source + (scatter ? (size_t)t->my_index * nreduce : 0);
    const T *end = source + (scatter ? (size_t)t->size * nreduce : nreduce);
    const int overlap = (const void *)dest < (const void *)end &&
                        (const void *)source < (const void *)(dest + nreduce);

    ushmemi_dev_group_team_barrier(scope, t, 1);
    ushmemi_nv_reduce_any<OP, T, true>(ushmemi_dev_state_fresh(), t, scope, dest, own, nreduce,
                                       overlap);
    ushmemi_dev_group_team_barrier(scope, t, 1);
    return 0;
}

template <typename OP, typename T>
USHMEMI_NV_DEV int ushmemi_nv_reduce_world(ushmemi_dev_scope scope, T *dest, const T *source,
                                           size_t nreduce, int scatter)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    /* my_pe read afresh (volatile): shared with the same load in the
     * inlined ring and barrier code, it took a reduce-scatter in a loop
     * from 52 registers to 72. */
    const T *own =
        source + (scatter ? (size_t)*(const volatile int *)&s->my_pe * nreduce : 0);
    /* Against the whole source (every member's block for reducescatter),
     * whose address every PE shares: each PE takes the same path and meets
     * its peers as often (a PE whose own block alone overlapped dest met
     * them each round while the others did not, and hung). */
    const T *end = source + (scatter ? (size_t)s->n_pes * nreduce : nreduce);
    const int overlap = (const void *)dest < (const void *)end &&
                        (const void *)source < (const void *)(dest + nreduce);
    int mapped = 1;

    for (int pe = 0; pe < s->n_pes && mapped; pe++)
        mapped = ushmemi_dev_mapped(s, own, pe, USHMEM_DEVICE_CLASS_RMA) != NULL;
    ushmemi_nv_group_barrier(scope);
    if (mapped && !overlap) {
        /* The rounds, like the test of the paths above, take the plain
         * state: its fields are operands of the address arithmetic, not
         * loads of their own in every round (the barriers and the gets
         * read it afresh, ushmemi_dev_state_fresh). L loads in flight a
         * thread: as many as fit 64 registers (a 16-bit float takes the
         * registers of a 32-bit one, and more code) in a kernel that
         * calls reductions in a loop (nvshmem-registers-loops); at thread
         * scope, whose barrier is more inlined code, at most 4. */
        const unsigned rank = ushmemi_dev_group_rank(scope), size = ushmemi_dev_group_size(scope);
        constexpr int L = sizeof(T) >= 16 ? 2 : sizeof(T) == 4 ? 8 : 4, G = L < 4 ? L : 4;
        if (L == 4)
            ushmemi_nv_reduce_rounds4<OP, T>(s, rank, size, dest, own, nreduce);
        else if (scope == USHMEMI_DEV_THREAD)
            ushmemi_nv_reduce_rounds<OP, T, 2, (L >= 4 ? 2 : 1)>(s, rank, size, dest, own,
                                                                 nreduce);
        else if (s->n_pes <= 2)
            ushmemi_nv_reduce_rounds<OP, T, 2, L / 2>(s, rank, size, dest, own, nreduce);
        else
            ushmemi_nv_reduce_rounds<OP, T, G, L / G>(s, rank, size, dest, own, nreduce);
    } else {
        ushmemi_nv_reduce_any<OP, T, false>(ushmemi_dev_state_fresh(), NULL, scope, dest, own,
                                            nreduce, overlap);
    }
    ushmemi_nv_group_barrier(scope);
    return 0;
}

template <typename OP, typename T>
USHMEMI_NV_DEV int ushmemi_nv_reduce(ushmemi_dev_scope scope, const struct ushmem_device_team *t,
                                     T *dest, const T *source, size_t nreduce, int scatter)
{
    if (t != NULL)
        return ushmemi_nv_reduce_team<OP, T>(scope, t, dest, source, nreduce, scatter);
    return ushmemi_nv_reduce_world<OP, T>(scope, dest, source, nreduce, scatter);
}
#endif /* __CUDACC__ */

/* ---- Type lists: X(NAME, TYPE) ----
 * RMA: OpenSHMEM's standard RMA types (shmem_rma.h) but long double, as
 * NVSHMEM has them, and its 16-bit floats. */
#define USHMEMI_NV_PLAIN_RMA_TYPES(X)                                                      \
    X(float, float)                                                                        \
    X(double, double)                                                                      \
    X(char, char)                                                                          \
    X(short, short)                                                                        \
    X(schar, signed char)                                                                  \
    X(int, int)                                                                            \
    X(long, long)                                                                          \
    X(longlong, long long)                                                                 \
    X(uchar, unsigned char)                                                                \
    X(ushort, unsigned short)                                                              \
    X(uint, unsigned int)                                                                  \
    X(ulong, unsigned long)                                                                \
    X(ulonglong, unsigned long long)                                                       \
    X(int8, int8_t)                                                                        \
    X(int16, int16_t)                                                                      \
    X(int32, int32_t)                                                                      \
    X(int64, int64_t)                                                                      \
    X(uint8, uint8_t)                                                                      \
    X(uint16, uint16_t)                                                                    \
    X(uint32, uint32_t)                                                                    \
    X(uint64, uint64_t)                                                                    \
    X(size, size_t)                                                                        \
    X(ptrdiff, ptrdiff_t)
/* The 16-bit floating types, where the compiler has them (C++). */
#if defined(__cplusplus)
#define USHMEMI_NV_HALF_TYPES(X) X(half, half) X(bfloat16, __nv_bfloat16)
#else
#define USHMEMI_NV_HALF_TYPES(X)
#endif
#define USHMEMI_NV_RMA_TYPES(X) USHMEMI_NV_PLAIN_RMA_TYPES(X) USHMEMI_NV_HALF_TYPES(X)

/* Waits and atomics: the same type sets as OpenSHMEM's (shmem_rma.h). */
#define USHMEMI_NV_WAIT_TYPES(X) USHMEMI_SYNC_OLD_TYPES(X) USHMEMI_SYNC_TYPES(X)
#define USHMEMI_NV_AMO_STD_TYPES(X) USHMEMI_AMO_STD_TYPES(X)
#define USHMEMI_NV_AMO_EXT_TYPES(X) USHMEMI_AMO_STD_TYPES(X) USHMEMI_AMO_EXT_TYPES(X)
#define USHMEMI_NV_AMO_BIT_TYPES(X) USHMEMI_AMO_BIT_TYPES(X)

/* Reductions: the bitwise types (and, or, xor, and the arithmetic ones
 * too), then the other arithmetic types (sum, prod, min, max). */
#define USHMEMI_NV_RED_BIT_TYPES(X) USHMEMI_COLL_BITWISE_TYPES(X)
#define USHMEMI_NV_RED_PLAIN_ARITH_TYPES(X)                                                \
    X(char, char)                                                                          \
    X(schar, signed char)                                                                  \
    X(short, short)                                                                        \
    X(int, int)                                                                            \
    X(long, long)                                                                          \
    X(longlong, long long)                                                                 \
    X(float, float)                                                                        \
    X(double, double)
#define USHMEMI_NV_RED_ARITH_TYPES(X)                                                      \
    USHMEMI_NV_RED_BIT_TYPES(X) USHMEMI_NV_RED_PLAIN_ARITH_TYPES(X) USHMEMI_NV_HALF_TYPES(X)

/* Scopes of the group calls: X(SUFFIX, SCOPE). */
#define USHMEMI_NV_GROUP_SCOPES(X) X(_warp, USHMEMI_DEV_WARP) X(_block, USHMEMI_DEV_BLOCK)

/* ---- RMA ---- */

/* One thread's bytes, on either side. */
USHMEMI_NV_HD void ushmemi_nv_putmem(void *dest, const void *src, size_t nbytes, int pe, int nbi)
{
#if USHMEMI_NV_ON_DEVICE
    ushmemi_dev_put(dest, src, nbytes, pe, nbi, USHMEMI_DEV_THREAD);
#else
    if (nbi)
        shmem_putmem_nbi(dest, src, nbytes, pe);
    else
        shmem_putmem(dest, src, nbytes, pe);
#endif
}

USHMEMI_NV_HD void ushmemi_nv_getmem(void *dest, const void *src, size_t nbytes, int pe, int nbi)
{
#if USHMEMI_NV_ON_DEVICE
    ushmemi_dev_get(dest, src, nbytes, pe, nbi, USHMEMI_DEV_THREAD);
#else
    if (nbi)
        shmem_getmem_nbi(dest, src, nbytes, pe);
    else
        shmem_getmem(dest, src, nbytes, pe);
#endif
}

USHMEMI_NV_HD void nvshmem_putmem(void *dest, const void *src, size_t nbytes, int pe)
{
    ushmemi_nv_putmem(dest, src, nbytes, pe, 0);
}

USHMEMI_NV_HD void nvshmem_getmem(void *dest, const void *src, size_t nbytes, int pe)
{
    ushmemi_nv_getmem(dest, src, nbytes, pe, 0);
}

USHMEMI_NV_HD void nvshmem_putmem_nbi(void *dest, const void *src, size_t nbytes, int pe)
{
    ushmemi_nv_putmem(dest, src, nbytes, pe, 1);
}

USHMEMI_NV_HD void nvshmem_getmem_nbi(void *dest, const void *src, size_t nbytes, int pe)
{
    ushmemi_nv_getmem(dest, src, nbytes, pe, 1);
}

/* p, g and the strided forms: one word at a time, whatever its type, on
 * the device; the host moves the bytes. */
#if defined(__CUDACC__)
template <typename T> USHMEMI_NV_HD void ushmemi_nv_p_hd(T *dest, T value, int pe)
{
#if USHMEMI_NV_ON_DEVICE
    ushmemi_nv_p(dest, value, pe);
#else
    shmem_putmem(dest, &value, sizeof(T), pe);
#endif
}

template <typename T> USHMEMI_NV_HD T ushmemi_nv_g_hd(const T *src, int pe)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmemi_nv_g(src, pe);
#else
    T value;
    shmem_getmem(&value, src, sizeof(T), pe);
    return value;
#endif
}

template <typename T>
USHMEMI_NV_HD void ushmemi_nv_i_hd(T *dest, const T *src, ptrdiff_t dst, ptrdiff_t sst,
                                   size_t nelems, int pe, int put)
{
#if USHMEMI_NV_ON_DEVICE
    if (put)
        ushmemi_nv_iput(dest, src, dst, sst, nelems, pe, USHMEMI_DEV_THREAD);
    else
        ushmemi_nv_iget(dest, src, dst, sst, nelems, pe, USHMEMI_DEV_THREAD);
#else
    for (size_t i = 0; i < nelems; i++) {
        if (put)
            shmem_putmem(dest + (ptrdiff_t)i * dst, src + (ptrdiff_t)i * sst, sizeof(T), pe);
        else
            shmem_getmem(dest + (ptrdiff_t)i * dst, src + (ptrdiff_t)i * sst, sizeof(T), pe);
    }
#endif
}
#define USHMEMI_NV_P(T, dest, value, pe) ushmemi_nv_p_hd<T>(dest, value, pe)
#define USHMEMI_NV_G(T, src, pe) return ushmemi_nv_g_hd<T>(src, pe)
#define USHMEMI_NV_I(T, dest, src, dst, sst, nelems, pe, put)                              \
    ushmemi_nv_i_hd<T>(dest, src, dst, sst, nelems, pe, put)
#else
#define USHMEMI_NV_P(T, dest, value, pe) shmem_putmem(dest, &value, sizeof(T), pe)
#define USHMEMI_NV_G(T, src, pe)                                                           \
    T value;                                                                               \
    shmem_getmem(&value, src, sizeof(T), pe);                                              \
    return value
#define USHMEMI_NV_I(T, dest, src, dst, sst, nelems, pe, put)                              \
    for (size_t i = 0; i < nelems; i++) {                                                  \
        if (put)                                                                           \
            shmem_putmem(dest + (ptrdiff_t)i * dst, src + (ptrdiff_t)i * sst, sizeof(T), pe); \
        else                                                                               \
            shmem_getmem(dest + (ptrdiff_t)i * dst, src + (ptrdiff_t)i * sst, sizeof(T), pe); \
    }
#endif
#define USHMEMI_NV_RMA_TYPED(NAME, T)                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_put(T *dest, const T *src, size_t nelems, int pe)  \
    {                                                                                      \
        ushmemi_nv_putmem(dest, src, nelems * sizeof(T), pe, 0);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_get(T *dest, const T *src, size_t nelems, int pe)  \
    {                                                                                      \
        ushmemi_nv_getmem(dest, src, nelems * sizeof(T), pe, 0);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_put_nbi(T *dest, const T *src, size_t nelems,      \
                                                int pe)                                    \
    {                                                                                      \
        ushmemi_nv_putmem(dest, src, nelems * sizeof(T), pe, 1);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_get_nbi(T *dest, const T *src, size_t nelems,      \
                                                int pe)                                    \
    {                                                                                      \
        ushmemi_nv_getmem(dest, src, nelems * sizeof(T), pe, 1);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_p(T *dest, T value, int pe)                        \
    {                                                                                      \
        USHMEMI_NV_P(T, dest, value, pe);                                                  \
    }                                                                                      \
    USHMEMI_NV_HD T nvshmem_##NAME##_g(const T *src, int pe)                               \
    {                                                                                      \
        USHMEMI_NV_G(T, src, pe);                                                          \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_iput(T *dest, const T *src, ptrdiff_t dst,         \
                                             ptrdiff_t sst, size_t nelems, int pe)         \
    {                                                                                      \
        USHMEMI_NV_I(T, dest, src, dst, sst, nelems, pe, 1);                               \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_iget(T *dest, const T *src, ptrdiff_t dst,         \
                                             ptrdiff_t sst, size_t nelems, int pe)         \
    {                                                                                      \
        USHMEMI_NV_I(T, dest, src, dst, sst, nelems, pe, 0);                               \
    }
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_RMA_TYPED)
#undef USHMEMI_NV_RMA_TYPED

/* Sized forms: nvshmem_put32(dest, src, nelems, pe) and friends. */
#define USHMEMI_NV_SIZES(X) X(8, uint8_t) X(16, uint16_t) X(32, uint32_t) X(64, uint64_t)
#define USHMEMI_NV_RMA_SIZED(BITS, T)                                                      \
    USHMEMI_NV_HD void nvshmem_put##BITS(void *dest, const void *src, size_t nelems, int pe) \
    {                                                                                      \
        ushmemi_nv_putmem(dest, src, nelems * (BITS / 8), pe, 0);                          \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_get##BITS(void *dest, const void *src, size_t nelems, int pe) \
    {                                                                                      \
        ushmemi_nv_getmem(dest, src, nelems * (BITS / 8), pe, 0);                          \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_put##BITS##_nbi(void *dest, const void *src, size_t nelems, \
                                               int pe)                                     \
    {                                                                                      \
        ushmemi_nv_putmem(dest, src, nelems * (BITS / 8), pe, 1);                          \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_get##BITS##_nbi(void *dest, const void *src, size_t nelems, \
                                               int pe)                                     \
    {                                                                                      \
        ushmemi_nv_getmem(dest, src, nelems * (BITS / 8), pe, 1);                          \
    }
USHMEMI_NV_SIZES(USHMEMI_NV_RMA_SIZED)
USHMEMI_NV_RMA_SIZED(128, uint64_t)
#undef USHMEMI_NV_RMA_SIZED

#if defined(__CUDACC__)
/* The warp and block forms: every thread of the group calls with the same
 * arguments and they share the copy. */
#define USHMEMI_NV_RMA_GROUP_MEM(SUFFIX, SCOPE)                                            \
    USHMEMI_NV_DEV void nvshmemx_putmem##SUFFIX(void *dest, const void *src, size_t nbytes, \
                                                int pe)                                    \
    {                                                                                      \
        ushmemi_dev_put(dest, src, nbytes, pe, 0, SCOPE);                                  \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_getmem##SUFFIX(void *dest, const void *src, size_t nbytes, \
                                                int pe)                                    \
    {                                                                                      \
        ushmemi_dev_get(dest, src, nbytes, pe, 0, SCOPE);                                  \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_putmem_nbi##SUFFIX(void *dest, const void *src,           \
                                                    size_t nbytes, int pe)                 \
    {                                                                                      \
        ushmemi_dev_put(dest, src, nbytes, pe, 1, SCOPE);                                  \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_getmem_nbi##SUFFIX(void *dest, const void *src,           \
                                                    size_t nbytes, int pe)                 \
    {                                                                                      \
        ushmemi_dev_get(dest, src, nbytes, pe, 1, SCOPE);                                  \
    }
USHMEMI_NV_GROUP_SCOPES(USHMEMI_NV_RMA_GROUP_MEM)
#undef USHMEMI_NV_RMA_GROUP_MEM

#define USHMEMI_NV_RMA_GROUP_TYPED_SCOPE(NAME, T, SUFFIX, SCOPE)                           \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_put##SUFFIX(T *dest, const T *src, size_t nelems, \
                                                      int pe)                              \
    {                                                                                      \
        ushmemi_dev_put(dest, src, nelems * sizeof(T), pe, 0, SCOPE);                      \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_get##SUFFIX(T *dest, const T *src, size_t nelems, \
                                                      int pe)                              \
    {                                                                                      \
        ushmemi_dev_get(dest, src, nelems * sizeof(T), pe, 0, SCOPE);                      \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_put_nbi##SUFFIX(T *dest, const T *src,           \
                                                          size_t nelems, int pe)           \
    {                                                                                      \
        ushmemi_dev_put(dest, src, nelems * sizeof(T), pe, 1, SCOPE);                      \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_get_nbi##SUFFIX(T *dest, const T *src,           \
                                                          size_t nelems, int pe)           \
    {                                                                                      \
        ushmemi_dev_get(dest, src, nelems * sizeof(T), pe, 1, SCOPE);                      \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_iput##SUFFIX(T *dest, const T *src, ptrdiff_t dst, \
                                                       ptrdiff_t sst, size_t nelems, int pe) \
    {                                                                                      \
        ushmemi_nv_iput(dest, src, dst, sst, nelems, pe, SCOPE);                           \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_iget##SUFFIX(T *dest, const T *src, ptrdiff_t dst, \
                                                       ptrdiff_t sst, size_t nelems, int pe) \
    {                                                                                      \
        ushmemi_nv_iget(dest, src, dst, sst, nelems, pe, SCOPE);                           \
    }
#define USHMEMI_NV_RMA_GROUP_TYPED(NAME, T)                                                \
    USHMEMI_NV_RMA_GROUP_TYPED_SCOPE(NAME, T, _warp, USHMEMI_DEV_WARP)                     \
    USHMEMI_NV_RMA_GROUP_TYPED_SCOPE(NAME, T, _block, USHMEMI_DEV_BLOCK)
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_RMA_GROUP_TYPED)
#undef USHMEMI_NV_RMA_GROUP_TYPED
#undef USHMEMI_NV_RMA_GROUP_TYPED_SCOPE

#define USHMEMI_NV_RMA_GROUP_SIZED_SCOPE(BITS, SUFFIX, SCOPE)                              \
    USHMEMI_NV_DEV void nvshmemx_put##BITS##SUFFIX(void *dest, const void *src,            \
                                                   size_t nelems, int pe)                  \
    {                                                                                      \
        ushmemi_dev_put(dest, src, nelems * (BITS / 8), pe, 0, SCOPE);                     \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_get##BITS##SUFFIX(void *dest, const void *src,            \
                                                   size_t nelems, int pe)                  \
    {                                                                                      \
        ushmemi_dev_get(dest, src, nelems * (BITS / 8), pe, 0, SCOPE);                     \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_put##BITS##_nbi##SUFFIX(void *dest, const void *src,      \
                                                         size_t nelems, int pe)            \
    {                                                                                      \
        ushmemi_dev_put(dest, src, nelems * (BITS / 8), pe, 1, SCOPE);                     \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_get##BITS##_nbi##SUFFIX(void *dest, const void *src,      \
                                                         size_t nelems, int pe)            \
    {                                                                                      \
        ushmemi_dev_get(dest, src, nelems * (BITS / 8), pe, 1, SCOPE);                     \
    }
#define USHMEMI_NV_RMA_GROUP_SIZED(BITS, T)                                                \
    USHMEMI_NV_RMA_GROUP_SIZED_SCOPE(BITS, _warp, USHMEMI_DEV_WARP)                        \
    USHMEMI_NV_RMA_GROUP_SIZED_SCOPE(BITS, _block, USHMEMI_DEV_BLOCK)
USHMEMI_NV_SIZES(USHMEMI_NV_RMA_GROUP_SIZED)
USHMEMI_NV_RMA_GROUP_SIZED(128, uint64_t)
#undef USHMEMI_NV_RMA_GROUP_SIZED
#undef USHMEMI_NV_RMA_GROUP_SIZED_SCOPE
#endif /* __CUDACC__ */

/* ---- Put with signal, signals ---- */

USHMEMI_NV_HD void ushmemi_nv_putmem_signal(void *dest, const void *src, size_t nbytes,
                                            uint64_t *sig_addr, uint64_t signal, int sig_op,
                                            int pe, int nbi)
{
#if USHMEMI_NV_ON_DEVICE
    (void)nbi;
    ushmemi_dev_put_signal(dest, src, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_THREAD);
#else
    if (nbi)
        shmem_putmem_signal_nbi(dest, src, nbytes, sig_addr, signal, sig_op, pe);
    else
        shmem_putmem_signal(dest, src, nbytes, sig_addr, signal, sig_op, pe);
#endif
}

USHMEMI_NV_HD void nvshmem_putmem_signal(void *dest, const void *src, size_t nbytes,
                                         uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    ushmemi_nv_putmem_signal(dest, src, nbytes, sig_addr, signal, sig_op, pe, 0);
}

USHMEMI_NV_HD void nvshmem_putmem_signal_nbi(void *dest, const void *src, size_t nbytes,
                                             uint64_t *sig_addr, uint64_t signal, int sig_op,
                                             int pe)
{
    ushmemi_nv_putmem_signal(dest, src, nbytes, sig_addr, signal, sig_op, pe, 1);
}

#define USHMEMI_NV_PUT_SIGNAL_TYPED(NAME, T)                                               \
    USHMEMI_NV_HD void nvshmem_##NAME##_put_signal(T *dest, const T *src, size_t nelems,   \
                                                   uint64_t *sig_addr, uint64_t signal,    \
                                                   int sig_op, int pe)                     \
    {                                                                                      \
        ushmemi_nv_putmem_signal(dest, src, nelems * sizeof(T), sig_addr, signal, sig_op, pe, \
                                 0);                                                       \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_put_signal_nbi(T *dest, const T *src, size_t nelems, \
                                                       uint64_t *sig_addr, uint64_t signal, \
                                                       int sig_op, int pe)                 \
    {                                                                                      \
        ushmemi_nv_putmem_signal(dest, src, nelems * sizeof(T), sig_addr, signal, sig_op, pe, \
                                 1);                                                       \
    }
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_PUT_SIGNAL_TYPED)
#undef USHMEMI_NV_PUT_SIGNAL_TYPED

#define USHMEMI_NV_PUT_SIGNAL_SIZED(BITS, T)                                               \
    USHMEMI_NV_HD void nvshmem_put##BITS##_signal(void *dest, const void *src, size_t nelems, \
                                                  uint64_t *sig_addr, uint64_t signal,     \
                                                  int sig_op, int pe)                      \
    {                                                                                      \
        ushmemi_nv_putmem_signal(dest, src, nelems * (BITS / 8), sig_addr, signal, sig_op, \
                                 pe, 0);                                                   \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_put##BITS##_signal_nbi(void *dest, const void *src,         \
                                                      size_t nelems, uint64_t *sig_addr,   \
                                                      uint64_t signal, int sig_op, int pe) \
    {                                                                                      \
        ushmemi_nv_putmem_signal(dest, src, nelems * (BITS / 8), sig_addr, signal, sig_op, \
                                 pe, 1);                                                   \
    }
USHMEMI_NV_SIZES(USHMEMI_NV_PUT_SIGNAL_SIZED)
USHMEMI_NV_PUT_SIGNAL_SIZED(128, uint64_t)
#undef USHMEMI_NV_PUT_SIGNAL_SIZED

#if defined(__CUDACC__)
#define USHMEMI_NV_PUT_SIGNAL_GROUP(SUFFIX, SCOPE)                                         \
    USHMEMI_NV_DEV void nvshmemx_putmem_signal##SUFFIX(void *dest, const void *src,        \
                                                       size_t nbytes, uint64_t *sig_addr,  \
                                                       uint64_t signal, int sig_op, int pe) \
    {                                                                                      \
        ushmemi_dev_put_signal(dest, src, nbytes, sig_addr, signal, sig_op, pe, SCOPE);    \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_putmem_signal_nbi##SUFFIX(void *dest, const void *src,    \
                                                           size_t nbytes, uint64_t *sig_addr, \
                                                           uint64_t signal, int sig_op,    \
                                                           int pe)                         \
    {                                                                                      \
        ushmemi_dev_put_signal(dest, src, nbytes, sig_addr, signal, sig_op, pe, SCOPE);    \
    }
USHMEMI_NV_GROUP_SCOPES(USHMEMI_NV_PUT_SIGNAL_GROUP)
#undef USHMEMI_NV_PUT_SIGNAL_GROUP

#define USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED_SCOPE(NAME, T, SUFFIX, SCOPE)                    \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_put_signal##SUFFIX(                              \
        T *dest, const T *src, size_t nelems, uint64_t *sig_addr, uint64_t signal,         \
        int sig_op, int pe)                                                                \
    {                                                                                      \
        ushmemi_dev_put_signal(dest, src, nelems * sizeof(T), sig_addr, signal, sig_op, pe, \
                               SCOPE);                                                     \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_##NAME##_put_signal_nbi##SUFFIX(                          \
        T *dest, const T *src, size_t nelems, uint64_t *sig_addr, uint64_t signal,         \
        int sig_op, int pe)                                                                \
    {                                                                                      \
        ushmemi_dev_put_signal(dest, src, nelems * sizeof(T), sig_addr, signal, sig_op, pe, \
                               SCOPE);                                                     \
    }
#define USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED(NAME, T)                                         \
    USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED_SCOPE(NAME, T, _warp, USHMEMI_DEV_WARP)              \
    USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED_SCOPE(NAME, T, _block, USHMEMI_DEV_BLOCK)
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED)
#undef USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED
#undef USHMEMI_NV_PUT_SIGNAL_GROUP_TYPED_SCOPE
#endif /* __CUDACC__ */

USHMEMI_NV_HD void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
#if USHMEMI_NV_ON_DEVICE
    if (sig_op == NVSHMEM_SIGNAL_ADD)
        ushmemx_signal_add(sig_addr, signal, pe);
    else
        ushmemx_signal_set(sig_addr, signal, pe);
#else
    if (sig_op == NVSHMEM_SIGNAL_ADD)
        shmem_signal_add(sig_addr, signal, pe);
    else
        shmem_signal_set(sig_addr, signal, pe);
#endif
}

USHMEMI_NV_HD uint64_t nvshmem_signal_fetch(uint64_t *sig_addr)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_signal_fetch(sig_addr);
#else
    return shmem_signal_fetch(sig_addr);
#endif
}

USHMEMI_NV_HD uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_signal_wait_until(sig_addr, cmp, cmp_value);
#else
    return shmem_signal_wait_until(sig_addr, cmp, cmp_value);
#endif
}

/* ---- Atomics ---- */

#if defined(__CUDA_ARCH__)
#define USHMEMI_NV_AMO(NAME, OP, ...) ushmem_##NAME##_atomic_##OP(__VA_ARGS__)
#else
#define USHMEMI_NV_AMO(NAME, OP, ...) shmem_##NAME##_atomic_##OP(__VA_ARGS__)
#endif
#define USHMEMI_NV_AMO_EXT(NAME, T)                                                        \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_fetch(const T *source, int pe)                 \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, fetch, source, pe);                                    \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_atomic_set(T *dest, T value, int pe)               \
    {                                                                                      \
        USHMEMI_NV_AMO(NAME, set, dest, value, pe);                                        \
    }                                                                                      \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_swap(T *dest, T value, int pe)                 \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, swap, dest, value, pe);                                \
    }
USHMEMI_NV_AMO_EXT_TYPES(USHMEMI_NV_AMO_EXT)
#undef USHMEMI_NV_AMO_EXT

#define USHMEMI_NV_AMO_STD(NAME, T)                                                        \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_compare_swap(T *dest, T cond, T value, int pe) \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, compare_swap, dest, cond, value, pe);                  \
    }                                                                                      \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_fetch_add(T *dest, T value, int pe)            \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, fetch_add, dest, value, pe);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_atomic_add(T *dest, T value, int pe)               \
    {                                                                                      \
        USHMEMI_NV_AMO(NAME, add, dest, value, pe);                                        \
    }                                                                                      \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_fetch_inc(T *dest, int pe)                     \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, fetch_inc, dest, pe);                                  \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_atomic_inc(T *dest, int pe)                        \
    {                                                                                      \
        USHMEMI_NV_AMO(NAME, inc, dest, pe);                                               \
    }
USHMEMI_NV_AMO_STD_TYPES(USHMEMI_NV_AMO_STD)
#undef USHMEMI_NV_AMO_STD

#define USHMEMI_NV_AMO_BIT(NAME, T)                                                        \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_fetch_and(T *dest, T value, int pe)            \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, fetch_and, dest, value, pe);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_atomic_and(T *dest, T value, int pe)               \
    {                                                                                      \
        USHMEMI_NV_AMO(NAME, and, dest, value, pe);                                        \
    }                                                                                      \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_fetch_or(T *dest, T value, int pe)             \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, fetch_or, dest, value, pe);                            \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_atomic_or(T *dest, T value, int pe)                \
    {                                                                                      \
        USHMEMI_NV_AMO(NAME, or, dest, value, pe);                                         \
    }                                                                                      \
    USHMEMI_NV_HD T nvshmem_##NAME##_atomic_fetch_xor(T *dest, T value, int pe)            \
    {                                                                                      \
        return USHMEMI_NV_AMO(NAME, fetch_xor, dest, value, pe);                           \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_atomic_xor(T *dest, T value, int pe)               \
    {                                                                                      \
        USHMEMI_NV_AMO(NAME, xor, dest, value, pe);                                        \
    }
USHMEMI_NV_AMO_BIT_TYPES(USHMEMI_NV_AMO_BIT)
#undef USHMEMI_NV_AMO_BIT

/* ---- Waits and tests ---- */

#if defined(__CUDACC__)
/* The _all, _any and _some waits on the device: the tests, until true. */
template <typename T>
USHMEMI_NV_DEV void ushmemi_nv_wait_all(T *ivars, size_t nelems, const int *status, int cmp,
                                        const T *values, int vector)
{
    unsigned spins = 0;
    while (!ushmemi_nv_test_all(ivars, nelems, status, cmp, values, vector))
        ushmem_ring_backoff(&spins);
}

/* Whether some word is left to wait for (else _any and _some return at once). */
USHMEMI_NV_DEV int ushmemi_nv_any_left(size_t nelems, const int *status)
{
    for (size_t i = 0; i < nelems; i++)
        if (status == NULL || !status[i])
            return 1;
    return 0;
}

template <typename T>
USHMEMI_NV_DEV size_t ushmemi_nv_wait_any(T *ivars, size_t nelems, const int *status, int cmp,
                                          const T *values, int vector)
{
    unsigned spins = 0;
    size_t i = SIZE_MAX;
    if (!ushmemi_nv_any_left(nelems, status))
        return SIZE_MAX;
    while ((i = ushmemi_nv_test_any(ivars, nelems, status, cmp, values, vector)) == SIZE_MAX)
        ushmem_ring_backoff(&spins);
    return i;
}

template <typename T>
USHMEMI_NV_DEV size_t ushmemi_nv_wait_some(T *ivars, size_t nelems, size_t *indices,
                                           const int *status, int cmp, const T *values,
                                           int vector)
{
    unsigned spins = 0;
    size_t n = 0;
    if (!ushmemi_nv_any_left(nelems, status))
        return 0;
    while ((n = ushmemi_nv_test_some(ivars, nelems, indices, status, cmp, values, vector)) == 0)
        ushmem_ring_backoff(&spins);
    return n;
}
#endif

/* Each wait and test: ushmem's host call, or the device's form. */
#if defined(__CUDA_ARCH__)
#define USHMEMI_NV_WAIT_CALL(HOST, DEVICE) DEVICE
#else
#define USHMEMI_NV_WAIT_CALL(HOST, DEVICE) HOST
#endif
#define USHMEMI_NV_WAIT(NAME, T)                                                           \
    USHMEMI_NV_HD void nvshmem_##NAME##_wait_until(T *ivar, int cmp, T value)              \
    {                                                                                      \
        USHMEMI_NV_WAIT_CALL(shmem_##NAME##_wait_until(ivar, cmp, value),                  \
                             ushmemi_nv_wait_until(ivar, cmp, value));                     \
    }                                                                                      \
    USHMEMI_NV_HD int nvshmem_##NAME##_test(T *ivar, int cmp, T value)                     \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(shmem_##NAME##_test(ivar, cmp, value),                 \
                                    ushmemi_nv_test(ivar, cmp, value));                    \
    }                                                                                      \
    USHMEMI_NV_HD int nvshmem_##NAME##_test_all(T *ivars, size_t nelems, const int *status, \
                                                int cmp, T value)                          \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_test_all(ivars, nelems, status, cmp, value),                    \
            ushmemi_nv_test_all(ivars, nelems, status, cmp, &value, 0));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_test_any(T *ivars, size_t nelems,                \
                                                   const int *status, int cmp, T value)    \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_test_any(ivars, nelems, status, cmp, value),                    \
            ushmemi_nv_test_any(ivars, nelems, status, cmp, &value, 0));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_test_some(T *ivars, size_t nelems,               \
                                                    size_t *indices, const int *status,    \
                                                    int cmp, T value)                      \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_test_some(ivars, nelems, indices, status, cmp, value),          \
            ushmemi_nv_test_some(ivars, nelems, indices, status, cmp, &value, 0));         \
    }                                                                                      \
    USHMEMI_NV_HD int nvshmem_##NAME##_test_all_vector(T *ivars, size_t nelems,            \
                                                       const int *status, int cmp,         \
                                                       T *values)                          \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_test_all_vector(ivars, nelems, status, cmp, values),            \
            ushmemi_nv_test_all(ivars, nelems, status, cmp, values, 1));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_test_any_vector(T *ivars, size_t nelems,         \
                                                          const int *status, int cmp,      \
                                                          T *values)                       \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_test_any_vector(ivars, nelems, status, cmp, values),            \
            ushmemi_nv_test_any(ivars, nelems, status, cmp, values, 1));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_test_some_vector(                                \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *values)   \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_test_some_vector(ivars, nelems, indices, status, cmp, values),  \
            ushmemi_nv_test_some(ivars, nelems, indices, status, cmp, values, 1));         \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_wait_until_all(T *ivars, size_t nelems,            \
                                                       const int *status, int cmp, T value) \
    {                                                                                      \
        USHMEMI_NV_WAIT_CALL(                                                              \
            shmem_##NAME##_wait_until_all(ivars, nelems, status, cmp, value),              \
            ushmemi_nv_wait_all(ivars, nelems, status, cmp, &value, 0));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_wait_until_any(T *ivars, size_t nelems,          \
                                                         const int *status, int cmp,       \
                                                         T value)                          \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_wait_until_any(ivars, nelems, status, cmp, value),              \
            ushmemi_nv_wait_any(ivars, nelems, status, cmp, &value, 0));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_wait_until_some(T *ivars, size_t nelems,         \
                                                          size_t *indices,                 \
                                                          const int *status, int cmp,      \
                                                          T value)                         \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_wait_until_some(ivars, nelems, indices, status, cmp, value),    \
            ushmemi_nv_wait_some(ivars, nelems, indices, status, cmp, &value, 0));         \
    }                                                                                      \
    USHMEMI_NV_HD void nvshmem_##NAME##_wait_until_all_vector(                             \
        T *ivars, size_t nelems, const int *status, int cmp, T *values)                    \
    {                                                                                      \
        USHMEMI_NV_WAIT_CALL(                                                              \
            shmem_##NAME##_wait_until_all_vector(ivars, nelems, status, cmp, values),      \
            ushmemi_nv_wait_all(ivars, nelems, status, cmp, values, 1));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_wait_until_any_vector(                           \
        T *ivars, size_t nelems, const int *status, int cmp, T *values)                    \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_wait_until_any_vector(ivars, nelems, status, cmp, values),      \
            ushmemi_nv_wait_any(ivars, nelems, status, cmp, values, 1));                   \
    }                                                                                      \
    USHMEMI_NV_HD size_t nvshmem_##NAME##_wait_until_some_vector(                          \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *values)   \
    {                                                                                      \
        return USHMEMI_NV_WAIT_CALL(                                                       \
            shmem_##NAME##_wait_until_some_vector(ivars, nelems, indices, status, cmp,     \
                                                  values),                                 \
            ushmemi_nv_wait_some(ivars, nelems, indices, status, cmp, values, 1));         \
    }
USHMEMI_NV_WAIT_TYPES(USHMEMI_NV_WAIT)
#undef USHMEMI_NV_WAIT

/* ---- Ordering ---- */

USHMEMI_NV_HD void nvshmem_quiet(void)
{
#if USHMEMI_NV_ON_DEVICE
    ushmem_quiet();
#else
    shmem_quiet();
#endif
}

USHMEMI_NV_HD void nvshmem_fence(void)
{
#if USHMEMI_NV_ON_DEVICE
    ushmem_fence();
#else
    shmem_fence();
#endif
}

/* ---- Barriers and syncs ---- */

USHMEMI_NV_HD void nvshmem_barrier_all(void)
{
#if USHMEMI_NV_ON_DEVICE
    ushmem_barrier_all();
#else
    shmem_barrier_all();
#endif
}

USHMEMI_NV_HD void nvshmem_sync_all(void)
{
#if USHMEMI_NV_ON_DEVICE
    ushmem_sync_all();
#else
    shmem_sync_all();
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_barrier(nvshmem_team_t team)
{
#if USHMEMI_NV_ON_DEVICE
    const struct ushmem_device_team *t = ushmemi_nv_team_of(team, "nvshmem_barrier");
    if (t == NULL)
        ushmem_barrier_all();
    else
        ushmemi_dev_team_barrier(t, 1);
    return 0;
#else
    shmem_team_t t = ushmemi_nv_team(team);
    if (t == SHMEM_TEAM_INVALID)
        return -1;
    shmem_quiet();
    return shmem_team_sync(t);
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_team_sync(nvshmem_team_t team)
{
#if USHMEMI_NV_ON_DEVICE
    const struct ushmem_device_team *t = ushmemi_nv_team_of(team, "nvshmem_team_sync");
    if (t == NULL)
        ushmem_sync_all();
    else
        ushmemi_dev_team_barrier(t, 0);
    return 0;
#else
    return shmem_team_sync(ushmemi_nv_team(team));
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_sync(nvshmem_team_t team)
{
    return nvshmem_team_sync(team);
}

#if defined(__CUDACC__)
#define USHMEMI_NV_SYNC_GROUP(SUFFIX, SCOPE)                                               \
    USHMEMI_NV_DEV void nvshmemx_barrier_all##SUFFIX(void)                                 \
    {                                                                                      \
        ushmemi_dev_group_barrier(SCOPE, 1);                                               \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_sync_all##SUFFIX(void)                                    \
    {                                                                                      \
        ushmemi_dev_group_barrier(SCOPE, 0);                                               \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_barrier##SUFFIX(nvshmem_team_t team)                       \
    {                                                                                      \
        ushmemi_dev_group_team_barrier(                                                    \
            SCOPE, ushmemi_nv_team_of(team, "nvshmemx_barrier" #SUFFIX), 1);                \
        return 0;                                                                          \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_team_sync##SUFFIX(nvshmem_team_t team)                     \
    {                                                                                      \
        ushmemi_dev_group_team_barrier(                                                    \
            SCOPE, ushmemi_nv_team_of(team, "nvshmemx_team_sync" #SUFFIX), 0);              \
        return 0;                                                                          \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_sync##SUFFIX(nvshmem_team_t team)                          \
    {                                                                                      \
        return nvshmemx_team_sync##SUFFIX(team);                                           \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_quiet##SUFFIX(void)                                       \
    {                                                                                      \
        ushmemi_dev_quiet_group(SCOPE);                                                    \
    }                                                                                      \
    USHMEMI_NV_DEV void nvshmemx_fence##SUFFIX(void)                                       \
    {                                                                                      \
        ushmemi_dev_fence_group(SCOPE);                                                    \
    }
USHMEMI_NV_GROUP_SCOPES(USHMEMI_NV_SYNC_GROUP)
#undef USHMEMI_NV_SYNC_GROUP
#endif

/* ---- Team queries ---- */

USHMEMI_NV_HD_FORCE int nvshmem_team_my_pe(nvshmem_team_t team)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_team_my_pe(team);
#else
    shmem_team_t t = ushmemi_nv_team(team);
    return t == SHMEM_TEAM_INVALID ? -1 : shmem_team_my_pe(t);
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_team_n_pes(nvshmem_team_t team)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_team_n_pes(team);
#else
    shmem_team_t t = ushmemi_nv_team(team);
    return t == SHMEM_TEAM_INVALID ? -1 : shmem_team_n_pes(t);
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_team_translate_pe(nvshmem_team_t src_team, int src_pe,
                                                  nvshmem_team_t dest_team)
{
#if USHMEMI_NV_ON_DEVICE
    return ushmem_team_translate_pe(src_team, src_pe, dest_team);
#else
    shmem_team_t s = ushmemi_nv_team(src_team), d = ushmemi_nv_team(dest_team);
    if (s == SHMEM_TEAM_INVALID || d == SHMEM_TEAM_INVALID)
        return -1;
    return shmem_team_translate_pe(s, src_pe, d);
#endif
}

/* ---- Collectives ---- */

/* Host: ushmem's team collectives; device: the device's, on any team. */
USHMEMI_NV_HD_FORCE int nvshmem_alltoallmem(nvshmem_team_t team, void *dest, const void *src,
                                            size_t nbytes)
{
#if USHMEMI_NV_ON_DEVICE
    ushmemi_dev_alltoall_on(ushmemi_nv_team_of(team, "nvshmem_alltoallmem"), dest, src, nbytes,
                            USHMEMI_DEV_THREAD);
    return 0;
#else
    return shmem_alltoallmem(ushmemi_nv_team(team), dest, src, nbytes);
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_broadcastmem(nvshmem_team_t team, void *dest, const void *src,
                                             size_t nbytes, int pe_root)
{
#if USHMEMI_NV_ON_DEVICE
    ushmemi_dev_broadcast_on(ushmemi_nv_team_of(team, "nvshmem_broadcastmem"), dest, src,
                             nbytes, pe_root, USHMEMI_DEV_THREAD);
    return 0;
#else
    return shmem_broadcastmem(ushmemi_nv_team(team), dest, src, nbytes, pe_root);
#endif
}

USHMEMI_NV_HD_FORCE int nvshmem_fcollectmem(nvshmem_team_t team, void *dest, const void *src,
                                            size_t nbytes)
{
#if USHMEMI_NV_ON_DEVICE
    ushmemi_dev_fcollect_on(ushmemi_nv_team_of(team, "nvshmem_fcollectmem"), dest, src, nbytes,
                            USHMEMI_DEV_THREAD);
    return 0;
#else
    return shmem_fcollectmem(ushmemi_nv_team(team), dest, src, nbytes);
#endif
}

#define USHMEMI_NV_COLL_TYPED(NAME, T)                                                     \
    USHMEMI_NV_HD_FORCE int nvshmem_##NAME##_alltoall(nvshmem_team_t team, T *dest,        \
                                                      const T *src, size_t nelems)         \
    {                                                                                      \
        return nvshmem_alltoallmem(team, dest, src, nelems * sizeof(T));                   \
    }                                                                                      \
    USHMEMI_NV_HD_FORCE int nvshmem_##NAME##_broadcast(nvshmem_team_t team, T *dest,       \
                                                       const T *src, size_t nelems,        \
                                                       int pe_root)                        \
    {                                                                                      \
        return nvshmem_broadcastmem(team, dest, src, nelems * sizeof(T), pe_root);         \
    }                                                                                      \
    USHMEMI_NV_HD_FORCE int nvshmem_##NAME##_fcollect(nvshmem_team_t team, T *dest,        \
                                                      const T *src, size_t nelems)         \
    {                                                                                      \
        return nvshmem_fcollectmem(team, dest, src, nelems * sizeof(T));                   \
    }
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_COLL_TYPED)
#undef USHMEMI_NV_COLL_TYPED

#if defined(__CUDACC__)
#define USHMEMI_NV_COLL_GROUP(SUFFIX, SCOPE)                                               \
    USHMEMI_NV_DEV int nvshmemx_alltoallmem##SUFFIX(nvshmem_team_t team, void *dest,       \
                                                    const void *src, size_t nbytes)        \
    {                                                                                      \
        ushmemi_dev_alltoall_on(ushmemi_nv_team_of(team, "nvshmemx_alltoallmem" #SUFFIX),  \
                                dest, src, nbytes, SCOPE);                                 \
        return 0;                                                                          \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_broadcastmem##SUFFIX(nvshmem_team_t team, void *dest,      \
                                                     const void *src, size_t nbytes,       \
                                                     int pe_root)                          \
    {                                                                                      \
        ushmemi_dev_broadcast_on(ushmemi_nv_team_of(team, "nvshmemx_broadcastmem" #SUFFIX), \
                                 dest, src, nbytes, pe_root, SCOPE);                       \
        return 0;                                                                          \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_fcollectmem##SUFFIX(nvshmem_team_t team, void *dest,       \
                                                    const void *src, size_t nbytes)        \
    {                                                                                      \
        ushmemi_dev_fcollect_on(ushmemi_nv_team_of(team, "nvshmemx_fcollectmem" #SUFFIX),  \
                                dest, src, nbytes, SCOPE);                                 \
        return 0;                                                                          \
    }
USHMEMI_NV_GROUP_SCOPES(USHMEMI_NV_COLL_GROUP)
#undef USHMEMI_NV_COLL_GROUP

#define USHMEMI_NV_COLL_GROUP_TYPED_SCOPE(NAME, T, SUFFIX)                                 \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_alltoall##SUFFIX(nvshmem_team_t team, T *dest,    \
                                                          const T *src, size_t nelems)     \
    {                                                                                      \
        return nvshmemx_alltoallmem##SUFFIX(team, dest, src, nelems * sizeof(T));          \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_broadcast##SUFFIX(nvshmem_team_t team, T *dest,   \
                                                           const T *src, size_t nelems,    \
                                                           int pe_root)                    \
    {                                                                                      \
        return nvshmemx_broadcastmem##SUFFIX(team, dest, src, nelems * sizeof(T), pe_root); \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_fcollect##SUFFIX(nvshmem_team_t team, T *dest,    \
                                                          const T *src, size_t nelems)     \
    {                                                                                      \
        return nvshmemx_fcollectmem##SUFFIX(team, dest, src, nelems * sizeof(T));          \
    }
#define USHMEMI_NV_COLL_GROUP_TYPED(NAME, T)                                               \
    USHMEMI_NV_COLL_GROUP_TYPED_SCOPE(NAME, T, _warp)                                      \
    USHMEMI_NV_COLL_GROUP_TYPED_SCOPE(NAME, T, _block)
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_COLL_GROUP_TYPED)
#undef USHMEMI_NV_COLL_GROUP_TYPED
#undef USHMEMI_NV_COLL_GROUP_TYPED_SCOPE

/* Device reductions, reduce-scatters and MAXLOC: X(NAME, T, OP, OPNAME). */
#define USHMEMI_NV_RED_DEVICE(NAME, T, OP, OPNAME)                                         \
    USHMEMI_NV_DEV int ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(                          \
        nvshmem_team_t team, T *dest, const T *source, size_t n, ushmemi_dev_scope scope,  \
        int scatter, const char *call)                                                     \
    {                                                                                      \
        if (team == NVSHMEM_TEAM_WORLD)                                                    \
            return ushmemi_nv_reduce_world<ushmemi_nv_op<OP>, T>(scope, dest, source, n,    \
                                                                 scatter);                 \
        return ushmemi_nv_reduce_team<ushmemi_nv_op<OP>, T>(                               \
            scope, ushmemi_nv_team_of(team, call), dest, source, n, scatter);              \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_##OPNAME##_reduce_warp(nvshmem_team_t team,       \
                                                                T *dest, const T *source,  \
                                                                size_t nreduce)            \
    {                                                                                      \
        return ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(team, dest, source, nreduce,      \
                                                         USHMEMI_DEV_WARP, 0,              \
                                                         "nvshmemx_" #NAME "_" #OPNAME     \
                                                         "_reduce_warp");                  \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_##OPNAME##_reduce_block(nvshmem_team_t team,      \
                                                                 T *dest, const T *source, \
                                                                 size_t nreduce)           \
    {                                                                                      \
        return ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(team, dest, source, nreduce,      \
                                                         USHMEMI_DEV_BLOCK, 0,             \
                                                         "nvshmemx_" #NAME "_" #OPNAME     \
                                                         "_reduce_block");                 \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmem_##NAME##_##OPNAME##_reducescatter(nvshmem_team_t team,      \
                                                                 T *dest, const T *source, \
                                                                 size_t nreduce)           \
    {                                                                                      \
        return ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(team, dest, source, nreduce,      \
                                                         USHMEMI_DEV_THREAD, 1,            \
                                                         "nvshmem_" #NAME "_" #OPNAME      \
                                                         "_reducescatter");                \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_##OPNAME##_reducescatter_warp(                    \
        nvshmem_team_t team, T *dest, const T *source, size_t nreduce)                     \
    {                                                                                      \
        return ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(team, dest, source, nreduce,      \
                                                         USHMEMI_DEV_WARP, 1,              \
                                                         "nvshmemx_" #NAME "_" #OPNAME     \
                                                         "_reducescatter_warp");           \
    }                                                                                      \
    USHMEMI_NV_DEV int nvshmemx_##NAME##_##OPNAME##_reducescatter_block(                   \
        nvshmem_team_t team, T *dest, const T *source, size_t nreduce)                     \
    {                                                                                      \
        return ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(team, dest, source, nreduce,      \
                                                         USHMEMI_DEV_BLOCK, 1,             \
                                                         "nvshmemx_" #NAME "_" #OPNAME     \
                                                         "_reducescatter_block");          \
    }
#endif /* __CUDACC__ */

/* The thread-scope reduction, on either side: the host's is ushmem's team
 * reduction (and 16-bit floats are device-only). */
#if defined(__CUDA_ARCH__)
#define USHMEMI_NV_RED_THREAD_BODY(NAME, OPNAME, HOSTCALL)                                 \
    return ushmemi_nv_##NAME##_##OPNAME##_reduce_dev(team, dest, source, nreduce,          \
                                                     USHMEMI_DEV_THREAD, 0,                \
                                                     "nvshmem_" #NAME "_" #OPNAME "_reduce")
#else
#define USHMEMI_NV_RED_THREAD_BODY(NAME, OPNAME, HOSTCALL) return HOSTCALL
#endif
#if defined(__CUDACC__)
#define USHMEMI_NV_RED_HD(NAME, T, OP, OPNAME, HOSTCALL)                                   \
    USHMEMI_NV_RED_DEVICE(NAME, T, OP, OPNAME)                                             \
    USHMEMI_NV_HD_FORCE int nvshmem_##NAME##_##OPNAME##_reduce(                            \
        nvshmem_team_t team, T *dest, const T *source, size_t nreduce)                     \
    {                                                                                      \
        USHMEMI_NV_RED_THREAD_BODY(NAME, OPNAME, HOSTCALL);                                \
    }
#else
#define USHMEMI_NV_RED_HD(NAME, T, OP, OPNAME, HOSTCALL)                                   \
    USHMEMI_NV_HD int nvshmem_##NAME##_##OPNAME##_reduce(nvshmem_team_t team, T *dest,     \
                                                         const T *source, size_t nreduce)  \
    {                                                                                      \
        return HOSTCALL;                                                                   \
    }
#endif
#define USHMEMI_NV_HOST_RED(NAME, OPNAME)                                                  \
    shmem_##NAME##_##OPNAME##_reduce(ushmemi_nv_team(team), dest, source, nreduce)
/* 16-bit floats have no host reduction in ushmem: the host form says so. */
#define USHMEMI_NV_HOST_RED_NONE(NAME, OPNAME)                                             \
    (fprintf(stderr,                                                                       \
             "ushmem: nvshmem_" #NAME "_" #OPNAME "_reduce from the host: ushmem reduces " \
             "16-bit floats on the device only\n"),                                        \
     (void)team, (void)dest, (void)source, (void)nreduce, -1)

#define USHMEMI_NV_RED_BIT(NAME, T)                                                        \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_AND, and, USHMEMI_NV_HOST_RED(NAME, and))        \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_OR, or, USHMEMI_NV_HOST_RED(NAME, or))           \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_XOR, xor, USHMEMI_NV_HOST_RED(NAME, xor))
#define USHMEMI_NV_RED_ARITH_WITH(NAME, T, HOST)                                           \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_SUM, sum, HOST(NAME, sum))                       \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_PROD, prod, HOST(NAME, prod))                    \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_MIN, min, HOST(NAME, min))                       \
    USHMEMI_NV_RED_HD(NAME, T, USHMEMI_NV_MAX, max, HOST(NAME, max))
#define USHMEMI_NV_RED_ARITH(NAME, T) USHMEMI_NV_RED_ARITH_WITH(NAME, T, USHMEMI_NV_HOST_RED)
#define USHMEMI_NV_RED_HALF(NAME, T) USHMEMI_NV_RED_ARITH_WITH(NAME, T, USHMEMI_NV_HOST_RED_NONE)
USHMEMI_NV_RED_BIT_TYPES(USHMEMI_NV_RED_BIT)
USHMEMI_NV_RED_BIT_TYPES(USHMEMI_NV_RED_ARITH)
USHMEMI_NV_RED_PLAIN_ARITH_TYPES(USHMEMI_NV_RED_ARITH)
USHMEMI_NV_HALF_TYPES(USHMEMI_NV_RED_HALF)

#if defined(__CUDACC__)
#define USHMEMI_NV_MAXLOC(SUFFIX, SCOPE)                                                   \
    USHMEMI_NV_DEV int nvshmemx_double2_maxloc_reduce##SUFFIX(                             \
        nvshmem_team_t team, double2 *dest, const double2 *source, size_t nreduce)         \
    {                                                                                      \
        return ushmemi_nv_reduce<ushmemi_nv_maxloc, double2>(                              \
            SCOPE, ushmemi_nv_team_of(team, "nvshmemx_double2_maxloc_reduce" #SUFFIX), dest, \
            source, nreduce, 0);                                                           \
    }
USHMEMI_NV_MAXLOC(_warp, USHMEMI_DEV_WARP)
USHMEMI_NV_MAXLOC(_block, USHMEMI_DEV_BLOCK)
#undef USHMEMI_NV_MAXLOC
USHMEMI_NV_DEV int nvshmem_double2_maxloc_reduce(nvshmem_team_t team, double2 *dest,
                                                 const double2 *source, size_t nreduce)
{
    return ushmemi_nv_reduce<ushmemi_nv_maxloc, double2>(
        USHMEMI_DEV_THREAD, ushmemi_nv_team_of(team, "nvshmem_double2_maxloc_reduce"), dest,
        source, nreduce, 0);
}
#endif

/* ---- Stream-ordered calls ---- */

USHMEMI_NV_HOST void nvshmemx_putmem_on_stream(void *dest, const void *src, size_t nbytes,
                                               int pe, cudaStream_t stream)
{
    shmemx_putmem_on_stream(dest, src, nbytes, pe, stream);
}

USHMEMI_NV_HOST void nvshmemx_getmem_on_stream(void *dest, const void *src, size_t nbytes,
                                               int pe, cudaStream_t stream)
{
    shmemx_getmem_on_stream(dest, src, nbytes, pe, stream);
}

/* A stream call is asynchronous already: the nbi forms are the same. */
USHMEMI_NV_HOST void nvshmemx_putmem_nbi_on_stream(void *dest, const void *src, size_t nbytes,
                                                   int pe, cudaStream_t stream)
{
    shmemx_putmem_on_stream(dest, src, nbytes, pe, stream);
}

USHMEMI_NV_HOST void nvshmemx_getmem_nbi_on_stream(void *dest, const void *src, size_t nbytes,
                                                   int pe, cudaStream_t stream)
{
    shmemx_getmem_on_stream(dest, src, nbytes, pe, stream);
}

#define USHMEMI_NV_STREAM_RMA_TYPED(NAME, T)                                               \
    USHMEMI_NV_HOST void nvshmemx_##NAME##_put_on_stream(T *dest, const T *src,            \
                                                         size_t nelems, int pe,            \
                                                         cudaStream_t stream)              \
    {                                                                                      \
        shmemx_putmem_on_stream(dest, src, nelems * sizeof(T), pe, stream);                \
    }                                                                                      \
    USHMEMI_NV_HOST void nvshmemx_##NAME##_get_on_stream(T *dest, const T *src,            \
                                                         size_t nelems, int pe,            \
                                                         cudaStream_t stream)              \
    {                                                                                      \
        shmemx_getmem_on_stream(dest, src, nelems * sizeof(T), pe, stream);                \
    }                                                                                      \
    USHMEMI_NV_HOST void nvshmemx_##NAME##_put_nbi_on_stream(T *dest, const T *src,        \
                                                             size_t nelems, int pe,        \
                                                             cudaStream_t stream)          \
    {                                                                                      \
        shmemx_putmem_on_stream(dest, src, nelems * sizeof(T), pe, stream);                \
    }                                                                                      \
    USHMEMI_NV_HOST void nvshmemx_##NAME##_get_nbi_on_stream(T *dest, const T *src,        \
                                                             size_t nelems, int pe,        \
                                                             cudaStream_t stream)          \
    {                                                                                      \
        shmemx_getmem_on_stream(dest, src, nelems * sizeof(T), pe, stream);                \
    }
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_STREAM_RMA_TYPED)
#undef USHMEMI_NV_STREAM_RMA_TYPED

#define USHMEMI_NV_STREAM_RMA_SIZED(BITS, T)                                               \
    USHMEMI_NV_HOST void nvshmemx_put##BITS##_on_stream(void *dest, const void *src,       \
                                                        size_t nelems, int pe,             \
                                                        cudaStream_t stream)               \
    {                                                                                      \
        shmemx_putmem_on_stream(dest, src, nelems * (BITS / 8), pe, stream);               \
    }                                                                                      \
    USHMEMI_NV_HOST void nvshmemx_get##BITS##_on_stream(void *dest, const void *src,       \
                                                        size_t nelems, int pe,             \
                                                        cudaStream_t stream)               \
    {                                                                                      \
        shmemx_getmem_on_stream(dest, src, nelems * (BITS / 8), pe, stream);               \
    }                                                                                      \
    USHMEMI_NV_HOST void nvshmemx_put##BITS##_nbi_on_stream(void *dest, const void *src,   \
                                                            size_t nelems, int pe,         \
                                                            cudaStream_t stream)           \
    {                                                                                      \
        shmemx_putmem_on_stream(dest, src, nelems * (BITS / 8), pe, stream);               \
    }                                                                                      \
    USHMEMI_NV_HOST void nvshmemx_get##BITS##_nbi_on_stream(void *dest, const void *src,   \
                                                            size_t nelems, int pe,         \
                                                            cudaStream_t stream)           \
    {                                                                                      \
        shmemx_getmem_on_stream(dest, src, nelems * (BITS / 8), pe, stream);               \
    }
USHMEMI_NV_SIZES(USHMEMI_NV_STREAM_RMA_SIZED)
USHMEMI_NV_STREAM_RMA_SIZED(128, uint64_t)
#undef USHMEMI_NV_STREAM_RMA_SIZED

/* A stream writes a signal word, it does not add to one: SET only. */
USHMEMI_NV_HOST void ushmemi_nv_signal_on_stream_check(const char *call, int sig_op)
{
    if (sig_op != NVSHMEM_SIGNAL_SET) {
        fprintf(stderr, "ushmem: PE %d: %s with sig_op %d: a stream sets a signal "
                        "(NVSHMEM_SIGNAL_SET) and cannot add to one; signal from a kernel "
                        "for NVSHMEM_SIGNAL_ADD\n",
                shmem_my_pe(), call, sig_op);
        shmem_global_exit(1);
    }
}

USHMEMI_NV_HOST void nvshmemx_putmem_signal_on_stream(void *dest, const void *src, size_t nbytes,
                                                      uint64_t *sig_addr, uint64_t signal,
                                                      int sig_op, int pe, cudaStream_t stream)
{
    ushmemi_nv_signal_on_stream_check("nvshmemx_putmem_signal_on_stream", sig_op);
    shmemx_putmem_signal_on_stream(dest, src, nbytes, sig_addr, signal, sig_op, pe, stream);
}

USHMEMI_NV_HOST void nvshmemx_putmem_signal_nbi_on_stream(void *dest, const void *src,
                                                          size_t nbytes, uint64_t *sig_addr,
                                                          uint64_t signal, int sig_op, int pe,
                                                          cudaStream_t stream)
{
    ushmemi_nv_signal_on_stream_check("nvshmemx_putmem_signal_nbi_on_stream", sig_op);
    shmemx_putmem_signal_on_stream(dest, src, nbytes, sig_addr, signal, sig_op, pe, stream);
}

USHMEMI_NV_HOST void nvshmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal,
                                                  int sig_op, int pe, cudaStream_t stream)
{
    ushmemi_nv_signal_on_stream_check("nvshmemx_signal_op_on_stream", sig_op);
    shmemx_putmem_signal_on_stream(sig_addr, sig_addr, 0, sig_addr, signal, sig_op, pe, stream);
}

USHMEMI_NV_HOST void nvshmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp,
                                                          uint64_t cmp_value,
                                                          cudaStream_t stream)
{
    shmemx_signal_wait_until_on_stream(sig_addr, cmp, cmp_value, stream);
}

USHMEMI_NV_HOST void nvshmemx_quiet_on_stream(cudaStream_t stream)
{
    shmemx_quiet_on_stream(stream);
}

USHMEMI_NV_HOST void nvshmemx_barrier_all_on_stream(cudaStream_t stream)
{
    shmemx_barrier_all_on_stream(stream);
}

USHMEMI_NV_HOST void nvshmemx_sync_all_on_stream(cudaStream_t stream)
{
    shmemx_sync_all_on_stream(stream);
}

/* ushmem's stream barriers are the world's: another team is refused. */
USHMEMI_NV_HOST int ushmemi_nv_stream_world(const char *call, nvshmem_team_t team)
{
    if (team == NVSHMEM_TEAM_WORLD ||
        (ushmemi_nv_team(team) != SHMEM_TEAM_INVALID &&
         shmem_team_n_pes(ushmemi_nv_team(team)) == shmem_n_pes()))
        return 1;
    fprintf(stderr, "ushmem: PE %d: %s on team %d: stream-ordered barriers and syncs take the "
                    "world (or a team of every PE); synchronise a smaller team from a kernel "
                    "or the host\n",
            shmem_my_pe(), call, (int)team);
    shmem_global_exit(1);
    return 0;
}

USHMEMI_NV_HOST int nvshmemx_barrier_on_stream(nvshmem_team_t team, cudaStream_t stream)
{
    ushmemi_nv_stream_world("nvshmemx_barrier_on_stream", team);
    shmemx_barrier_all_on_stream(stream);
    return 0;
}

USHMEMI_NV_HOST int nvshmemx_team_sync_on_stream(nvshmem_team_t team, cudaStream_t stream)
{
    ushmemi_nv_stream_world("nvshmemx_team_sync_on_stream", team);
    shmemx_sync_all_on_stream(stream);
    return 0;
}

USHMEMI_NV_HOST int nvshmemx_sync_on_stream(nvshmem_team_t team, cudaStream_t stream)
{
    return nvshmemx_team_sync_on_stream(team, stream);
}

USHMEMI_NV_HOST int nvshmemx_alltoallmem_on_stream(nvshmem_team_t team, void *dest,
                                                   const void *src, size_t nbytes,
                                                   cudaStream_t stream)
{
    return shmemx_alltoallmem_on_stream(ushmemi_nv_team(team), dest, src, nbytes, stream);
}

USHMEMI_NV_HOST int nvshmemx_broadcastmem_on_stream(nvshmem_team_t team, void *dest,
                                                    const void *src, size_t nbytes, int pe_root,
                                                    cudaStream_t stream)
{
    return shmemx_broadcastmem_on_stream(ushmemi_nv_team(team), dest, src, nbytes, pe_root,
                                         stream);
}

USHMEMI_NV_HOST int nvshmemx_fcollectmem_on_stream(nvshmem_team_t team, void *dest,
                                                   const void *src, size_t nbytes,
                                                   cudaStream_t stream)
{
    return shmemx_fcollectmem_on_stream(ushmemi_nv_team(team), dest, src, nbytes, stream);
}

#define USHMEMI_NV_STREAM_COLL_TYPED(NAME, T)                                              \
    USHMEMI_NV_HOST int nvshmemx_##NAME##_alltoall_on_stream(                              \
        nvshmem_team_t team, T *dest, const T *src, size_t nelems, cudaStream_t stream)    \
    {                                                                                      \
        return nvshmemx_alltoallmem_on_stream(team, dest, src, nelems * sizeof(T), stream); \
    }                                                                                      \
    USHMEMI_NV_HOST int nvshmemx_##NAME##_broadcast_on_stream(nvshmem_team_t team, T *dest, \
                                                              const T *src, size_t nelems, \
                                                              int pe_root,                 \
                                                              cudaStream_t stream)         \
    {                                                                                      \
        return nvshmemx_broadcastmem_on_stream(team, dest, src, nelems * sizeof(T), pe_root, \
                                               stream);                                    \
    }                                                                                      \
    USHMEMI_NV_HOST int nvshmemx_##NAME##_fcollect_on_stream(                              \
        nvshmem_team_t team, T *dest, const T *src, size_t nelems, cudaStream_t stream)    \
    {                                                                                      \
        return nvshmemx_fcollectmem_on_stream(team, dest, src, nelems * sizeof(T), stream); \
    }
USHMEMI_NV_RMA_TYPES(USHMEMI_NV_STREAM_COLL_TYPED)
#undef USHMEMI_NV_STREAM_COLL_TYPED

/* Reductions and reduce-scatters on a stream: ushmem's, by OpenSHMEM type
 * set. */
#define USHMEMI_NV_STREAM_RED(NAME, T, OPNAME)                                             \
    USHMEMI_NV_HOST int nvshmemx_##NAME##_##OPNAME##_reduce_on_stream(                     \
        nvshmem_team_t team, T *dest, const T *source, size_t nreduce, cudaStream_t stream) \
    {                                                                                      \
        return shmemx_##NAME##_##OPNAME##_reduce_on_stream(ushmemi_nv_team(team), dest,    \
                                                           source, nreduce, stream);       \
    }                                                                                      \
    USHMEMI_NV_HOST int nvshmemx_##NAME##_##OPNAME##_reducescatter_on_stream(              \
        nvshmem_team_t team, T *dest, const T *source, size_t nreduce, cudaStream_t stream) \
    {                                                                                      \
        return shmemx_##NAME##_##OPNAME##_reducescatter_on_stream(ushmemi_nv_team(team),   \
                                                                  dest, source, nreduce,   \
                                                                  stream);                 \
    }
#define USHMEMI_NV_STREAM_RED_BIT(NAME, T)                                                 \
    USHMEMI_NV_STREAM_RED(NAME, T, and)                                                    \
    USHMEMI_NV_STREAM_RED(NAME, T, or)                                                     \
    USHMEMI_NV_STREAM_RED(NAME, T, xor)
#define USHMEMI_NV_STREAM_RED_ARITH(NAME, T)                                               \
    USHMEMI_NV_STREAM_RED(NAME, T, sum)                                                    \
    USHMEMI_NV_STREAM_RED(NAME, T, prod)                                                   \
    USHMEMI_NV_STREAM_RED(NAME, T, min)                                                    \
    USHMEMI_NV_STREAM_RED(NAME, T, max)
USHMEMI_NV_RED_BIT_TYPES(USHMEMI_NV_STREAM_RED_BIT)
USHMEMI_NV_RED_BIT_TYPES(USHMEMI_NV_STREAM_RED_ARITH)
USHMEMI_NV_RED_PLAIN_ARITH_TYPES(USHMEMI_NV_STREAM_RED_ARITH)
/* 16-bit floats: ushmem's stream reductions have no such kernels; the call
 * ends the job in one sentence naming it (a program may name it in a
 * branch it never takes, as NVSHMEM's perftests do for each type). */
#define USHMEMI_NV_STREAM_RED_NONE(NAME, T, OPNAME, KIND)                                  \
    USHMEMI_NV_HOST int nvshmemx_##NAME##_##OPNAME##_##KIND##_on_stream(                   \
        nvshmem_team_t team, T *dest, const T *source, size_t nreduce, cudaStream_t stream) \
    {                                                                                      \
        (void)team, (void)dest, (void)source, (void)nreduce, (void)stream;                 \
        fprintf(stderr, "ushmem: PE %d: nvshmemx_" #NAME "_" #OPNAME "_" #KIND "_on_stream: " \
                        "stream-ordered reductions of 16-bit floats are not offered; reduce " \
                        "them in a kernel (nvshmemx_" #NAME "_" #OPNAME "_" #KIND "_block)\n", \
                shmem_my_pe());                                                            \
        shmem_global_exit(1);                                                              \
        return -1;                                                                         \
    }
#define USHMEMI_NV_STREAM_RED_HALF(NAME, T)                                                \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, sum, reduce)                                       \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, prod, reduce)                                      \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, min, reduce)                                       \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, max, reduce)                                       \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, sum, reducescatter)                                \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, prod, reducescatter)                               \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, min, reducescatter)                                \
    USHMEMI_NV_STREAM_RED_NONE(NAME, T, max, reducescatter)
USHMEMI_NV_HALF_TYPES(USHMEMI_NV_STREAM_RED_HALF)
#undef USHMEMI_NV_STREAM_RED_HALF
#undef USHMEMI_NV_STREAM_RED_NONE
#undef USHMEMI_NV_STREAM_RED_ARITH
#undef USHMEMI_NV_STREAM_RED_BIT
#undef USHMEMI_NV_STREAM_RED

/* ---- Refused: ushmem has no such call ---- */
USHMEMI_NV_REFUSE(nvshmemx_barrier_warpgroup, "use nvshmemx_barrier_block")
USHMEMI_NV_REFUSE(nvshmemx_qp_create, "ushmem has no queue pairs")
USHMEMI_NV_REFUSE(nvshmemx_qp_quiet, "ushmem has no queue pairs")
USHMEMI_NV_REFUSE(nvshmemx_qp_fence, "ushmem has no queue pairs")
USHMEMI_NV_REFUSE(nvshmemx_qp_signal_op, "ushmem has no queue pairs")

#endif /* USHMEM_NVSHMEM_H */
