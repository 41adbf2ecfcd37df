/* Check suite for the ze device backend, through Debian's Level Zero loader
 * with its validation layer and the CPU test driver (test/ze_driver), which
 * behaves like a discrete GPU: a CPU load or store of device memory faults.
 * Each test sets the driver's fixture variables, then opens the backend (the
 * driver reads them at zeInit, once per process, so a test sets them once;
 * Check forks per test).
 * Exits 77 (skipped) when ZE_ENABLE_ALT_DRIVERS does not name the driver. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../count_maps.h"

#include "../../src/device/device.h"

static const struct ushmemi_device_ops *ops;
static struct ushmemi_device *dev;

/* Fixture variables, then the backend for local rank `rank` of `size`. */
static struct ushmemi_device *open_ze(const char *ndevices, const char *link, int rank, int size)
{
    setenv("UZT_DEVICES", ndevices, 1);
    setenv("UZT_LINK", link, 1);
    struct ushmemi_device *d = NULL;
    ck_assert_int_eq(ushmemi_device_open("ze", rank, size, &ops, &d), USHMEM_OK);
    ck_assert_str_eq(ops->name, "ze");
    return d;
}

static void setup(void) { dev = open_ze("2", "xelink", 0, 1); }

static void teardown(void) { ops->close(dev); }

static bool fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

static int count_maps(void)
{
    int n = test_count_maps();
    ck_assert_int_ge(n, 0);
    return n;
}

/* Writes `len` bytes of pattern `seed` to device memory and reads them back
 * through copies, checking every byte. */
