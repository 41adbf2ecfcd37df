/* Check suite for the ipc transport's ops table (src/transport/ipc_ops.c):
 * puts, gets and every atomic by symmetric offset between two buffers that
 * stand for two PEs' mapped heaps, the data segment as a second base array,
 * refusals (offset or length past the segment, unmapped PE, PE out of range,
 * misaligned or unsupported atomic), and the proxy thread carrying ring
 * requests over it, as it does for device code under
 * USHMEM_DEVICE_ROUTE=proxy. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/common/log.h"
#include "../../src/proxy/proxy.h"
#include "../../src/transport/ipc_ops.h"

#define HEAP 4096
#define STATIC 256

static uint64_t heap[2][HEAP / 8]; /* PE 0 and PE 1 */
static uint64_t statics[2][STATIC / 8];
static struct ushmemi_transport *t;
static const struct ushmemi_transport_ops *ops = &ushmemi_transport_ipc_ops;

static void setup(void)
{
    void *bases[2] = {heap[0], heap[1]};

    memset(heap, 0, sizeof(heap));
    memset(statics, 0, sizeof(statics));
    ushmemi_log_level = -1; /* refusals are expected; keep the output clean */
    ck_assert_int_eq(ushmemi_ipc_transport_create(bases, 2, HEAP, &t), USHMEM_OK);
}

static void teardown(void)
{
    ops->fini(t);
    t = NULL;
}

