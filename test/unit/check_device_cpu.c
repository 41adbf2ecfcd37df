/* Check suite for the cpu device backend and the backend registry. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../src/common/vars.h"
#include "../../src/device/device.h"

static const struct ushmemi_device_ops *ops;
static struct ushmemi_device *dev;

static void setup(void)
{
    ck_assert_int_eq(ushmemi_device_open("cpu", 0, 1, &ops, &dev), USHMEM_OK);
}

static void teardown(void)
{
    ops->close(dev);
}

static bool fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

START_TEST(import_twice_aliases)
{
    const size_t size = 3 * 4096 + 5;
    char *heap, *a, *b;
    struct ushmemi_ipc_handle h;

    ck_assert_int_eq(ops->heap_alloc(dev, size, (void **)&heap), USHMEM_OK);
    ck_assert_int_eq(ops->export_mem(dev, heap, size, &h), USHMEM_OK);
    ck_assert_int_ge(h.fd, 0);
    ck_assert_uint_eq(h.size, size);

    int fd1 = dup(h.fd), fd2 = dup(h.fd);
    ck_assert_int_eq(ops->import_mem(dev, &h, fd1, (void **)&a), USHMEM_OK);
    ck_assert(!fd_is_open(fd1)); /* import consumes its fd */
    ck_assert_int_eq(ops->import_mem(dev, &h, fd2, (void **)&b), USHMEM_OK);
    ck_assert_ptr_ne(a, b);
    ck_assert_ptr_ne(a, heap);
    ck_assert_ptr_ne(b, heap);

    heap[0] = 'x';
    heap[size - 1] = 'y';
    ck_assert_int_eq(a[0], 'x');
    ck_assert_int_eq(b[size - 1], 'y');
    a[100] = 'z';
    ck_assert_int_eq(heap[100], 'z');
    ck_assert_int_eq(b[100], 'z');

    /* Each mapping closes on its own; the other stays usable. */
    ck_assert_int_eq(ops->close_import(dev, a, size), USHMEM_OK);
    b[200] = 'w';
    ck_assert_int_eq(heap[200], 'w');
    ck_assert_int_eq(ops->close_import(dev, a, size), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ops->close_import(dev, b, size), USHMEM_OK);

    /* The exported fd stays the backend's until heap_free. */
    ck_assert(fd_is_open(h.fd));
    ops->heap_free(dev, heap, size);
    ck_assert(!fd_is_open(h.fd));
}
END_TEST

/* A heap grows into its reserve; an importer that mapped it before maps
 * each chunk behind its mapping; a chunk is undone on both sides; the
 * reserve is refused past its end with a reason and nothing mapped. */