static void round_trip(void *device, size_t len, unsigned seed)
{
    unsigned char *out = malloc(len), *back = malloc(len);
    ck_assert(out != NULL && back != NULL);
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(i * 13 + seed);
    memset(back, 0, len);
    ck_assert_int_eq(ops->copy(dev, device, out, len), USHMEM_OK);
    ck_assert_int_eq(ops->copy(dev, back, device, len), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_int_eq(memcmp(out, back, len), 0);
    free(out);
    free(back);
}

START_TEST(heap_is_device_memory_the_cpu_cannot_touch)
{
    const size_t size = 4 << 20;
    unsigned char *heap;
    ck_assert_int_eq(ops->heap_alloc(dev, size, (void **)&heap), USHMEM_OK);
    ck_assert_uint_eq((uintptr_t)heap % ushmemi_heap_alignment_for(size), 0);
    struct ushmemi_ptr_attr attr;
    ck_assert_int_eq(ops->pointer_query(dev, heap + 100, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_DEVICE);
    ck_assert(!attr.host_accessible);
    ck_assert(!attr.host_backed);
    ck_assert_int_eq(attr.device_ordinal, 0);

    /* A child that stores into it dies of SIGSEGV, as on a discrete GPU. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        heap[0] = 1;
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));
    ck_assert_int_eq(WTERMSIG(status), SIGSEGV);

    round_trip(heap, size, 7);
    ck_assert_int_eq(ops->memset(dev, heap + 10, 0xab, 1000), USHMEM_OK);
    unsigned char back[1020];
    ck_assert_int_eq(ops->copy(dev, back, heap, sizeof(back)), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    for (size_t i = 10; i < 1010; i++)
        ck_assert_uint_eq(back[i], 0xab);
    ck_assert_uint_eq(back[1010], (unsigned char)(1010 * 13 + 7));
    ops->heap_free(dev, heap, size);
}
END_TEST

START_TEST(host_memory_reaches_both)
{
    unsigned char *host, *heap;
    ck_assert_int_eq(ops->host_alloc(dev, 8192, (void **)&host), USHMEM_OK);
    ck_assert_int_eq(ops->heap_alloc(dev, 8192, (void **)&heap), USHMEM_OK);
    struct ushmemi_ptr_attr attr;
    ck_assert_int_eq(ops->pointer_query(dev, host, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_HOST);
    ck_assert(attr.host_accessible);
    int local;
    ck_assert_int_eq(ops->pointer_query(dev, &local, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_UNKNOWN);
    for (int i = 0; i < 8192; i++)
        host[i] = (unsigned char)(i ^ 0x5a);
    ck_assert_int_eq(ops->copy(dev, heap, host, 8192), USHMEM_OK);
    ck_assert_int_eq(ops->memset(dev, host, 0, 8192), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_uint_eq(host[77], 0);
    ck_assert_int_eq(ops->copy(dev, host, heap, 8192), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    for (int i = 0; i < 8192; i++)
        ck_assert_uint_eq(host[i], (unsigned char)(i ^ 0x5a));
    ops->heap_free(dev, heap, 8192);
    ops->host_free(dev, host, 8192);
}
END_TEST

START_TEST(each_import_is_its_own_mapping)
{
    const size_t size = 3 << 20;
    unsigned char *heap, *a, *b;
    struct ushmemi_ipc_handle h;
    ck_assert_int_eq(ops->heap_alloc(dev, size, (void **)&heap), USHMEM_OK);
    ck_assert_int_eq(ops->export_mem(dev, heap, size, &h), USHMEM_OK);
    ck_assert_int_ge(h.fd, 0);
    ck_assert_uint_eq(h.size, size);
    round_trip(heap, size, 3);

    int fd1 = dup(h.fd), fd2 = dup(h.fd);
    ck_assert_int_eq(ops->import_mem(dev, &h, fd1, (void **)&a), USHMEM_OK);
    ck_assert(!fd_is_open(fd1)); /* import consumes its fd */
    ck_assert_int_eq(ops->import_mem(dev, &h, fd2, (void **)&b), USHMEM_OK);
    ck_assert_ptr_ne(a, b);
    ck_assert_ptr_ne(a, heap);
    struct ushmemi_ptr_attr attr;
    ck_assert_int_eq(ops->pointer_query(dev, b, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_DEVICE);

    /* The same memory through every mapping. */
    unsigned char x = 0x3c, got = 0;
    ck_assert_int_eq(ops->copy(dev, a + size - 1, &x, 1), USHMEM_OK);
    ck_assert_int_eq(ops->copy(dev, &got, b + size - 1, 1), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_uint_eq(got, 0x3c);
    ck_assert_int_eq(ops->copy(dev, &got, heap + size - 1, 1), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_uint_eq(got, 0x3c);

    /* Each closes on its own; the other stays usable; twice is an error. */
    ck_assert_int_eq(ops->close_import(dev, a, size), USHMEM_OK);
    ck_assert_int_ne(ops->close_import(dev, a, size), USHMEM_OK);
    ck_assert_int_eq(ops->copy(dev, &got, b + 1, 1), USHMEM_OK);
    ck_assert_int_eq(ops->sync(dev), USHMEM_OK);
    ck_assert_uint_eq(got, (unsigned char)(1 * 13 + 3));
    ck_assert_int_eq(ops->close_import(dev, b, size), USHMEM_OK);
    ops->heap_free(dev, heap, size);
}
END_TEST

START_TEST(ten_thousand_cycles_leave_nothing)
{
    const size_t size = 64 << 10;
    int fds = count_fds(), maps = count_maps();
    for (int i = 0; i < 10000; i++) {
        void *heap, *peer;
        struct ushmemi_ipc_handle h;
        ck_assert_int_eq(ops->heap_alloc(dev, size, &heap), USHMEM_OK);
        ck_assert_int_eq(ops->export_mem(dev, heap, size, &h), USHMEM_OK);
        ck_assert_int_eq(ops->import_mem(dev, &h, dup(h.fd), &peer), USHMEM_OK);
        ck_assert_int_eq(ops->close_import(dev, peer, size), USHMEM_OK);
        ops->heap_free(dev, heap, size);
    }
    ck_assert_int_eq(count_fds(), fds);
    ck_assert_int_eq(count_maps(), maps);
}
END_TEST

START_TEST(malformed_handles_are_refused)
{
    const size_t size = 2 << 20;
    void *heap, *other, *p = NULL;
    struct ushmemi_ipc_handle h, h_other, bad;
    ck_assert_int_eq(ops->heap_alloc(dev, size, &heap), USHMEM_OK);
    ck_assert_int_eq(ops->heap_alloc(dev, 2 * size, &other), USHMEM_OK);
    ck_assert_int_eq(ops->export_mem(dev, heap, size, &h), USHMEM_OK);
    ck_assert_int_eq(ops->export_mem(dev, other, 2 * size, &h_other), USHMEM_OK);

    /* A closed fd. */
    int fd = dup(h.fd);
    close(fd);
    ck_assert_int_ne(ops->import_mem(dev, &h, fd, &p), USHMEM_OK);
    /* An fd that is not device memory: a pipe. */
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    ck_assert_int_ne(ops->import_mem(dev, &h, pipefd[0], &p), USHMEM_OK);
    ck_assert(!fd_is_open(pipefd[0])); /* consumed even when refused */
    close(pipefd[1]);
    /* The metadata of one allocation with the fd of another: the sizes differ. */
    ck_assert_int_ne(ops->import_mem(dev, &h_other, dup(h.fd), &p), USHMEM_OK);
    /* Data that no driver wrote. */
    bad = h;
    memset(bad.data + sizeof(int), 0x77, sizeof(bad.data) - sizeof(int));
    ck_assert_int_ne(ops->import_mem(dev, &bad, dup(h.fd), &p), USHMEM_OK);
    ck_assert_ptr_null(p);
    /* Closing what was never opened. */
    ck_assert_int_ne(ops->close_import(dev, heap, size), USHMEM_OK);

    /* The good handle still imports. */
    ck_assert_int_eq(ops->import_mem(dev, &h, dup(h.fd), &p), USHMEM_OK);
    ck_assert_int_eq(ops->close_import(dev, p, size), USHMEM_OK);
    ops->heap_free(dev, other, 2 * size);
    ops->heap_free(dev, heap, size);
}
END_TEST

START_TEST(static_segment_is_not_shared)
{
    ck_assert_int_eq(ops->share_static(dev, (void *)4096, 4096), USHMEM_ERR_UNSUPPORTED);
}
END_TEST

/* Local ranks 0 and 1 of a two-device node, in one process: each other's
 * peer, probed as the route decision will. */
static void probe_pair(const char *ndevices, const char *link, struct ushmemi_p2p_caps *caps,
                       struct ushmemi_device_id *a, struct ushmemi_device_id *b)
{
    struct ushmemi_device *d0 = open_ze(ndevices, link, 0, 2);
    struct ushmemi_device *d1 = open_ze(ndevices, link, 1, 2);
    ck_assert_int_eq(ops->identity(d0, a), USHMEM_OK);
    ck_assert_int_eq(ops->identity(d1, b), USHMEM_OK);
    ck_assert_int_eq(ops->p2p_probe(d0, b, caps), USHMEM_OK);
    ops->close(d1);
    ops->close(d0);
}

START_TEST(identity_and_xelink_pair)
{
    struct ushmemi_p2p_caps caps;
    struct ushmemi_device_id a, b;
    probe_pair("2", "xelink", &caps, &a, &b);
    ck_assert_str_eq(a.backend, "ze");
    ck_assert_str_eq(a.pci_bdf, "0000:10:00.0");
    ck_assert_str_eq(b.pci_bdf, "0000:11:00.0");
    ck_assert_int_ne(memcmp(a.uuid, b.uuid, sizeof(a.uuid)), 0);
    ck_assert_uint_eq(a.node_hash, b.node_hash);
    ck_assert(caps.access && caps.native_atomics && !caps.same_device);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_XELINK);
}
END_TEST

START_TEST(pcie_pair_claiming_atomics_is_pcie)
{
    struct ushmemi_p2p_caps caps;
    struct ushmemi_device_id a, b;
    setenv("UZT_PCI_BDFS", "0000:3b:00.0,0000:af:00.0", 1);
    probe_pair("2", "pcie-atomics", &caps, &a, &b);
    ck_assert_str_eq(b.pci_bdf, "0000:af:00.0");
    /* The driver claims atomics; the link is PCIe, so routes.c will check
     * AtomicOps on the path before trusting them. */
    ck_assert(caps.access && caps.native_atomics);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_PCIE);
}
END_TEST

START_TEST(pcie_pair_without_atomics)
{
    struct ushmemi_p2p_caps caps;
    struct ushmemi_device_id a, b;
    probe_pair("2", "pcie", &caps, &a, &b);
    ck_assert(caps.access && !caps.native_atomics);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_PCIE);
}
END_TEST

START_TEST(pair_without_p2p)
{
    struct ushmemi_p2p_caps caps;
    struct ushmemi_device_id a, b;
    probe_pair("2", "none", &caps, &a, &b);
    ck_assert(!caps.access && !caps.native_atomics);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_NONE);
}
END_TEST

START_TEST(two_ranks_on_one_device)
{
    struct ushmemi_p2p_caps caps;
    struct ushmemi_device_id a, b;
    probe_pair("1", "xelink", &caps, &a, &b);
    ck_assert_int_eq(memcmp(a.uuid, b.uuid, sizeof(a.uuid)), 0);
    ck_assert(caps.same_device && caps.access && caps.native_atomics);
    ck_assert_int_eq(caps.link, USHMEMI_LINK_SAME_DEVICE);
}
END_TEST

START_TEST(other_backend_or_node_is_no_peer)
{
    struct ushmemi_device_id id, other;
    struct ushmemi_p2p_caps caps;
    ck_assert_int_eq(ops->identity(dev, &id), USHMEM_OK);
    other = id;
    other.node_hash ^= 1;
    ck_assert_int_eq(ops->p2p_probe(dev, &other, &caps), USHMEM_OK);
    ck_assert(!caps.access);
    other = id;
    memcpy(other.backend, "cpu", 4);
    ck_assert_int_eq(ops->p2p_probe(dev, &other, &caps), USHMEM_OK);
    ck_assert(!caps.access);
}
END_TEST

START_TEST(affinity_mask_hides_the_peer)
{
    setenv("ZE_AFFINITY_MASK", "1", 1);
    struct ushmemi_device *d = open_ze("2", "xelink", 0, 1);
    struct ushmemi_device_id id;
    ck_assert_int_eq(ops->identity(d, &id), USHMEM_OK);
    ck_assert_str_eq(id.pci_bdf, "0000:11:00.0"); /* device 1 is the only one */
    ops->close(d);
}
END_TEST

static Suite *device_ze_suite(void)
{
    Suite *s = suite_create("device_ze");
    TCase *mem = tcase_create("memory");
    tcase_add_checked_fixture(mem, setup, teardown);
    tcase_set_timeout(mem, 60);
    tcase_add_test(mem, heap_is_device_memory_the_cpu_cannot_touch);
    tcase_add_test(mem, host_memory_reaches_both);
    tcase_add_test(mem, each_import_is_its_own_mapping);
    tcase_add_test(mem, ten_thousand_cycles_leave_nothing);
    tcase_add_test(mem, malformed_handles_are_refused);
    tcase_add_test(mem, static_segment_is_not_shared);
    tcase_add_test(mem, other_backend_or_node_is_no_peer);
    suite_add_tcase(s, mem);

    TCase *peers = tcase_create("peers");
    tcase_add_test(peers, identity_and_xelink_pair);
    tcase_add_test(peers, pcie_pair_claiming_atomics_is_pcie);
    tcase_add_test(peers, pcie_pair_without_atomics);
    tcase_add_test(peers, pair_without_p2p);
    tcase_add_test(peers, two_ranks_on_one_device);
    tcase_add_test(peers, affinity_mask_hides_the_peer);
    suite_add_tcase(s, peers);
    return s;
}

int main(void)
{
    const char *alt = getenv("ZE_ENABLE_ALT_DRIVERS");
    if (alt == NULL || strstr(alt, "ze_ushmem_test") == NULL) {
        printf("ZE_ENABLE_ALT_DRIVERS does not name the ze test driver: skipped\n");
        return 77;
    }
    SRunner *sr = srunner_create(device_ze_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