START_TEST(table_is_complete)
{
    struct ushmemi_transport *other = NULL;
    const char *why = NULL;

    ck_assert_uint_eq(ops->size, sizeof(struct ushmemi_transport_ops));
    ck_assert_str_eq(ops->name, "ipc");
    ck_assert_int_eq(ops->init(NULL, &other), USHMEM_ERR_UNSUPPORTED);
    ck_assert_ptr_null(other);
    ck_assert_int_eq(ops->can_atomic(t, 1, &why), 1);
    ck_assert_int_eq(ops->can_atomic(t, 2, &why), 0);
    ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(put_get_by_offset)
{
    char src[100], back[100];

    for (int i = 0; i < 100; i++)
        src[i] = (char)(i * 7 + 1);
    ck_assert_int_eq(ops->put(t, 1, ushmemi_sym_offset(USHMEMI_SEG_HEAP, 1000), src, 100),
                     USHMEM_OK);
    ck_assert_mem_eq((char *)heap[1] + 1000, src, 100);
    /* PE 0's heap is untouched: the offset names PE 1's copy only. */
    for (size_t i = 0; i < HEAP / 8; i++)
        ck_assert_uint_eq(heap[0][i], 0);
    memset(back, 0, sizeof(back));
    ck_assert_int_eq(ops->get(t, 1, back, 1000, 100), USHMEM_OK);
    ck_assert_mem_eq(back, src, 100);
    /* nbi forms land at once; quiet and fence succeed. */
    ck_assert_int_eq(ops->put_nbi(t, 0, HEAP - 8, src, 8), USHMEM_OK);
    ck_assert_mem_eq((char *)heap[0] + HEAP - 8, src, 8);
    memset(back, 0, sizeof(back));
    ck_assert_int_eq(ops->get_nbi(t, 0, back, HEAP - 8, 8), USHMEM_OK);
    ck_assert_mem_eq(back, src, 8);
    ck_assert_int_eq(ops->quiet(t), USHMEM_OK);
    ck_assert_int_eq(ops->fence(t), USHMEM_OK);
    /* Zero bytes at the very end is in range. */
    ck_assert_int_eq(ops->put(t, 1, HEAP, src, 0), USHMEM_OK);
}
END_TEST

START_TEST(out_of_range_refused)
{
    char buf[16] = {1};

    ck_assert_int_eq(ops->put(t, 1, HEAP - 8, buf, 16), USHMEM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(ops->get(t, 1, buf, HEAP, 1), USHMEM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(ops->put(t, 1, UINT64_C(1) << 40, buf, 1), USHMEM_ERR_OUT_OF_RANGE);
    /* An offset near 2^60 must not wrap around with the length. */
    ck_assert_int_eq(ops->put(t, 0, USHMEMI_SEG_OFFSET_MASK, buf, 2), USHMEM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(ops->put(t, 2, 0, buf, 1), USHMEM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(ops->put(t, -1, 0, buf, 1), USHMEM_ERR_OUT_OF_RANGE);
    uint64_t one = 1;
    ck_assert_int_eq(ops->atomic(t, 1, HEAP, USHMEMI_AMO_ADD, USHMEMI_AMO_UINT64, &one, NULL, NULL),
                     USHMEM_ERR_OUT_OF_RANGE);
    /* Nothing was written anywhere. */
    for (size_t i = 0; i < HEAP / 8; i++)
        ck_assert_uint_eq(heap[0][i] | heap[1][i], 0);
}
END_TEST

START_TEST(unmapped_segments_refused)
{
    void *bases[2] = {heap[0], NULL};
    struct ushmemi_transport *half;
    char buf[8] = {0};
    const char *why = NULL;

    ck_assert_int_eq(ushmemi_ipc_transport_create(bases, 2, HEAP, &half), USHMEM_OK);
    ck_assert_int_eq(ops->put(half, 1, 0, buf, 8), USHMEM_ERR_NO_ROUTE);
    ck_assert_int_eq(ops->can_atomic(half, 1, &why), 0);
    ck_assert_int_eq(ops->put(half, 0, 0, buf, 8), USHMEM_OK);
    /* No data segment was given. */
    ck_assert_int_eq(ops->put(half, 0, ushmemi_sym_offset(USHMEMI_SEG_STATIC, 0), buf, 8),
                     USHMEM_ERR_NO_ROUTE);
    ushmemi_ipc_transport_destroy(half);
}
END_TEST

START_TEST(static_segment)
{
    void *sbases[2] = {statics[0], statics[1]};
    uint32_t v = 0xabcd1234, back = 0;

    ck_assert_int_eq(ushmemi_ipc_transport_set_static(t, sbases, STATIC), USHMEM_OK);
    ck_assert_int_eq(ops->put(t, 1, ushmemi_sym_offset(USHMEMI_SEG_STATIC, 8), &v, 4), USHMEM_OK);
    ck_assert_uint_eq(((uint32_t *)statics[1])[2], v);
    ck_assert_uint_eq(((uint32_t *)heap[1])[2], 0);
    ck_assert_int_eq(ops->get(t, 1, &back, ushmemi_sym_offset(USHMEMI_SEG_STATIC, 8), 4),
                     USHMEM_OK);
    ck_assert_uint_eq(back, v);
    ck_assert_int_eq(ops->put(t, 1, ushmemi_sym_offset(USHMEMI_SEG_STATIC, STATIC - 2), &v, 4),
                     USHMEM_ERR_OUT_OF_RANGE);
    uint32_t inc = 5, old = 0;
    ck_assert_int_eq(ops->atomic(t, 0, ushmemi_sym_offset(USHMEMI_SEG_STATIC, 4), USHMEMI_AMO_ADD,
                                 USHMEMI_AMO_UINT32, &inc, NULL, &old),
                     USHMEM_OK);
    ck_assert_uint_eq(((uint32_t *)statics[0])[1], 5);
}
END_TEST

/* Every op on each integer width, checked against the word and the result. */
START_TEST(atomics_64)
{
    uint64_t *word = &heap[1][3];
    uint64_t off = 3 * 8, v, c, r;

    *word = 10;
    v = 5;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_ADD, USHMEMI_AMO_UINT64, &v, NULL, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(r, 10);
    ck_assert_uint_eq(*word, 15);
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_FETCH, USHMEMI_AMO_UINT64, NULL, NULL, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(r, 15);
    v = 99;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_SWAP, USHMEMI_AMO_UINT64, &v, NULL, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(r, 15);
    ck_assert_uint_eq(*word, 99);
    v = 7;
    c = 98; /* no match: unchanged, old value returned */
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_CSWAP, USHMEMI_AMO_UINT64, &v, &c, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(r, 99);
    ck_assert_uint_eq(*word, 99);
    c = 99;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_CSWAP, USHMEMI_AMO_UINT64, &v, &c, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(r, 99);
    ck_assert_uint_eq(*word, 7);
    v = 0xF0;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_OR, USHMEMI_AMO_UINT64, &v, NULL, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(*word, 0xF7);
    v = 0x3C;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_AND, USHMEMI_AMO_UINT64, &v, NULL, &r),
                     USHMEM_OK);
    ck_assert_uint_eq(r, 0xF7);
    ck_assert_uint_eq(*word, 0x34);
    v = 0xFF;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_XOR, USHMEMI_AMO_UINT64, &v, NULL, NULL),
                     USHMEM_OK);
    ck_assert_uint_eq(*word, 0xCB);
    int64_t neg = -300;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_SET, USHMEMI_AMO_INT64, &neg, NULL, NULL),
                     USHMEM_OK);
    int64_t add = 100, old;
    ck_assert_int_eq(ops->atomic(t, 1, off, USHMEMI_AMO_ADD, USHMEMI_AMO_INT64, &add, NULL, &old),
                     USHMEM_OK);
    ck_assert_int_eq(old, -300);
    ck_assert_int_eq((int64_t)*word, -200);
}
END_TEST

