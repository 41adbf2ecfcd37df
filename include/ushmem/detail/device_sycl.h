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
 * are host threads of this process (AdaptiveCpp's OpenMP backend). Device
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

USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state(void)
{
    return &ushmem_device_state;
}
USHMEM_DEVICE_FN struct ushmem_ring_producer *ushmemi_dev_producer(struct ushmem_ring_producer *scratch)
{
    return scratch;
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r)
{
    return ushmem_ring_load_acquire(&r->tail);
}
/* Every atomic is at system scope: the other side is another process, its
 * device, or the host's proxy thread. Atomics are relaxed, as OpenSHMEM's
 * are (fence and quiet order them); a set is a release store. */
template <typename T>
using ushmemi_dev_ref = sycl::atomic_ref<T, sycl::memory_order::relaxed, sycl::memory_scope::system,
                                         sycl::access::address_space::generic_space>;
USHMEM_DEVICE_FN uint32_t ushmemi_dev_load32(const uint32_t *p)
{
    return ushmemi_dev_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(sycl::memory_order::acquire);
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_load64(const uint64_t *p)
{
    return ushmemi_dev_ref<uint64_t>(*const_cast<uint64_t *>(p)).load(sycl::memory_order::acquire);
}
template <typename T>
static inline T ushmemi_dev_rmw(T *p, unsigned op, T v, T cmp)
{
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
#if defined(__acpp_if_target_host)
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
struct alignas(16) ushmemi_dev_word16 {
    uint64_t lo, hi;
};
#define USHMEMI_DEV_UNROLL
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
#else
    return sycl::address_space_cast<sycl::access::address_space::global_space,
                                    sycl::access::decorated::no>(const_cast<void *>(p))
               .get() != nullptr;
#endif
}

#endif /* USHMEM_DETAIL_DEVICE_SYCL_H */
