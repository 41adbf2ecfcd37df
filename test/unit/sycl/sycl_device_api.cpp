/* The device API from SYCL kernels (include/ushmem/detail/device_sycl.h):
 * every call, from work-items of kernels on a plain sycl::queue, each
 * result checked on every PE against what its neighbours sent.
 *
 * PE `me` writes to `right` = me + 1 and reads from `left` = me - 1 (mod n):
 * with one PE both are itself. Phases meet at shmem_barrier_all; a phase's
 * sending kernel and its checking kernel are separate, because a CPU device
 * runs a work-group's work-items one after the other between group
 * barriers, so a work-item must never wait for another of its own group.
 *
 * Run under oshrun at 1 to 4 PEs, directly and with USHMEM_DEVICE_ROUTE=
 * proxy; built a second time with USHMEMI_DEV_SYCL_ALL_IN_RING=1, where every
 * value of p, g and the fetching atomics travels in the proxy's ring. */
#include <shmem.h>
#include <sycl/sycl.hpp>
#include <ushmem/device.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static int me, npes, right, left, failures;
static sycl::queue *q;

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            if (failures++ < 20) {                                                     \
                fprintf(stderr, "PE %d: ", me);                                        \
                fprintf(stderr, __VA_ARGS__);                                          \
                fputc('\n', stderr);                                                   \
            }                                                                          \
        }                                                                              \
    } while (0)

enum { NI = 8 }; /* work-items per kernel in the typed and atomic phases */

template <typename T>
static T val(int pe, int i)
{
    return (T)(pe * 16 + i + 1);
}

/* The host fills and reads symmetric memory through the queue: on a GPU the
 * heap is device memory, which host code must not touch. */
template <typename T>
static void heap_write(T *heap, const T *from, size_t n)
{
    q->memcpy(heap, from, n * sizeof(T)).wait();
}
template <typename T>
static std::vector<T> heap_read(const T *heap, size_t n)
{
    std::vector<T> v(n);
    q->memcpy(v.data(), heap, n * sizeof(T)).wait();
    return v;
}
template <typename T>
static T heap_get(const T *heap)
{
    return heap_read(heap, 1)[0];
}

/* Symmetric memory, zeroed, every PE at once. */
static void *zalloc(size_t bytes)
{
    void *p = shmem_calloc(1, bytes);
    if (p == NULL) {
        fprintf(stderr, "PE %d: shmem_calloc(%zu) failed\n", me, bytes);
        exit(1);
    }
    return p;
}

static void phase_state(void)
{
    int *out = sycl::malloc_shared<int>(2 + (size_t)npes, *q);
    long *heap = (long *)zalloc(sizeof(long));
    int n = npes;

    q->single_task([=] {
        out[0] = ushmem_my_pe();
        out[1] = ushmem_n_pes();
        for (int pe = 0; pe < n; pe++)
            out[2 + pe] = ushmem_ptr(heap, pe) != nullptr;
    }).wait();
    CHECK(out[0] == me && out[1] == npes, "ushmem_my_pe/n_pes in a kernel: %d/%d", out[0], out[1]);
    const char *route = getenv("USHMEM_DEVICE_ROUTE");
    int proxied = route != NULL && strcmp(route, "proxy") == 0;
    for (int pe = 0; pe < npes; pe++)
        CHECK(out[2 + pe] == !proxied, "ushmem_ptr(heap, %d) is %s", pe,
              out[2 + pe] ? "set" : "NULL");
    shmem_barrier_all();
    shmem_free(heap);
    sycl::free(out, *q);
}

/* ---- Typed RMA: every type, thread and group forms ---- */