START_TEST(grow_export_import_chunks)
{
    const size_t start = 64 * 1024, reserve = 4 << 20, grown = 1 << 20;
    char *heap, *peer, why[128] = "";
    struct ushmemi_ipc_handle h, c;
    struct ushmemi_ptr_attr attr;

    ck_assert_int_eq(ops->heap_reserve(dev, start, reserve, (void **)&heap), USHMEM_OK);
    ck_assert_uint_eq((uintptr_t)heap % ushmemi_heap_alignment_for(reserve), 0);
    ck_assert_int_eq(ops->export_mem(dev, heap, start, &h), USHMEM_OK);
    ck_assert_int_eq(ops->import_mem(dev, &h, dup(h.fd), (void **)&peer), USHMEM_OK);
    heap[start - 1] = 'a';
    ck_assert_int_eq(peer[start - 1], 'a');

    ck_assert_int_eq(ops->heap_grow(dev, heap, start, grown, why, sizeof(why)), USHMEM_OK);
    heap[grown - 1] = 'b';
    ck_assert_int_eq(ops->pointer_query(dev, heap + grown - 1, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_HOST);
    ck_assert_int_eq(ops->export_chunk(dev, heap, start, grown, &c), USHMEM_OK);
    ck_assert_uint_eq(c.size, grown - start);
    int fd = dup(c.fd);
    ck_assert_int_eq(ops->import_chunk(dev, peer, start, grown, &c, fd), USHMEM_OK);
    ck_assert(!fd_is_open(fd)); /* consumed */
    ck_assert_int_eq(peer[grown - 1], 'b');
    peer[start] = 'c';
    ck_assert_int_eq(heap[start], 'c');

    /* A second chunk, undone on both sides: the first stays. */
    ck_assert_int_eq(ops->heap_grow(dev, heap, grown, 2 * grown, why, sizeof(why)), USHMEM_OK);
    ck_assert_int_eq(ops->export_chunk(dev, heap, grown, 2 * grown, &c), USHMEM_OK);
    ck_assert_int_eq(ops->import_chunk(dev, peer, grown, 2 * grown, &c, dup(c.fd)), USHMEM_OK);
    peer[2 * grown - 1] = 'd';
    ck_assert_int_eq(heap[2 * grown - 1], 'd');
    ops->close_chunk(dev, peer, grown, 2 * grown);
    ops->heap_shrink(dev, heap, grown, 2 * grown);
    ck_assert_int_eq(ops->pointer_query(dev, heap + grown, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_UNKNOWN);
    ck_assert_int_eq(peer[grown - 1], 'b');

    /* Past the reserve: refused, with a reason, nothing mapped. */
    ck_assert_int_ne(ops->heap_grow(dev, heap, grown, 2 * reserve, why, sizeof(why)), USHMEM_OK);
    ck_assert_msg(strstr(why, "reserved") != NULL, "why: %s", why);
    ck_assert_int_eq(ops->pointer_query(dev, heap + grown, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_UNKNOWN);

    ck_assert_int_eq(ops->close_import(dev, peer, start), USHMEM_OK);
    ops->heap_free(dev, heap, start);
}
END_TEST

/* An existing private range becomes exportable in place, keeps its bytes,
 * aliases its imports, and turns private again with its bytes kept. */
START_TEST(share_static_in_place)
{
    const size_t len = 2 * 4096;
    char *range = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(range, MAP_FAILED);
    for (size_t i = 0; i < len; i++)
        range[i] = (char)(i * 7);

    ck_assert_int_eq(ops->share_static(dev, range, len), USHMEM_OK);
    for (size_t i = 0; i < len; i++)
        ck_assert_int_eq(range[i], (char)(i * 7));
    struct ushmemi_ipc_handle h;
    ck_assert_int_eq(ops->export_mem(dev, range, len, &h), USHMEM_OK);
    char *alias;
    ck_assert_int_eq(ops->import_mem(dev, &h, dup(h.fd), (void **)&alias), USHMEM_OK);
    ck_assert_ptr_ne(alias, range);
    alias[100] = 'x';
    ck_assert_int_eq(range[100], 'x');

    ops->unshare_static(dev, range, len);
    ck_assert_int_eq(range[100], 'x');
    ck_assert_int_eq(range[len - 1], (char)((len - 1) * 7));
    range[100] = 'y'; /* private again: the old import no longer sees it */
    ck_assert_int_eq(alias[100], 'x');
    ck_assert_int_eq(ops->export_mem(dev, range, len, &h), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ops->close_import(dev, alias, len), USHMEM_OK);
    munmap(range, len);
}
END_TEST

START_TEST(export_and_import_refuse_bad_input)
{
    char *heap;
    struct ushmemi_ipc_handle h;
    char local[64];
    void *out = (void *)0x1;

    ck_assert_int_eq(ops->heap_alloc(dev, 0, &out), USHMEM_ERR_INVALID_PARAM);
    ck_assert_ptr_eq(out, (void *)0x1);
    ck_assert_int_eq(ops->heap_alloc(dev, 8192, (void **)&heap), USHMEM_OK);
    ck_assert_int_eq(ops->export_mem(dev, local, sizeof(local), &h), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ops->export_mem(dev, heap + 4096, 4096, &h), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ops->export_mem(dev, heap, 3 * 4096, &h), USHMEM_ERR_INVALID_PARAM);

    /* A handle promising more than the file holds would SIGBUS later. */
    ck_assert_int_eq(ops->export_mem(dev, heap, 8192, &h), USHMEM_OK);
    struct ushmemi_ipc_handle lying = h;
    lying.size = 1 << 20;
    int fd = dup(h.fd);
    ck_assert_int_eq(ops->import_mem(dev, &lying, fd, &out), USHMEM_ERR_INVALID_PARAM);
    ck_assert_ptr_eq(out, (void *)0x1);
    ck_assert(!fd_is_open(fd));
    ops->heap_free(dev, heap, 8192);
}
END_TEST

START_TEST(copy_and_memset)
{
    const size_t size = 10000;
    char *heap, *host;

    ck_assert_int_eq(ops->heap_alloc(dev, size, (void **)&heap), USHMEM_OK);
    ck_assert_int_eq(ops->host_alloc(dev, size, (void **)&host), USHMEM_OK);
    ck_assert_uint_eq((uintptr_t)host % (uintptr_t)sysconf(_SC_PAGESIZE), 0);

    ck_assert_int_eq(ops->memset(dev, host, 0x5a, size), USHMEM_OK);
    for (size_t i = 0; i < size; i++)
        host[i] = (char)(host[i] + (char)(i % 7));
    ck_assert_int_eq(ops->copy(dev, heap, host, size), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_int_eq(memcmp(heap, host, size), 0);
    ck_assert_int_eq(heap[size - 1], (char)(0x5a + (size - 1) % 7));

    ck_assert_int_eq(ops->memset(dev, heap + 10, 0, 20), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_int_eq(heap[9], host[9]);
    ck_assert_int_eq(heap[10], 0);
    ck_assert_int_eq(heap[29], 0);
    ck_assert_int_eq(heap[30], host[30]);

    ops->host_free(dev, host, size);
    ops->heap_free(dev, heap, size);
}
END_TEST

/* Posing as device memory, copies wait for sync; write64 lands the word
 * behind them (the proxy's copy of its completed counter relies on that). */
START_TEST(write64_after_queued_copies)
{
    const size_t size = 4096;
    bool saved = ushmemi_settings.cpu_device_heap;
    char *heap, src[64];
    uint64_t *word;

    ushmemi_settings.cpu_device_heap = true;
    ck_assert_int_eq(ops->heap_alloc(dev, size, (void **)&heap), USHMEM_OK);
    memset(heap, 0, size);
    memset(src, 0x3c, sizeof(src));
    word = (uint64_t *)(heap + 1024);
    ck_assert_int_eq(ops->copy(dev, heap, src, sizeof(src)), USHMEM_OK);
    ck_assert_int_eq(heap[0], 0); /* queued, not landed */
    ck_assert_int_eq(ops->write64(dev, word, 77), USHMEM_OK);
    ck_assert_uint_eq(__atomic_load_n(word, __ATOMIC_ACQUIRE), 77);
    ck_assert_int_eq(memcmp(heap, src, sizeof(src)), 0);
    ushmemi_settings.cpu_device_heap = saved;
    ops->heap_free(dev, heap, size);
}
END_TEST

#if defined(__x86_64__)
#include <ucontext.h>

/* Counts the stores into one read-only page: each faults, is let through
 * alone (the page writable, the trap flag set for one instruction), and
 * the page turns read-only again behind it. */
static char *counted_page;
static size_t counted_len;
static volatile sig_atomic_t stores_counted;

static void count_store(int sig, siginfo_t *si, void *uc_v)
{
    ucontext_t *uc = uc_v;
    if (sig == SIGSEGV) {
        if ((char *)si->si_addr < counted_page || (char *)si->si_addr >= counted_page + counted_len)
            _exit(3); /* a fault elsewhere: the test's own bug */
        stores_counted++;
        mprotect(counted_page, counted_len, PROT_READ | PROT_WRITE);
        uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
    } else {
        mprotect(counted_page, counted_len, PROT_READ);
        uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
    }
}

/* A copy of a naturally aligned 1, 2, 4 or 8 bytes lands in one store, as
 * a device writes it (copy_writes_words_whole): a reader that takes a
 * fetched value the moment it lands and empties its cell (ring.h) must not
 * find the copy writing it again, which memcpy's two overlapping stores
 * did, a get's value then read for the next one's a lap later. At once
 * and queued behind other copies, posing as device memory. */
START_TEST(aligned_word_lands_in_one_store)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    bool saved = ushmemi_settings.cpu_device_heap;
    struct sigaction act = {.sa_sigaction = count_store, .sa_flags = SA_SIGINFO}, old_segv, old_trap;
    const uint64_t src = 0x0123456789abcdefull;
    char *heap, other[32] = "queued ahead";

    ck_assert(ops->copy_writes_words_whole);
    ck_assert_int_eq(ops->heap_alloc(dev, 2 * page, (void **)&heap), USHMEM_OK);
    counted_page = heap + page;
    counted_len = page;
    sigemptyset(&act.sa_mask);
    ck_assert_int_eq(sigaction(SIGSEGV, &act, &old_segv), 0);
    ck_assert_int_eq(sigaction(SIGTRAP, &act, &old_trap), 0);
    for (int queued = 0; queued < 2; queued++) {
        ushmemi_settings.cpu_device_heap = queued;
        for (size_t len = 1; len <= 8; len *= 2) {
            uint64_t got = 0;
            memset(counted_page, 0, 16);
            ck_assert_int_eq(ops->copy(dev, heap, other, sizeof(other)), USHMEM_OK);
            ck_assert_int_eq(mprotect(counted_page, page, PROT_READ), 0);
            stores_counted = 0;
            ck_assert_int_eq(ops->copy(dev, counted_page + len, &src, len), USHMEM_OK);
            ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
            int stores = stores_counted;
            ck_assert_int_eq(mprotect(counted_page, page, PROT_READ | PROT_WRITE), 0);
            ck_assert_msg(stores == 1, "%s copy of %zu aligned bytes: %d stores, want 1",
                          queued ? "a queued" : "an immediate", len, stores);
            memcpy(&got, counted_page + len, len);
            ck_assert_uint_eq(got, len == 8 ? src : src & ((1ull << (8 * len)) - 1));
            ck_assert_int_eq(memcmp(heap, other, sizeof(other)), 0);
        }
    }
    ck_assert_int_eq(sigaction(SIGSEGV, &old_segv, NULL), 0);
    ck_assert_int_eq(sigaction(SIGTRAP, &old_trap, NULL), 0);
    ushmemi_settings.cpu_device_heap = saved;
    ops->heap_free(dev, heap, 2 * page);
}
END_TEST
#endif

static enum ushmemi_mem_kind kind_of(const void *p)
{
    struct ushmemi_ptr_attr attr;
    ck_assert_int_eq(ops->pointer_query(dev, p, &attr), USHMEM_OK);
    ck_assert(attr.host_accessible);
    ck_assert_int_eq(attr.device_ordinal, -1);
    return attr.kind;
}

START_TEST(pointer_query_kinds)
{
    const size_t size = 5000;
    char *heap, *host, *imported;
    char on_stack[16];
    char *on_malloc = malloc(64);
    struct ushmemi_ipc_handle h;

    ck_assert_int_eq(ops->heap_alloc(dev, size, (void **)&heap), USHMEM_OK);
    ck_assert_int_eq(ops->host_alloc(dev, size, (void **)&host), USHMEM_OK);
    ck_assert_int_eq(ops->export_mem(dev, heap, size, &h), USHMEM_OK);
    ck_assert_int_eq(ops->import_mem(dev, &h, dup(h.fd), (void **)&imported), USHMEM_OK);

    ck_assert_int_eq(kind_of(heap), USHMEMI_MEM_HOST);
    ck_assert_int_eq(kind_of(heap + size - 1), USHMEMI_MEM_HOST);
    ck_assert_int_eq(kind_of(host + 1234), USHMEMI_MEM_HOST);
    ck_assert_int_eq(kind_of(imported + 10), USHMEMI_MEM_HOST);
    ck_assert_int_eq(kind_of(on_stack), USHMEMI_MEM_UNKNOWN);
    ck_assert_int_eq(kind_of(on_malloc), USHMEMI_MEM_UNKNOWN);
    ck_assert_int_eq(kind_of(NULL), USHMEMI_MEM_UNKNOWN);

    /* Released ranges are forgotten. */
    ck_assert_int_eq(ops->close_import(dev, imported, size), USHMEM_OK);
    ops->host_free(dev, host, size);
    ck_assert_int_eq(kind_of(imported + 10), USHMEMI_MEM_UNKNOWN);
    ck_assert_int_eq(kind_of(host + 1234), USHMEMI_MEM_UNKNOWN);
    ops->heap_free(dev, heap, size);
    ck_assert_int_eq(kind_of(heap), USHMEMI_MEM_UNKNOWN);
    free(on_malloc);
}
END_TEST

START_TEST(identity_is_stable)
{
    struct ushmemi_device_id a, b, c;
    const struct ushmemi_device_ops *ops2;
    struct ushmemi_device *dev2;

    ck_assert_int_eq(ops->identity(dev, &a), USHMEM_OK);
    ck_assert_int_eq(ops->identity(dev, &b), USHMEM_OK);
    ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
    ck_assert_str_eq(a.backend, "cpu");
    ck_assert_str_eq(a.pci_bdf, "");
    ck_assert_uint_ne(a.node_hash, 0);

    /* Another open (another PE of this node) has the same identity. */
    ck_assert_int_eq(ushmemi_device_open("cpu", 1, 2, &ops2, &dev2), USHMEM_OK);
    ck_assert_int_eq(ops2->identity(dev2, &c), USHMEM_OK);
    ck_assert_int_eq(memcmp(&a, &c, sizeof(a)), 0);
    ops2->close(dev2);

    /* The uuid is the kernel's boot id. */
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        char text[64] = "";
        char *got = fgets(text, sizeof(text), f);
        fclose(f);
        ck_assert_ptr_nonnull(got);
        char hex[40];
        snprintf(hex, sizeof(hex), "%02x%02x%02x%02x-", a.uuid[0], a.uuid[1], a.uuid[2], a.uuid[3]);
        ck_assert_int_eq(strncmp(text, hex, 9), 0);
        snprintf(hex, sizeof(hex), "%02x%02x", a.uuid[14], a.uuid[15]);
        ck_assert_int_eq(strncmp(text + 32, hex, 4), 0);
    }
}
END_TEST

START_TEST(p2p_probe_same_and_other_node)
{
    struct ushmemi_device_id me, peer;
    struct ushmemi_p2p_caps caps;

    ck_assert_int_eq(ops->identity(dev, &me), USHMEM_OK);
    ck_assert_int_eq(ops->p2p_probe(dev, &me, &caps), USHMEM_OK);
    ck_assert(caps.access);
    ck_assert(caps.native_atomics);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_HOST_MEMORY);

    peer = me;
    peer.node_hash ^= 1;
    ck_assert_int_eq(ops->p2p_probe(dev, &peer, &caps), USHMEM_OK);
    ck_assert(!caps.access);
    ck_assert(!caps.native_atomics);
    ck_assert(!caps.same_device);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_NONE);

    /* A GPU peer on this node is not host memory we can reach. */
    peer = me;
    strcpy(peer.backend, "ze");
    ck_assert_int_eq(ops->p2p_probe(dev, &peer, &caps), USHMEM_OK);
    ck_assert(!caps.access);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_NONE);
}
END_TEST