START_TEST(atomics_32_and_float)
{
    uint32_t *words = (uint32_t *)heap[0];
    int32_t v = -5, r = 0;

    words[5] = 3;
    ck_assert_int_eq(ops->atomic(t, 0, 20, USHMEMI_AMO_ADD, USHMEMI_AMO_INT32, &v, NULL, &r),
                     USHMEM_OK);
    ck_assert_int_eq(r, 3);
    ck_assert_int_eq((int32_t)words[5], -2);
    /* The neighbouring words are untouched by a 4-byte atomic. */
    ck_assert_uint_eq(words[4], 0);
    ck_assert_uint_eq(words[6], 0);

    double d = 2.5, dold = 0;
    ck_assert_int_eq(ops->atomic(t, 0, 64, USHMEMI_AMO_SET, USHMEMI_AMO_DOUBLE, &d, NULL, NULL),
                     USHMEM_OK);
    d = -1.25;
    ck_assert_int_eq(ops->atomic(t, 0, 64, USHMEMI_AMO_SWAP, USHMEMI_AMO_DOUBLE, &d, NULL, &dold),
                     USHMEM_OK);
    ck_assert(dold == 2.5);
    float f = 1.5f, fold = 0;
    ck_assert_int_eq(ops->atomic(t, 0, 72, USHMEMI_AMO_SET, USHMEMI_AMO_FLOAT, &f, NULL, NULL),
                     USHMEM_OK);
    ck_assert_int_eq(ops->atomic(t, 0, 72, USHMEMI_AMO_FETCH, USHMEMI_AMO_FLOAT, NULL, NULL, &fold),
                     USHMEM_OK);
    ck_assert(fold == 1.5f);
    /* Arithmetic on floating types is not an atomic this table offers. */
    ck_assert_int_eq(ops->atomic(t, 0, 64, USHMEMI_AMO_ADD, USHMEMI_AMO_DOUBLE, &d, NULL, &dold),
                     USHMEM_ERR_UNSUPPORTED);
    /* Misaligned words are refused, not torn. */
    uint64_t one = 1;
    ck_assert_int_eq(ops->atomic(t, 0, 4, USHMEMI_AMO_ADD, USHMEMI_AMO_UINT64, &one, NULL, NULL),
                     USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ops->atomic(t, 0, 2, USHMEMI_AMO_ADD, USHMEMI_AMO_UINT32, &one, NULL, NULL),
                     USHMEM_ERR_INVALID_PARAM);
}
END_TEST

/* ---- The proxy thread over this transport. ---- */

static atomic_int aborts;

static void count_abort(void *ctx, ushmem_status_t status, const char *msg)
{
    (void)ctx;
    (void)status;
    (void)msg;
    atomic_fetch_add(&aborts, 1);
}

static uint64_t submit(struct ushmem_ring_header *r, struct ushmem_ring_producer *p,
                       const struct ushmem_ring_request *req)
{
    uint64_t ticket = ushmem_ring_submit(r, p, req);
    ushmem_ring_wait(r, ticket);
    return ticket;
}

