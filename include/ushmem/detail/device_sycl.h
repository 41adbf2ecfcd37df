/* The device API's compiler-specific helpers for SYCL 2020: what each helper
 * must do is listed in <ushmem/device.h>, which alone includes this file.
 *
 * Written against the SYCL 2020 specification only (sycl::atomic_ref,
 * sycl::atomic_fence, group functions, sycl::address_space_cast), so any
 * implementation compiles it; AdaptiveCpp's `acpp` is the one `oshsycl`
 * wraps.
 *
 * Where the state lives: SYCL 2020 has no device globals that the host can
 * fill, so kernels read libushmem's own copy (ushmem_device_state), which a
 * kernel reaches when it runs on the host: a CPU device, whose work-items
 * are host threads of this process (AdaptiveCpp's OpenMP backend). On an
 * NVIDIA GPU (AdaptiveCpp's cuda target, which compiles the program in
 * clang's CUDA mode: __ACPP_ENABLE_CUDA_TARGET__), each translation unit
 * holds a __constant__ copy that shmem_init writes, as the CUDA branch's
 * (detail/device_cuda.h), and its device pass (__CUDA_ARCH__) reaches
 * memory at system scope through PTX (detail/ptx.h), since AdaptiveCpp's
 * sycl::atomic_ref there ignores the scope. Device
 * code cannot hold thread-local storage, so each submission starts from a
 * zeroed producer (a stale head is safe, see ring.h) and quiet waits for
 * every ticket handed out, as on CUDA.
 *
 * Cooperative calls take the group that makes them as their last argument,
 * as Intel SHMEM's do (ushmemx_putmem_work_group(..., group)): a
 * sycl::group<D> (a work-group) or a sycl::sub_group, every work-item of it
 * calling with the same arguments. SYCL has no way for a function to find
 * its work-item's group on its own, so the calls of device.h that take a
 * scope are templates here (USHMEMI_DEV_SCOPED), the scope being either
 * USHMEMI_DEV_THREAD or the group object, and the CUDA-style _warp and
 * _block names, which would need that, do not exist (USHMEMI_DEV_GROUPS). */
#ifndef USHMEM_DETAIL_DEVICE_SYCL_H
#define USHMEM_DETAIL_DEVICE_SYCL_H

#include <atomic>
#include <cstring>
#include <sycl/sycl.hpp>

#define USHMEM_DEVICE_FN static inline
#define USHMEMI_DEV_SCOPED template <typename ushmemi_dev_scope>
#define USHMEMI_DEV_GROUPS 1
typedef long long ushmemi_dev_longlong;
typedef unsigned long long ushmemi_dev_ulonglong;
extern "C" {
extern struct ushmem_device_state ushmem_device_state;
}

#if defined(__ACPP_ENABLE_CUDA_TARGET__)
/* The host pass of a program with GPU kernels: the heap is GPU memory,
 * which host code must not touch, so host code's ushmem_barrier_all and
 * ushmem_sync_all (which Intel SHMEM's programs call between kernels) are
 * shmem_barrier_all and shmem_sync_all. */
#if !defined(__CUDA_ARCH__)
#define USHMEMI_DEV_HOST_IS_HOST_API 1
extern "C" {
void shmem_barrier_all(void);
void shmem_sync_all(void);
}
#endif
static __constant__ struct ushmem_device_state ushmemi_sycl_cuda_state;
/* Writes this translation unit's copy (ushmemi_device_register); returns
 * NULL, or the CUDA error's name. */
static const char *ushmemi_sycl_cuda_fill(const struct ushmem_device_state *state)
{
    cudaError_t err = cudaMemcpyToSymbol(ushmemi_sycl_cuda_state, state, sizeof(*state));
    return err == cudaSuccess ? NULL : cudaGetErrorName(err);
}
namespace {
struct ushmemi_sycl_cuda_registrar {
    ushmemi_sycl_cuda_registrar()
    {
        ushmemi_device_register_versions("cuda", ushmemi_sycl_cuda_fill,
                                         USHMEM_DEVICE_STATE_VERSION, USHMEM_RING_VERSION);
    }
};
static ushmemi_sycl_cuda_registrar ushmemi_sycl_cuda_registered;
} /* namespace */
#endif