#define OPS(T, NAME)                                                                   \
    struct ops_##NAME {                                                                \
        typedef T type;                                                                \
        static const char *name() { return #NAME; }                                    \
        static void put(T *d, const T *s, size_t n, int pe) { ushmem_##NAME##_put(d, s, n, pe); } \
        static void get(T *d, const T *s, size_t n, int pe) { ushmem_##NAME##_get(d, s, n, pe); } \
        static void put_nbi(T *d, const T *s, size_t n, int pe)                        \
        {                                                                              \
            ushmem_##NAME##_put_nbi(d, s, n, pe);                                      \
        }                                                                              \
        static void get_nbi(T *d, const T *s, size_t n, int pe)                        \
        {                                                                              \
            ushmem_##NAME##_get_nbi(d, s, n, pe);                                      \
        }                                                                              \
        static void p(T *d, T v, int pe) { ushmem_##NAME##_p(d, v, pe); }              \
        static T g(const T *s, int pe) { return ushmem_##NAME##_g(s, pe); }            \
        template <typename G>                                                          \
        static void put_wg(T *d, const T *s, size_t n, int pe, const G &g)             \
        {                                                                              \
            ushmemx_##NAME##_put_work_group(d, s, n, pe, g);                           \
        }                                                                              \
        template <typename G>                                                          \
        static void get_wg(T *d, const T *s, size_t n, int pe, const G &g)             \
        {                                                                              \
            ushmemx_##NAME##_get_work_group(d, s, n, pe, g);                           \
        }                                                                              \
        template <typename G>                                                          \
        static void put_nbi_wg(T *d, const T *s, size_t n, int pe, const G &g)         \
        {                                                                              \
            ushmemx_##NAME##_put_nbi_work_group(d, s, n, pe, g);                       \
        }                                                                              \
        template <typename G>                                                          \
        static void get_nbi_wg(T *d, const T *s, size_t n, int pe, const G &g)         \
        {                                                                              \
            ushmemx_##NAME##_get_nbi_work_group(d, s, n, pe, g);                       \
        }                                                                              \
    };
USHMEM_DEVICE_RMA_TYPES(OPS)
#undef OPS

/* Regions of one type's phase, NI elements each: src (this PE's values);
 * what `left` puts here (put, put_nbi, p, and the group forms); what this
 * PE gets from `left` (get, get_nbi, g, group forms), local memory. */
enum { R_PUT, R_NBI, R_P, R_WPUT, R_WNBI, R_NPUT };
enum { G_GET, G_NBI, G_G, G_WGET, G_WNBI, G_NGET };

template <typename Ops>
static void typed_one(void)
{
    typedef typename Ops::type T;
    T *src = (T *)zalloc(NI * sizeof(T));
    T *recv = (T *)zalloc(R_NPUT * NI * sizeof(T));
    T *got = sycl::malloc_shared<T>(G_NGET * NI, *q);
    int r = right, l = left;

    T init[NI];
    for (int i = 0; i < NI; i++)
        init[i] = val<T>(me, i);
    heap_write(src, init, NI);
    memset((void *)got, 0, G_NGET * NI * sizeof(T));
    shmem_barrier_all();
    /* One work-item per element with the thread forms. */
    q->parallel_for(sycl::range<1>(NI), [=](sycl::id<1> id) {
        int i = (int)id[0];
        Ops::put(&recv[R_PUT * NI + i], &src[i], 1, r);
        Ops::put_nbi(&recv[R_NBI * NI + i], &src[i], 1, r);
        Ops::p(&recv[R_P * NI + i], src[i], r);
        Ops::get(&got[G_GET * NI + i], &src[i], 1, l);
        Ops::get_nbi(&got[G_NBI * NI + i], &src[i], 1, l);
        got[G_G * NI + i] = Ops::g(&src[i], l);
        ushmem_quiet();
    }).wait();
    /* One work-group, all NI elements per call. */
    q->parallel_for(sycl::nd_range<1>(NI, NI), [=](sycl::nd_item<1> it) {
        sycl::group<1> g = it.get_group();
        Ops::put_wg(&recv[R_WPUT * NI], src, NI, r, g);
        Ops::put_nbi_wg(&recv[R_WNBI * NI], src, NI, r, g);
        Ops::get_wg(&got[G_WGET * NI], src, NI, l, g);
        Ops::get_nbi_wg(&got[G_WNBI * NI], src, NI, l, g);
        ushmemx_quiet_work_group(g);
    }).wait();
    shmem_barrier_all();
    static const char *const put_names[] = {"put", "put_nbi", "p", "put_work_group",
                                            "put_nbi_work_group"};
    static const char *const get_names[] = {"get", "get_nbi", "g", "get_work_group",
                                            "get_nbi_work_group"};
    std::vector<T> rv = heap_read(recv, R_NPUT * NI);
    for (int k = 0; k < R_NPUT; k++)
        for (int i = 0; i < NI; i++)
            CHECK(rv[k * NI + i] == val<T>(left, i), "%s_%s: element %d from PE %d wrong",
                  Ops::name(), put_names[k], i, left);
    for (int k = 0; k < G_NGET; k++)
        for (int i = 0; i < NI; i++)
            CHECK(got[k * NI + i] == val<T>(left, i), "%s_%s: element %d of PE %d wrong",
                  Ops::name(), get_names[k], i, left);
    shmem_barrier_all();
    sycl::free(got, *q);
    shmem_free(recv);
    shmem_free(src);
}

static void phase_typed(void)
{
#define RUN(T, NAME) typed_one<ops_##NAME>();
    USHMEM_DEVICE_RMA_TYPES(RUN)
#undef RUN
}

/* ---- Bytes: every size and offset, thread, work-group and sub-group ---- */

static const size_t sizes[] = {1, 3, 8, 16, 63, 479, 4096, 65536 + 5};
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]), MAXB = 65536 + 5 + 16 };
static unsigned char tag(int pe, size_t i)
{
    return (unsigned char)(pe * 37 + i * 7 + 1);
}

/* Which sub-group of its work-group the work-item is in, and how many there
 * are: sub-groups are consecutive runs of local ids in a 1-D work-group.
 * (AdaptiveCpp's CPU device answers 0 and 1 to get_group_linear_id and
 * get_group_linear_range for every one of its sub-groups of one.) */
static size_t sub_group_index(const sycl::nd_item<1> &it)
{
    return it.get_local_linear_id() / it.get_sub_group().get_max_local_range()[0];
}
static size_t sub_group_count(const sycl::nd_item<1> &it)
{
    return it.get_local_range(0) / it.get_sub_group().get_max_local_range()[0];
}

/* scope 0: one work-item; 1: a work-group of 64; 2: its sub-groups, each
 * sub-group a quarter of the bytes. */
static void bytes_one(int scope, int nbi, size_t n, size_t off)
{
    unsigned char *src = (unsigned char *)zalloc(MAXB);
    unsigned char *recv = (unsigned char *)zalloc(MAXB);
    unsigned char *got = sycl::malloc_shared<unsigned char>(MAXB, *q);
    int r = right, l = left;

    std::vector<unsigned char> init(MAXB);
    for (size_t i = 0; i < MAXB; i++)
        init[i] = tag(me, i);
    heap_write(src, init.data(), MAXB);
    memset(got, 0, MAXB);
    shmem_barrier_all();
    if (scope == 0) {
        q->single_task([=] {
            if (nbi) {
                ushmem_putmem_nbi(recv + off, src + off, n, r);
                ushmem_getmem_nbi(got + off, src + off, n, l);
                ushmem_quiet();
            } else {
                ushmem_putmem(recv + off, src + off, n, r);
                ushmem_getmem(got + off, src + off, n, l);
            }
        }).wait();
    } else {
        q->parallel_for(sycl::nd_range<1>(64, 64), [=](sycl::nd_item<1> it) {
            if (scope == 1) {
                sycl::group<1> g = it.get_group();
                if (nbi) {
                    ushmemx_putmem_nbi_work_group(recv + off, src + off, n, r, g);
                    ushmemx_getmem_nbi_work_group(got + off, src + off, n, l, g);
                    ushmemx_quiet_work_group(g);
                } else {
                    ushmemx_putmem_work_group(recv + off, src + off, n, r, g);
                    ushmemx_getmem_work_group(got + off, src + off, n, l, g);
                }
            } else {
                sycl::sub_group sg = it.get_sub_group();
                size_t parts = sub_group_count(it), part = sub_group_index(it);
                size_t lo = off + n * part / parts, hi = off + n * (part + 1) / parts;
                if (nbi) {
                    ushmemx_putmem_nbi_work_group(recv + lo, src + lo, hi - lo, r, sg);
                    ushmemx_getmem_nbi_work_group(got + lo, src + lo, hi - lo, l, sg);
                    ushmemx_quiet_work_group(sg);
                } else {
                    ushmemx_putmem_work_group(recv + lo, src + lo, hi - lo, r, sg);
                    ushmemx_getmem_work_group(got + lo, src + lo, hi - lo, l, sg);
                }
            }
        }).wait();
    }
    shmem_barrier_all();
    static const char *const scope_names[] = {"thread", "work_group", "sub_group"};
    int bad = 0;
    std::vector<unsigned char> rv = heap_read(recv, MAXB);
    for (size_t i = 0; i < MAXB && bad < 3; i++) {
        unsigned char want = i >= off && i < off + n ? tag(left, i) : 0;
        if (rv[i] != want || got[i] != want) {
            bad++;
            CHECK(0, "putmem/getmem%s (%s) of %zu bytes at offset %zu: byte %zu is %u/%u, not %u",
                  nbi ? "_nbi" : "", scope_names[scope], n, off, i, rv[i], got[i], want);
        }
    }
    shmem_barrier_all();
    sycl::free(got, *q);
    shmem_free(recv);
    shmem_free(src);
}

static void phase_bytes(void)
{
    for (int scope = 0; scope < 3; scope++)
        for (int nbi = 0; nbi < 2; nbi++)
            for (int s = 0; s < NSIZES; s++)
                for (size_t off = 0; off < 16; off += 5)
                    bytes_one(scope, nbi, sizes[s], off);
}

/* ---- Atomics: every type and operation ---- */

/* Words PE `left` works on here; the fetched values come back per item. */
template <typename T>
struct amo_words {
    T fadd, add, finc, cswap, set, bits_or, bits_and, bits_xor, fbits_or, fbits_and, fbits_xor;
};

#define AMO_STD(T, NAME, KIND)                                                         \
    static void amo_std_##NAME(void)                                                   \
    {                                                                                  \
        amo_words<T> *w = (amo_words<T> *)zalloc(sizeof(amo_words<T>));                \
        T *fetched = sycl::malloc_shared<T>(3 * NI, *q);                               \
        int r = right;                                                                 \
        shmem_barrier_all();                                                           \
        q->parallel_for(sycl::range<1>(NI), [=](sycl::id<1> id) {                      \
            int i = (int)id[0];                                                        \
            fetched[i] = ushmem_##NAME##_atomic_fetch_add(&w->fadd, (T)1, r);          \
            ushmem_##NAME##_atomic_add(&w->add, (T)2, r);                              \
            ushmem_##NAME##_atomic_inc(&w->add, r);                                    \
            fetched[NI + i] = ushmem_##NAME##_atomic_fetch_inc(&w->finc, r);           \
            if (i == 0) {                                                              \
                fetched[2 * NI] = ushmem_##NAME##_atomic_compare_swap(&w->cswap, (T)0, (T)5, r); \
                fetched[2 * NI + 1] =                                                  \
                    ushmem_##NAME##_atomic_compare_swap(&w->cswap, (T)0, (T)7, r);     \
                ushmem_##NAME##_atomic_set(&w->set, (T)11, r);                         \
                ushmem_quiet();                                                        \
                fetched[2 * NI + 2] = ushmem_##NAME##_atomic_fetch(&w->set, r);        \
                fetched[2 * NI + 3] = ushmem_##NAME##_atomic_swap(&w->set, (T)13, r);  \
            }                                                                          \
            ushmem_quiet();                                                            \
        }).wait();                                                                     \
        shmem_barrier_all();                                                           \
        amo_words<T> W = heap_get(w);                                                  \
        CHECK(W.fadd == (T)NI && W.add == (T)(3 * NI) && W.finc == (T)NI,              \
              #NAME " add/inc: %lld %lld %lld", (long long)W.fadd, (long long)W.add,    \
              (long long)W.finc);                                                      \
        for (int k = 0; k < 2; k++) {                                                  \
            unsigned seen = 0;                                                         \
            for (int i = 0; i < NI; i++) {                                             \
                long long v = (long long)fetched[k * NI + i];                          \
                if (v >= 0 && v < NI)                                                  \
                    seen |= 1u << v;                                                   \
            }                                                                          \
            CHECK(seen == (1u << NI) - 1, #NAME "_atomic_%s: fetched values %#x",      \
                  k ? "fetch_inc" : "fetch_add", seen);                                \
        }                                                                              \
        CHECK(fetched[2 * NI] == 0 && fetched[2 * NI + 1] == 5 && W.cswap == 5,        \
              #NAME "_atomic_compare_swap: %lld %lld -> %lld", (long long)fetched[2 * NI], \
              (long long)fetched[2 * NI + 1], (long long)W.cswap);                     \
        CHECK(fetched[2 * NI + 2] == 11 && fetched[2 * NI + 3] == 11 && W.set == 13,   \
              #NAME "_atomic_set/fetch/swap: %lld %lld -> %lld",                       \
              (long long)fetched[2 * NI + 2], (long long)fetched[2 * NI + 3], (long long)W.set); \
        shmem_barrier_all();                                                           \
        sycl::free(fetched, *q);                                                       \
        shmem_free(w);                                                                 \
    }
USHMEM_DEVICE_AMO_STD_TYPES(AMO_STD)
#undef AMO_STD

#define AMO_FLOAT(T, NAME)                                                             \
    static void amo_ext_##NAME(void)                                                   \
    {                                                                                  \
        T *w = (T *)zalloc(sizeof(T));                                                 \
        T *fetched = sycl::malloc_shared<T>(2, *q);                                    \
        int r = right;                                                                 \
        shmem_barrier_all();                                                           \
        q->single_task([=] {                                                           \
            ushmem_##NAME##_atomic_set(w, (T)1.5, r);                                  \
            ushmem_quiet();                                                            \
            fetched[0] = ushmem_##NAME##_atomic_fetch(w, r);                           \
            fetched[1] = ushmem_##NAME##_atomic_swap(w, (T)-2.25, r);                  \
        }).wait();                                                                     \
        shmem_barrier_all();                                                           \
        T now = heap_get(w);                                                           \
        CHECK(fetched[0] == (T)1.5 && fetched[1] == (T)1.5 && now == (T)-2.25,         \
              #NAME "_atomic_set/fetch/swap: %g %g -> %g", (double)fetched[0],         \
              (double)fetched[1], (double)now);                                        \
        shmem_barrier_all();                                                           \
        sycl::free(fetched, *q);                                                       \
        shmem_free(w);                                                                 \
    }
AMO_FLOAT(float, float)
AMO_FLOAT(double, double)
#undef AMO_FLOAT

#define AMO_BIT(T, NAME, KIND)                                                         \
    static void amo_bit_##NAME(void)                                                   \
    {                                                                                  \
        amo_words<T> *w = (amo_words<T> *)zalloc(sizeof(amo_words<T>));                \
        T *fetched = sycl::malloc_shared<T>(3 * NI, *q);                               \
        int r = right;                                                                 \
        amo_words<T> init = {};                                                        \
        init.bits_and = init.fbits_and = (T)0xff;                                      \
        heap_write(w, &init, 1);                                                       \
        shmem_barrier_all();                                                           \
        q->parallel_for(sycl::range<1>(NI), [=](sycl::id<1> id) {                      \
            int i = (int)id[0];                                                        \
            T bit = (T)((T)1 << i);                                                    \
            ushmem_##NAME##_atomic_or(&w->bits_or, bit, r);                            \
            ushmem_##NAME##_atomic_and(&w->bits_and, (T)~bit, r);                      \
            ushmem_##NAME##_atomic_xor(&w->bits_xor, (T)(bit | 0x100), r);             \
            fetched[i] = ushmem_##NAME##_atomic_fetch_or(&w->fbits_or, bit, r);        \
            fetched[NI + i] = ushmem_##NAME##_atomic_fetch_and(&w->fbits_and, (T)~bit, r); \
            fetched[2 * NI + i] = ushmem_##NAME##_atomic_fetch_xor(&w->fbits_xor, bit, r); \
            ushmem_quiet();                                                            \
        }).wait();                                                                     \
        shmem_barrier_all();                                                           \
        amo_words<T> W = heap_get(w);                                                  \
        CHECK(W.bits_or == (T)0xff && W.bits_and == 0 && W.bits_xor == (T)0xff,        \
              #NAME "_atomic_or/and/xor: %#llx %#llx %#llx", (unsigned long long)W.bits_or, \
              (unsigned long long)W.bits_and, (unsigned long long)W.bits_xor);         \
        CHECK(W.fbits_or == (T)0xff && W.fbits_and == 0 && W.fbits_xor == (T)0xff,     \
              #NAME "_atomic_fetch_or/and/xor: %#llx %#llx %#llx",                     \
              (unsigned long long)W.fbits_or, (unsigned long long)W.fbits_and,          \
              (unsigned long long)W.fbits_xor);                                        \
        for (int i = 0; i < NI; i++) {                                                 \
            T bit = (T)((T)1 << i);                                                    \
            CHECK(!(fetched[i] & bit) && (fetched[NI + i] & bit) &&                    \
                      !(fetched[2 * NI + i] & bit),                                    \
                  #NAME " fetching bitwise, item %d: %#llx %#llx %#llx", i,             \
                  (unsigned long long)fetched[i], (unsigned long long)fetched[NI + i],  \
                  (unsigned long long)fetched[2 * NI + i]);                            \
        }                                                                              \
        shmem_barrier_all();                                                           \
        sycl::free(fetched, *q);                                                       \
        shmem_free(w);                                                                 \
    }
USHMEM_DEVICE_AMO_BIT_TYPES(AMO_BIT)
#undef AMO_BIT

static void phase_amo(void)
{
#define RUN_STD(T, NAME, KIND) amo_std_##NAME();
#define RUN_BIT(T, NAME, KIND) amo_bit_##NAME();
    USHMEM_DEVICE_AMO_STD_TYPES(RUN_STD)
    amo_ext_float();
    amo_ext_double();
    USHMEM_DEVICE_AMO_BIT_TYPES(RUN_BIT)
#undef RUN_STD
#undef RUN_BIT
}

/* ---- Signals, waits and fences: data first, then the word ---- */

enum { SIG_BYTES = 1024 };
struct sig_area {
    uint64_t add_sig, set_sig, wg_sig, sg_sig, fence_flag;
    unsigned char add_data[NI][SIG_BYTES], set_data[SIG_BYTES], wg_data[SIG_BYTES],
        sg_data[4][SIG_BYTES], fence_data[SIG_BYTES];
};

static void phase_signal(void)
{
    struct sig_area *a = (struct sig_area *)zalloc(sizeof(*a));
    unsigned char *src = (unsigned char *)zalloc(SIG_BYTES);
    int *res = sycl::malloc_shared<int>(8, *q);
    int r = right, l = left;

    unsigned char init[SIG_BYTES];
    for (int i = 0; i < SIG_BYTES; i++)
        init[i] = tag(me, (size_t)i);
    heap_write(src, init, SIG_BYTES);
    memset(res, 0, 8 * sizeof(int));
    shmem_barrier_all();
    /* Senders: NI work-items each add 1 after their own block; one sets;
     * a work-group and its sub-groups put with a signal; a fenced flag. */
    q->parallel_for(sycl::range<1>(NI), [=](sycl::id<1> id) {
        int i = (int)id[0];
        if (i % 2)
            ushmem_putmem_signal(a->add_data[i], src, SIG_BYTES, &a->add_sig, 1,
                                 USHMEM_SIGNAL_ADD, r);
        else
            ushmem_putmem_signal_nbi(a->add_data[i], src, SIG_BYTES, &a->add_sig, 1,
                                     USHMEM_SIGNAL_ADD, r);
        if (i == 0) {
            ushmem_putmem_signal(a->set_data, src, SIG_BYTES, &a->set_sig, 77, USHMEM_SIGNAL_SET,
                                 r);
            ushmem_putmem(a->fence_data, src, SIG_BYTES, r);
            ushmem_fence();
            ushmem_uint64_p(&a->fence_flag, 1, r);
        }
        ushmem_quiet();
    }).wait();
    q->parallel_for(sycl::nd_range<1>(64, 64), [=](sycl::nd_item<1> it) {
        sycl::group<1> g = it.get_group();
        sycl::sub_group sg = it.get_sub_group();
        size_t part = sub_group_index(it);
        ushmemx_putmem_signal_work_group(a->wg_data, src, SIG_BYTES, &a->wg_sig, 5,
                                         USHMEM_SIGNAL_ADD, r, g);
        if (part < 4)
            ushmemx_putmem_signal_nbi_work_group(a->sg_data[part], src, SIG_BYTES, &a->sg_sig, 1,
                                                 USHMEM_SIGNAL_ADD, r, sg);
        ushmemx_quiet_work_group(g);
    }).wait();
    /* Receiver: wait for each word, then every byte behind it. */
    q->single_task([=] {
        size_t parts = 4;
        res[0] = (int)ushmem_signal_wait_until(&a->add_sig, USHMEM_CMP_GE, NI);
        res[1] = (int)ushmem_signal_wait_until(&a->set_sig, USHMEM_CMP_EQ, 77);
        res[2] = (int)ushmem_signal_wait_until(&a->wg_sig, USHMEM_CMP_EQ, 5);
        ushmem_uint64_wait_until(&a->fence_flag, USHMEM_CMP_NE, 0);
        (void)parts;
        res[3] = (int)ushmem_signal_fetch(&a->sg_sig);
    }).wait();
    CHECK(res[0] == NI && res[1] == 77 && res[2] == 5,
          "signal_wait_until returned %d %d %d (want %d 77 5)", res[0], res[1], res[2], NI);
    shmem_barrier_all(); /* every sub-group's signal has landed */
    std::vector<sig_area> seen = heap_read(a, 1);
    const sig_area &A = seen[0];
    CHECK(A.sg_sig > 0, "sub-group signals: %d then %llu", res[3], (unsigned long long)A.sg_sig);
    size_t sg_parts = (size_t)A.sg_sig;
    int bad = 0;
    for (int i = 0; i < SIG_BYTES && bad < 3; i++) {
        unsigned char want = tag(left, (size_t)i);
        int ok = A.set_data[i] == want && A.wg_data[i] == want && A.fence_data[i] == want;
        for (int k = 0; k < NI; k++)
            ok = ok && A.add_data[k][i] == want;
        for (size_t k = 0; k < sg_parts && k < 4; k++)
            ok = ok && A.sg_data[k][i] == want;
        if (!ok) {
            bad++;
            CHECK(0, "signal data byte %d from PE %d wrong", i, left);
        }
    }
    (void)l;
    shmem_barrier_all();
    sycl::free(res, *q);
    shmem_free(src);
    shmem_free(a);
}

/* Signals without data, and the waits of a group: NI work-items add 1 each
 * to `left`'s word, one sets another; a work-group waits for both and for
 * an int put after them. */
struct bare_signals {
    uint64_t added, set;
    int flag;
};

static void phase_bare_signal(void)
{
    struct bare_signals *b = (struct bare_signals *)zalloc(sizeof(*b));
    uint64_t *seen = sycl::malloc_shared<uint64_t>(2 * NI, *q);
    int r = right;

    shmem_barrier_all();
    q->parallel_for(sycl::range<1>(NI), [=](sycl::id<1> id) {
        ushmemx_signal_add(&b->added, 1, r);
        if (id[0] == 0) {
            ushmemx_signal_set(&b->set, 99, r);
            ushmem_fence();
            ushmem_int_p(&b->flag, 5, r);
        }
        ushmem_quiet();
    }).wait();
    q->parallel_for(sycl::nd_range<1>(NI, NI), [=](sycl::nd_item<1> it) {
        sycl::group<1> g = it.get_group();
        size_t i = it.get_local_linear_id();
        seen[i] = ushmemx_signal_wait_until_work_group(&b->added, USHMEM_CMP_EQ, NI, g);
        ushmemx_int_wait_until_work_group(&b->flag, USHMEM_CMP_EQ, 5, g);
        seen[NI + i] = ushmem_signal_fetch(&b->set);
    }).wait();
    for (int i = 0; i < NI; i++)
        CHECK(seen[i] == NI && seen[NI + i] == 99,
              "signal_add/set and the group waits: work-item %d saw %llu and %llu", i,
              (unsigned long long)seen[i], (unsigned long long)seen[NI + i]);
    shmem_barrier_all();
    sycl::free(seen, *q);
    shmem_free(b);
}

/* Every typed wait_until, each comparison. */
#define WAIT_ONE(T, NAME, KIND)                                                        \
    static void wait_##NAME(void)                                                      \
    {                                                                                  \
        T *ivar = (T *)zalloc(sizeof(T));                                              \
        int *res = sycl::malloc_shared<int>(1, *q);                                    \
        int r = right;                                                                 \
        *res = 0;                                                                      \
        shmem_barrier_all();                                                           \
        q->single_task([=] { ushmem_##NAME##_p(ivar, (T)42, r); }).wait();              \
        q->single_task([=] {                                                           \
            ushmem_##NAME##_wait_until(ivar, USHMEM_CMP_EQ, (T)42);                    \
            ushmem_##NAME##_wait_until(ivar, USHMEM_CMP_NE, (T)0);                     \
            ushmem_##NAME##_wait_until(ivar, USHMEM_CMP_GT, (T)41);                    \
            ushmem_##NAME##_wait_until(ivar, USHMEM_CMP_GE, (T)42);                    \
            ushmem_##NAME##_wait_until(ivar, USHMEM_CMP_LT, (T)43);                    \
            ushmem_##NAME##_wait_until(ivar, USHMEM_CMP_LE, (T)42);                    \
            *res = 1;                                                                  \
        }).wait();                                                                     \
        CHECK(*res == 1 && heap_get(ivar) == (T)42, #NAME "_wait_until");              \
        shmem_barrier_all();                                                           \
        sycl::free(res, *q);                                                           \
        shmem_free(ivar);                                                              \
    }
USHMEM_DEVICE_AMO_STD_TYPES(WAIT_ONE)
#undef WAIT_ONE

static void phase_wait(void)
{
#define RUN(T, NAME, KIND) wait_##NAME();
    USHMEM_DEVICE_AMO_STD_TYPES(RUN)
#undef RUN
}

/* ---- Barriers: a round's stores are everywhere before anyone goes on ---- */

enum { ROUNDS = 20 };

/* Round k by a group: its leader writes k into its slot on every PE, the
 * group meets every PE (barrier_all, or sync_all), the leader finds every
 * PE's slot at k, and the group meets them again before the next round. One
 * round per kernel, and the choice of call made at compile time: a CPU
 * device's compiler splits a kernel at each group barrier, and a loop or a
 * run-time branch around them is more than it handles. */
template <bool SYNC, typename G>
static void group_round(const G &g, long *slots, int *bad, int n, int my, long k)
{
    if (g.leader())
        for (int pe = 0; pe < n; pe++)
            ushmem_long_p(&slots[my], k, pe);
    if constexpr (SYNC)
        ushmemx_sync_all_work_group(g);
    else
        ushmemx_barrier_all_work_group(g);
    if (g.leader())
        for (int pe = 0; pe < n; pe++)
            if (ushmem_long_g(&slots[pe], my) != k)
                (*bad)++;
    ushmemx_sync_all_work_group(g);
}

/* The work-group of 32, or the first sub-group in it (a sub-group's calls
 * involve that sub-group only; one group per PE calls the barrier). */
template <bool SUB, bool SYNC>
static void barrier_group_round(long *slots, int *bad, long k)
{
    int n = npes, my = me;
    q->parallel_for(sycl::nd_range<1>(32, 32), [=](sycl::nd_item<1> it) {
        if constexpr (SUB) {
            if (sub_group_index(it) == 0)
                group_round<SYNC>(it.get_sub_group(), slots, bad, n, my, k);
        } else {
            group_round<SYNC>(it.get_group(), slots, bad, n, my, k);
        }
    }).wait();
}

template <bool SUB>
static void barrier_groups(long *slots, int *bad, long first)
{
    for (long k = first + 1; k <= first + ROUNDS; k++) {
        if (k % 2)
            barrier_group_round<SUB, false>(slots, bad, k);
        else
            barrier_group_round<SUB, true>(slots, bad, k);
    }
}

static void phase_barrier(void)
{
    long *slots = (long *)zalloc((size_t)npes * sizeof(long));
    int *bad = sycl::malloc_shared<int>(1, *q);
    int n = npes, my = me;

    *bad = 0;
    shmem_barrier_all();
    /* One work-item: barrier_all and sync_all in turn. */
    q->single_task([=] {
        for (long k = 1; k <= ROUNDS; k++) {
            for (int pe = 0; pe < n; pe++)
                ushmem_long_p(&slots[my], k, pe);
            if (k % 2) {
                ushmem_barrier_all();
            } else {
                ushmem_quiet();
                ushmem_sync_all();
            }
            for (int pe = 0; pe < n; pe++)
                if (ushmem_long_g(&slots[pe], my) != k)
                    (*bad)++;
            ushmem_sync_all();
        }
    }).wait();
    barrier_groups<false>(slots, bad, ROUNDS);
    barrier_groups<true>(slots, bad, 2 * ROUNDS);
    CHECK(*bad == 0, "device barriers: %d slots behind their round", *bad);
    shmem_barrier_all();
    sycl::free(bad, *q);
    shmem_free(slots);
}

/* ---- Group collectives: every byte of every PE's part ---- */

enum { COLL_BYTES = 1003 };

template <typename G>
static void group_colls(const G &g, unsigned char *a2a, unsigned char *bc, unsigned char *fc,
                        const unsigned char *src, int root)
{
    ushmemx_alltoallmem_work_group(a2a, src, COLL_BYTES, g);
    ushmemx_broadcastmem_work_group(bc, src, COLL_BYTES, root, g);
    ushmemx_fcollectmem_work_group(fc, src, COLL_BYTES, g);
}

/* mode 0: a work-group; 1: its first sub-group; 2: one work-item, with the
 * base collectives (ushmem_alltoallmem and friends). */
template <int MODE>
static void coll_one(void)
{
    const size_t nb = COLL_BYTES;
    unsigned char *src = (unsigned char *)zalloc(nb * (size_t)npes);
    unsigned char *a2a = (unsigned char *)zalloc(nb * (size_t)npes);
    unsigned char *bc = (unsigned char *)zalloc(nb);
    unsigned char *fc = (unsigned char *)zalloc(nb * (size_t)npes);
    int root = npes - 1;

    std::vector<unsigned char> init(nb * (size_t)npes);
    for (size_t i = 0; i < init.size(); i++)
        init[i] = tag(me, i);
    heap_write(src, init.data(), init.size());
    shmem_barrier_all();
    int *rc = sycl::malloc_shared<int>(3, *q);
    rc[0] = rc[1] = rc[2] = 0;
    if constexpr (MODE == 2) {
        q->single_task([=] {
            rc[0] = ushmem_alltoallmem(a2a, src, nb);
            rc[1] = ushmem_broadcastmem(bc, src, nb, root);
            rc[2] = ushmem_fcollectmem(fc, src, nb);
        }).wait();
    } else {
        q->parallel_for(sycl::nd_range<1>(64, 64), [=](sycl::nd_item<1> it) {
            if constexpr (MODE == 1) {
                if (sub_group_index(it) == 0)
                    group_colls(it.get_sub_group(), a2a, bc, fc, src, root);
            } else {
                group_colls(it.get_group(), a2a, bc, fc, src, root);
            }
        }).wait();
    }
    static const char *const mode_names[] = {"work-group", "sub-group", "base"};
    CHECK(rc[0] == 0 && rc[1] == 0 && rc[2] == 0, "%s collectives returned %d %d %d",
          mode_names[MODE], rc[0], rc[1], rc[2]);
    sycl::free(rc, *q);
    int bad = 0;
    std::vector<unsigned char> A = heap_read(a2a, nb * (size_t)npes),
                               F = heap_read(fc, nb * (size_t)npes), B = heap_read(bc, nb);
    for (int pe = 0; pe < npes; pe++)
        for (size_t i = 0; i < nb && bad < 3; i++) {
            if (A[pe * nb + i] != tag(pe, me * nb + i) || F[pe * nb + i] != tag(pe, i) ||
                (pe == 0 && B[i] != tag(root, i))) {
                bad++;
                CHECK(0, "%s collectives: byte %zu of PE %d's part wrong", mode_names[MODE], i,
                      pe);
            }
        }
    shmem_barrier_all();
    shmem_free(fc);
    shmem_free(bc);
    shmem_free(a2a);
    shmem_free(src);
}

static void phase_coll(void)
{
    coll_one<0>();
    coll_one<1>();
    coll_one<2>();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    sycl::queue queue{ushmemx_sycl_device()}; /* on a GPU, the PE's */
    q = &queue;

    /* SYCL_TEST_PHASES=amo,wait runs only those (to narrow a failure down). */
    const char *only = getenv("SYCL_TEST_PHASES");
#define PHASE(name)                                                                    \
    if (only == NULL || strstr(only, #name) != NULL)                                   \
        phase_##name();
    PHASE(state)
    PHASE(typed)
    PHASE(bytes)
    PHASE(amo)
    PHASE(signal)
    PHASE(bare_signal)
    PHASE(wait)
    PHASE(barrier)
    PHASE(coll)
#undef PHASE

    static int all, total; /* symmetric, as the reduction needs */
    all = failures;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &total, &all, 1);
    if (me == 0)
        printf("sycl_device_api: %d PEs, %s (%d failures in all) on %s\n", npes,
               total ? "FAILED" : "every check passed", total,
               queue.get_device().get_info<sycl::info::device::name>().c_str());
    shmem_finalize();
    return failures ? 1 : 0;
}