START_TEST(proxy_carries_requests)
{
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    struct ushmemi_proxy *proxy;
    struct ushmemi_proxy_peer peers[2] = {{ops, t, USHMEMI_PROXY_DEVMEM_REFUSE}, {ops, t, USHMEMI_PROXY_DEVMEM_REFUSE}};
    struct ushmem_ring_producer prod = {0, 0};
    long src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8] = {0};
    uint64_t result = 0;

    atomic_store(&aborts, 0);
    ck_assert_int_eq(ushmemi_device_open("cpu", 0, 1, &dev_ops, &dev), USHMEM_OK);
    struct ushmemi_proxy_params params = {
        .dev_ops = dev_ops, .dev = dev, .capacity = 4, .my_pe = 0, .npes = 2,
        .peers = peers, .abort_cb = count_abort, .abort_ctx = NULL,
    };
    ck_assert_int_eq(ushmemi_proxy_start(&params, &proxy), USHMEM_OK);
    struct ushmem_ring_header *r = ushmemi_proxy_ring(proxy);

    struct ushmem_ring_request put = {.op = USHMEM_RING_OP_PUT, .pe = 1, .offset = 256,
                                      .local = (uintptr_t)src, .value = sizeof(src)};
    submit(r, &prod, &put);
    ck_assert_mem_eq((char *)heap[1] + 256, src, sizeof(src));
    struct ushmem_ring_request get = {.op = USHMEM_RING_OP_GET, .pe = 1, .offset = 256,
                                      .local = (uintptr_t)back, .value = sizeof(back)};
    submit(r, &prod, &get);
    ck_assert_mem_eq(back, src, sizeof(src));
    heap[0][1] = 40;
    struct ushmem_ring_request amo = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
                                      .amo_type = USHMEM_RING_AMO_UINT64, .pe = 0, .offset = 8,
                                      .value = 2, .result = (uintptr_t)&result};
    submit(r, &prod, &amo);
    ck_assert_uint_eq(result, 40);
    ck_assert_uint_eq(heap[0][1], 42);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    /* A request past the heap is refused through the abort callback, and
     * still completes, so the producer does not wait forever. */
    put.offset = HEAP - 4;
    submit(r, &prod, &put);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&r->errors), 1);
    ushmemi_proxy_stop(proxy);
    dev_ops->close(dev);
}
END_TEST

/* The copy-engine form's put with a signal add (the proxy's FLAG_SIGNAL
 * request): where the backend has store_amo_async, one call into it, the
 * data and the add both landed; without it, the store and then the
 * atomic, two calls, the same result; a signal past the heap leaves the
 * put alone. Counted around the cpu backend's own ops. */
static const struct ushmemi_device_ops *real_ops;
static atomic_int n_store, n_amo_async, n_store_amo;

static ushmem_status_t counted_store(struct ushmemi_device *dev, void *addr, uint64_t value,
                                     size_t size, const struct ushmemi_dev_then *then)
{
    atomic_fetch_add(&n_store, 1);
    return real_ops->store(dev, addr, value, size, then);
}

static ushmem_status_t counted_amo_async(struct ushmemi_device *dev, void *addr, unsigned op,
                                         size_t size, uint64_t operand, uint64_t compare,
                                         uint64_t *result, const struct ushmemi_dev_then *then)
{
    atomic_fetch_add(&n_amo_async, 1);
    return real_ops->amo_async(dev, addr, op, size, operand, compare, result, then);
}

static ushmem_status_t counted_store_amo(struct ushmemi_device *dev, void *store_addr,
                                         uint64_t store_value, size_t store_len, void *addr,
                                         unsigned op, size_t size, uint64_t operand,
                                         const struct ushmemi_dev_then *then)
{
    atomic_fetch_add(&n_store_amo, 1);
    return real_ops->store_amo_async(dev, store_addr, store_value, store_len, addr, op, size,
                                     operand, then);
}