/* ushmemx_sycl_device(): shmem_init leaves the PE's GPU current in the
 * calling thread (docs/guide/gpu-kernels.md); acpp's CUDA devices are named by
 * their ordinals. */
static inline sycl::device ushmemi_sycl_pe_device(void)
{
#if defined(__ACPP_ENABLE_CUDA_TARGET__)
    int ordinal = -1;
    if (cudaGetDevice(&ordinal) == cudaSuccess)
        for (const sycl::device &d : sycl::device::get_devices(sycl::info::device_type::gpu))
            if (d.get_backend() == sycl::backend::cuda &&
                sycl::get_native<sycl::backend::cuda>(d) == ordinal)
                return d;
#endif
    return sycl::device(sycl::default_selector_v);
}

USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state(void)
{
#if defined(__ACPP_ENABLE_CUDA_TARGET__) && defined(__CUDA_ARCH__)
    return &ushmemi_sycl_cuda_state;
#else
    return &ushmem_device_state;
#endif
}
USHMEM_DEVICE_FN struct ushmem_ring_producer *ushmemi_dev_producer(struct ushmem_ring_producer *scratch)
{
    return scratch;
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r,
                                                   ushmem_ring_word_t *tail)
{
    return ushmem_ring_load_acquire(ushmem_ring_tail_word(r, tail));
}
/* Every atomic is at system scope: the other side is another process, its
 * device, or the host's proxy thread. Atomics are relaxed, as OpenSHMEM's
 * are (fence and quiet order them); a set is a release store. */
template <typename T>
using ushmemi_dev_ref = sycl::atomic_ref<T, sycl::memory_order::relaxed, sycl::memory_scope::system,
                                         sycl::access::address_space::generic_space>;