START_TEST(registry)
{
    const struct ushmemi_device_ops *o = NULL;
    struct ushmemi_device *d = NULL;
    int n = 0;

    while (ushmemi_device_backends[n] != NULL) {
        ck_assert_uint_eq(ushmemi_device_backends[n]->size, sizeof(struct ushmemi_device_ops));
        n++;
    }
    ck_assert_int_ge(n, 1);
    ck_assert_ptr_eq(ushmemi_device_backends[n - 1], &ushmemi_device_cpu_ops);

    /* cpu opens everywhere, so auto always ends with a device. */
    ck_assert_int_eq(ushmemi_device_open("auto", 0, 1, &o, &d), USHMEM_OK);
    ck_assert_ptr_nonnull(o);
    ck_assert_ptr_nonnull(d);
    o->close(d);
    o = NULL;
    ck_assert_int_eq(ushmemi_device_open("cpu", 0, 1, &o, &d), USHMEM_OK);
    ck_assert_ptr_eq(o, &ushmemi_device_cpu_ops);
    ck_assert_str_eq(o->name, "cpu");
    o->close(d);

    o = (const void *)0x1;
    d = (void *)0x2;
    ck_assert_int_eq(ushmemi_device_open("nosuch", 0, 1, &o, &d), USHMEM_ERR_INVALID_PARAM);
    ck_assert_ptr_eq(o, (const void *)0x1);
    ck_assert_ptr_eq(d, (void *)0x2);
}
END_TEST