START_TEST(put_with_signal_add_in_one_call)
{
    const struct ushmemi_transport_ops *ce = &ushmemi_transport_ipc_ce_ops;
    struct ushmemi_device *dev;
    struct ushmemi_device_ops counted;

    ck_assert_int_eq(ushmemi_device_open("cpu", 0, 1, &real_ops, &dev), USHMEM_OK);
    counted = *real_ops;
    counted.store = counted_store;
    counted.amo_async = counted_amo_async;
    counted.store_amo_async = counted_store_amo;
    ck_assert_ptr_nonnull(real_ops->store_amo_async);
    ck_assert_int_eq(ushmemi_ipc_transport_set_device(t, &counted, dev), USHMEM_OK);
    heap[1][16] = 10;
    for (int apart = 0; apart < 2; apart++) {
        atomic_store(&n_store, 0);
        atomic_store(&n_amo_async, 0);
        atomic_store(&n_store_amo, 0);
        counted.store_amo_async = apart ? NULL : counted_store_amo;
        /* 8 aligned bytes, then 3 at an odd offset. */
        ck_assert_int_eq(ce->put_value_signal_nbi(t, 1, 8, 0x1122334455667788ull, 8,
                                                  USHMEMI_AMO_ADD, 128, 5, NULL),
                         USHMEM_OK);
        ck_assert_int_eq(ce->put_value_signal_nbi(t, 1, 33, 0xabcdefull, 3, USHMEMI_AMO_ADD, 128,
                                                  7, NULL),
                         USHMEM_OK);
        ck_assert_int_eq(ce->quiet(t), USHMEM_OK);
        ck_assert_uint_eq(heap[1][1], 0x1122334455667788ull);
        const unsigned char *b = (const unsigned char *)heap[1] + 33;
        ck_assert(b[0] == 0xef && b[1] == 0xcd && b[2] == 0xab);
        ck_assert_uint_eq(heap[1][16], 10 + 12 * (uint64_t)(apart + 1));
        ck_assert_int_eq(atomic_load(&n_store_amo), apart ? 0 : 2);
        ck_assert_int_eq(atomic_load(&n_store), apart ? 2 : 0);
        ck_assert_int_eq(atomic_load(&n_amo_async), apart ? 2 : 0);
        memset((char *)heap[1] + 8, 0, 32);
    }
    /* A signal past the heap, or not 8-byte aligned: refused, the put alone
     * lands, the misaligned one through the store (the kernel would refuse
     * the whole launch). Another op than a set or an add: refused. */
    counted.store_amo_async = counted_store_amo;
    atomic_store(&n_store, 0);
    atomic_store(&n_store_amo, 0);
    ck_assert_int_ne(ce->put_value_signal_nbi(t, 1, 64, 77, 8, USHMEMI_AMO_ADD, HEAP, 1, NULL),
                     USHMEM_OK);
    ck_assert_int_ne(ce->put_value_signal_nbi(t, 1, 72, 78, 8, USHMEMI_AMO_ADD, 129, 1, NULL),
                     USHMEM_OK);
    ck_assert_int_eq(ce->quiet(t), USHMEM_OK);
    ck_assert_uint_eq(heap[1][8], 77);
    ck_assert_uint_eq(heap[1][9], 78);
    ck_assert_uint_eq(heap[1][16], 34);
    ck_assert_int_eq(atomic_load(&n_store_amo), 0);
    ck_assert_int_eq(atomic_load(&n_store), 2);
    ck_assert_int_eq(ce->put_value_signal_nbi(t, 1, 80, 79, 8, USHMEMI_AMO_CSWAP, 128, 1, NULL),
                     USHMEM_ERR_INVALID_PARAM);
    ck_assert_uint_eq(heap[1][10], 0);
    real_ops->close(dev);
}
END_TEST

static Suite *ipc_ops_suite(void)
{
    Suite *s = suite_create("ipc_ops");
    TCase *tc = tcase_create("ops");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, table_is_complete);
    tcase_add_test(tc, put_get_by_offset);
    tcase_add_test(tc, out_of_range_refused);
    tcase_add_test(tc, unmapped_segments_refused);
    tcase_add_test(tc, static_segment);
    tcase_add_test(tc, atomics_64);
    tcase_add_test(tc, atomics_32_and_float);
    tcase_add_test(tc, proxy_carries_requests);
    tcase_add_test(tc, put_with_signal_add_in_one_call);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ipc_ops_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