#if defined(__CUDA_ARCH__)
USHMEMI_PTX_RMW(32, "u32", "b32", "r", unsigned)
USHMEMI_PTX_RMW(64, "u64", "b64", "l", unsigned long long)
#endif
USHMEM_DEVICE_FN uint32_t ushmemi_dev_load32(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
    return ushmemi_ptx_load_acquire32(p);
#else
    return ushmemi_dev_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(sycl::memory_order::acquire);
#endif
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_load64(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    return ushmemi_ptx_load_acquire64(p);
#else
    return ushmemi_dev_ref<uint64_t>(*const_cast<uint64_t *>(p)).load(sycl::memory_order::acquire);
#endif
}
template <typename T>
static inline T ushmemi_dev_rmw(T *p, unsigned op, T v, T cmp)
{
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(T) == 4)
        return (T)ushmemi_ptx_rmw32(p, op, (unsigned)v, (unsigned)cmp);
    else
        return (T)ushmemi_ptx_rmw64(p, op, (unsigned long long)v, (unsigned long long)cmp);
#endif
    ushmemi_dev_ref<T> a(*p);
    switch (op) {
    case USHMEM_RING_AMO_FETCH: return a.load();
    case USHMEM_RING_AMO_SET: a.store(v, sycl::memory_order::release); return 0;
    case USHMEM_RING_AMO_SWAP: return a.exchange(v);
    case USHMEM_RING_AMO_CSWAP: a.compare_exchange_strong(cmp, v); return cmp;
    case USHMEM_RING_AMO_ADD: return a.fetch_add(v);
    case USHMEM_RING_AMO_AND: return a.fetch_and(v);
    case USHMEM_RING_AMO_OR: return a.fetch_or(v);
    default: return a.fetch_xor(v);
    }
}
USHMEM_DEVICE_FN uint32_t ushmemi_dev_rmw32(uint32_t *p, unsigned op, uint32_t v, uint32_t cmp)
{
    return ushmemi_dev_rmw<uint32_t>(p, op, v, cmp);
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_rmw64(uint64_t *p, unsigned op, uint64_t v, uint64_t cmp)
{
    return ushmemi_dev_rmw<uint64_t>(p, op, v, cmp);
}
USHMEM_DEVICE_FN void ushmemi_dev_post32(uint32_t *p, unsigned op, uint32_t v)
{
    ushmemi_dev_rmw32(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_post64(uint64_t *p, unsigned op, uint64_t v)
{
    ushmemi_dev_rmw64(p, op, v, 0);
}
/* SYCL 2020's sycl::atomic_fence; AdaptiveCpp 24.06 lacks it, and says
 * which target a pass compiles for instead. */
USHMEM_DEVICE_FN void ushmemi_dev_fence(void)
{
#if defined(__CUDA_ARCH__)
    ushmemi_ptx_fence();
#elif defined(__acpp_if_target_host)
    __acpp_if_target_host(std::atomic_thread_fence(std::memory_order_seq_cst);)
    __acpp_if_target_hiplike(__threadfence_system();)
#else
    sycl::atomic_fence(sycl::memory_order::seq_cst, sycl::memory_scope::system);
#endif
}
/* The work-items that share a cooperative call: USHMEMI_DEV_THREAD (an
 * unsigned) the calling one alone, or a group object. */
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_rank(unsigned scope)
{
    (void)scope;
    return 0;
}
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_size(unsigned scope)
{
    (void)scope;
    return 1;
}
USHMEM_DEVICE_FN void ushmemi_dev_group_sync(unsigned scope)
{
    (void)scope;
}
template <typename Group>
static inline unsigned ushmemi_dev_group_rank(const Group &g)
{
    static_assert(sycl::is_group_v<Group>, "the last argument is a sycl::group or sycl::sub_group");
    return (unsigned)g.get_local_linear_id();
}
template <typename Group>
static inline unsigned ushmemi_dev_group_size(const Group &g)
{
    return (unsigned)g.get_local_linear_range();
}
template <typename Group>
static inline void ushmemi_dev_group_sync(const Group &g)
{
    sycl::group_barrier(g);
}
#define USHMEMI_DEV_COPY_FN static inline
#if defined(__ACPP_ENABLE_CUDA_TARGET__)
/* A vector type (clang's), so that a word is one 16-byte load and one store
 * (a struct's copy becomes two 8-byte ones), and the copy's four words stay
 * in registers (unrolled), as nvcc makes of the CUDA branch's int4. */
typedef unsigned ushmemi_dev_word16 __attribute__((ext_vector_type(4)));
#else
struct alignas(16) ushmemi_dev_word16 {
    uint64_t lo, hi;
};
#endif
#if defined(__CUDA_ARCH__)
#define USHMEMI_DEV_UNROLL _Pragma("unroll")
#else
#define USHMEMI_DEV_UNROLL
#endif
#include <ushmem/detail/device_copy.h>
USHMEM_DEVICE_FN void ushmemi_dev_memcpy(void *dst, const void *src, size_t n)
{
    std::memcpy(dst, src, n);
}
USHMEM_DEVICE_FN void ushmemi_dev_memzero(void *dst, size_t n)
{
    std::memset(dst, 0, n);
}
/* A work-item's private memory and a work-group's local memory may be out
 * of the proxy thread's reach (on a GPU they are): values of p, g and
 * fetching atomics, and puts from or gets into such memory, travel in the
 * ring. sycl::address_space_cast says where a generic pointer points. A
 * test may define USHMEMI_DEV_SYCL_ALL_IN_RING to 1 to send every such
 * value through the ring, as a GPU's private memory would. */
#define USHMEMI_DEV_RESULTS_IN_RING 1
USHMEM_DEVICE_FN int ushmemi_dev_proxy_reaches(const void *p)
{
#if defined(USHMEMI_DEV_SYCL_ALL_IN_RING) && USHMEMI_DEV_SYCL_ALL_IN_RING
    (void)p;
    return 0;
#elif defined(__CUDA_ARCH__)
    return ushmemi_ptx_is_global(p); /* acpp's address_space_cast does not look */
#else
    return sycl::address_space_cast<sycl::access::address_space::global_space,
                                    sycl::access::decorated::no>(const_cast<void *>(p))
               .get() != nullptr;
#endif
}

#endif /* USHMEM_DETAIL_DEVICE_SYCL_H */