START_TEST(link_names)
{
    ck_assert_str_eq(ushmemi_link_name(USHMEMI_LINK_HOST_MEMORY), "host-memory");
    ck_assert_str_eq(ushmemi_link_name(USHMEMI_LINK_NVLINK), "nvlink");
    ck_assert_str_eq(ushmemi_link_name(USHMEMI_LINK_NONE), "none");
}
END_TEST

static Suite *device_cpu_suite(void)
{
    Suite *s = suite_create("device_cpu");
    TCase *mem = tcase_create("memory");
    tcase_add_checked_fixture(mem, setup, teardown);
    tcase_add_test(mem, import_twice_aliases);
    tcase_add_test(mem, grow_export_import_chunks);
    tcase_add_test(mem, export_and_import_refuse_bad_input);
    tcase_add_test(mem, copy_and_memset);
    tcase_add_test(mem, write64_after_queued_copies);
#if defined(__x86_64__)
    tcase_add_test(mem, aligned_word_lands_in_one_store);
#endif
    tcase_add_test(mem, share_static_in_place);
    tcase_add_test(mem, pointer_query_kinds);
    tcase_add_test(mem, identity_is_stable);
    tcase_add_test(mem, p2p_probe_same_and_other_node);
    suite_add_tcase(s, mem);

    TCase *reg = tcase_create("registry");
    tcase_add_test(reg, registry);
    tcase_add_test(reg, link_names);
    suite_add_tcase(s, reg);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(device_cpu_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
