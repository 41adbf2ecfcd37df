/* Check suite for the PCIe AtomicOps probe. The sysfs trees it reads are built
 * at run time in a temporary directory from the table below: directories
 * under devices/ with binary config files, and bus/pci/devices symlinks to
 * them, as real sysfs lays them out. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/device/pcie.h"

#define ROUTE (1u << 6)
#define COMP32 (1u << 7)
#define COMP64 (1u << 8)
#define COMP128 (1u << 9)
#define REQ (1u << 6)
#define EGRESS (1u << 7)

enum { EP = 0x0, RP = 0x4, USP = 0x5, DSP = 0x6 };

struct fx_node {
    const char *path; /* under devices/; the last component is the BDF */
    unsigned type;
    uint32_t devcap2;
    uint16_t devctl2;
};

/* One tree serves every case:
 *   pci0000:00 - root port 00:01.0 - switch 01:00.0 - ports 02:08.0, 02:10.0
 *                  - GPUs 3b:00.0 (under 02:08.0) and 3c:00.0 (under 02:10.0)
 *              - root port 00:03.0 - NIC 5e:00.0
 *              - 00:05.0 and 00:06.0 on the root bus, with the register values
 *                of the GPUs of a virtual machine
 *   pci0000:80 - root port 80:01.0 - 81:00.0 */
#define SW "pci0000:00/0000:00:01.0/0000:01:00.0"
static const struct fx_node tree[] = {
    {"pci0000:00/0000:00:01.0", RP, ROUTE | 0x3f, 0},
    {SW, USP, ROUTE, 0},
    {SW "/0000:02:08.0", DSP, ROUTE, 0},
    {SW "/0000:02:08.0/0000:3b:00.0", EP, COMP32 | COMP64 | COMP128, REQ},
    {SW "/0000:02:10.0", DSP, ROUTE, 0},
    {SW "/0000:02:10.0/0000:3c:00.0", EP, COMP32 | COMP64 | COMP128, REQ},
    {"pci0000:00/0000:00:03.0", RP, ROUTE, 0},
    {"pci0000:00/0000:00:03.0/0000:5e:00.0", EP, COMP32 | COMP64, REQ},
    {"pci0000:00/0000:00:05.0", EP, 0x00070813, 0x1040},
    {"pci0000:00/0000:00:06.0", EP, 0x00070813, 0x1040},
    {"pci0000:80/0000:80:01.0", RP, ROUTE, 0},
    {"pci0000:80/0000:80:01.0/0000:81:00.0", EP, COMP64, REQ},
};

/* A change to one node of the tree for one case. */
struct override {
    const char *bdf;
    uint32_t cap_clear, cap_set;
    uint16_t ctl_clear, ctl_set;
    unsigned version;   /* 0: 2 */
    int length;         /* 0: 256; -1: no config file */
};

struct fx_case {
    const char *name;
    const char *src, *dst;
    struct override ov[2];
    enum ushmemi_tristate expect;
    const char *want[2]; /* substrings of why: the device and the bit */
};

static const struct fx_case cases[] = {
    {"enabled through a switch", "0000:3b:00.0", "0000:3c:00.0", {{0}}, USHMEMI_YES,
     {"0000:3b:00.0 enables", "2 port(s)"}},
    {"requester disabled", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:3b:00.0", .ctl_clear = REQ}}, USHMEMI_NO,
     {"source 0000:3b:00.0", "DevCtl2 bit 6 clear"}},
    {"switch port without routing", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:08.0", .cap_clear = ROUTE}}, USHMEMI_NO,
     {"switch downstream port 0000:02:08.0 does not route", "DevCap2 bit 6 clear"}},
    {"egress blocked where the request leaves", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:10.0", .ctl_set = EGRESS}}, USHMEMI_NO,
     {"switch downstream port 0000:02:10.0 blocks", "DevCtl2 bit 7 set"}},
    /* The request enters 02:08.0 from its link and leaves through 02:10.0. */
    {"egress blocking on an ingress port", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:08.0", .ctl_set = EGRESS}}, USHMEMI_YES, {"0000:3c:00.0", "2 port(s)"}},
    {"completer without 64-bit", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:3c:00.0", .cap_clear = COMP64}}, USHMEMI_NO,
     {"destination 0000:3c:00.0", "DevCap2 bit 8 clear"}},
    {"short config on a bridge", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:10.0", .length = 64}}, USHMEMI_UNKNOWN,
     {"bridge 0000:02:10.0", "only 64 bytes"}},
    {"no config file on a bridge", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:08.0", .length = -1}}, USHMEMI_UNKNOWN,
     {"bridge 0000:02:08.0", "cannot open"}},
    {"short config on the source", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:3b:00.0", .length = 64}}, USHMEMI_UNKNOWN,
     {"source 0000:3b:00.0", "only 64 bytes"}},
    {"a definite no outweighs an unknown", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:08.0", .length = 64}, {.bdf = "0000:3c:00.0", .cap_clear = COMP64}},
     USHMEMI_NO, {"destination 0000:3c:00.0", "DevCap2 bit 8 clear"}},
    {"root bus without root port", "0000:00:05.0", "0000:00:06.0", {{0}}, USHMEMI_UNKNOWN,
     {"0000:00:05.0 and 0000:00:06.0 sit on root bus pci0000:00", "cannot be verified"}},
    {"one device on the root bus", "0000:3b:00.0", "0000:00:06.0", {{0}}, USHMEMI_UNKNOWN,
     {"0000:00:06.0 sits on root bus", "cannot be verified"}},
    {"capability version 1", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:3c:00.0", .version = 1}}, USHMEMI_NO,
     {"destination 0000:3c:00.0", "version 1"}},
    {"capability version 1 on a bridge", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:02:10.0", .version = 1}}, USHMEMI_NO,
     {"switch downstream port 0000:02:10.0", "version 1"}},
    {"across root ports", "0000:3b:00.0", "0000:5e:00.0", {{0}}, USHMEMI_YES,
     {"0000:5e:00.0 completes", "4 port(s)"}},
    {"upstream port blocks egress going up", "0000:3b:00.0", "0000:5e:00.0",
     {{.bdf = "0000:01:00.0", .ctl_set = EGRESS}}, USHMEMI_NO,
     {"switch upstream port 0000:01:00.0 blocks", "DevCtl2 bit 7 set"}},
    {"root port blocks egress going down", "0000:3b:00.0", "0000:5e:00.0",
     {{.bdf = "0000:00:03.0", .ctl_set = EGRESS}}, USHMEMI_NO,
     {"root port 0000:00:03.0 blocks", "DevCtl2 bit 7 set"}},
    /* Going up, the request enters 00:03.0 from its link: its egress is not used. */
    {"root port egress blocking going up", "0000:5e:00.0", "0000:3b:00.0",
     {{.bdf = "0000:00:03.0", .ctl_set = EGRESS}}, USHMEMI_YES,
     {"0000:5e:00.0 enables", "4 port(s)"}},
    {"root port without routing", "0000:3b:00.0", "0000:5e:00.0",
     {{.bdf = "0000:00:01.0", .cap_clear = ROUTE}}, USHMEMI_NO,
     {"root port 0000:00:01.0 does not route", "DevCap2 bit 6 clear"}},
    /* Both GPUs sit below 00:01.0 and 01:00.0: the request never crosses them. */
    {"ports above the turn are off the path", "0000:3b:00.0", "0000:3c:00.0",
     {{.bdf = "0000:00:01.0", .cap_clear = ROUTE}, {.bdf = "0000:01:00.0", .length = 64}},
     USHMEMI_YES, {"0000:3b:00.0 enables", "2 port(s)"}},
    {"different root complexes", "0000:3b:00.0", "0000:81:00.0", {{0}}, USHMEMI_UNKNOWN,
     {"different root complexes (pci0000:00, pci0000:80)", "0000:81:00.0"}},
    {"device not in sysfs", "0000:3b:00.0", "0000:99:00.0", {{0}}, USHMEMI_UNKNOWN,
     {"0000:99:00.0 is not listed", "bus/pci/devices"}},
};

static void put16(uint8_t *cfg, size_t off, unsigned v)
{
    cfg[off] = (uint8_t)v;
    cfg[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *cfg, size_t off, uint32_t v)
{
    put16(cfg, off, v & 0xffff);
    put16(cfg, off + 2, v >> 16);
}

static void mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        ck_assert_msg(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", buf,
                      strerror(errno));
        *p = '/';
    }
    ck_assert_msg(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s", buf);
}

/* Config space with a power management and an MSI capability ahead of the
 * PCI Express one, so the probe has to walk the list. */
static void write_config(const char *dir, const struct fx_node *n, const struct override *ov)
{
    uint8_t cfg[256] = {0};
    const unsigned exp = 0x70;
    uint32_t devcap2 = n->devcap2;
    unsigned devctl2 = n->devctl2, version = 2;
    size_t length = sizeof(cfg);
    char path[4096 + 16];

    if (ov != NULL) {
        if (ov->length < 0)
            return;
        devcap2 = (devcap2 & ~ov->cap_clear) | ov->cap_set;
        devctl2 = (devctl2 & ~(unsigned)ov->ctl_clear) | ov->ctl_set;
        if (ov->version != 0)
            version = ov->version;
        if (ov->length > 0)
            length = (size_t)ov->length;
    }
    put16(cfg, 0x00, 0x10de);
    put16(cfg, 0x02, 0x2335);
    put16(cfg, 0x06, 0x0010);
    cfg[0x0e] = n->type == EP ? 0x00 : 0x01;
    cfg[0x34] = 0x40;
    cfg[0x40] = 0x01; /* power management */
    cfg[0x41] = 0x50;
    cfg[0x50] = 0x05; /* MSI */
    cfg[0x51] = exp;
    cfg[exp] = 0x10;
    cfg[exp + 1] = 0x00;
    put16(cfg, exp + 0x02, version | n->type << 4);
    if (version >= 2) {
        put32(cfg, exp + 0x24, devcap2);
        put16(cfg, exp + 0x28, devctl2);
    }
    snprintf(path, sizeof(path), "%s/config", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(cfg, 1, length, f), length);
    ck_assert_int_eq(fclose(f), 0);
}

static const struct override *find_override(const struct fx_case *c, const char *bdf)
{
    for (size_t i = 0; i < 2; i++)
        if (c->ov[i].bdf != NULL && strcmp(c->ov[i].bdf, bdf) == 0)
            return &c->ov[i];
    return NULL;
}

static void build_tree(const char *root, const struct fx_case *c)
{
    char dir[4096], link[4096], target[4096];

    snprintf(dir, sizeof(dir), "%s/bus/pci/devices", root);
    mkdirs(dir);
    for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++) {
        const char *bdf = strrchr(tree[i].path, '/') + 1;
        snprintf(dir, sizeof(dir), "%s/devices/%s", root, tree[i].path);
        mkdirs(dir);
        write_config(dir, &tree[i], find_override(c, bdf));
        snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", root, bdf);
        snprintf(target, sizeof(target), "../../../devices/%s", tree[i].path);
        ck_assert_msg(symlink(target, link) == 0, "symlink %s: %s", link, strerror(errno));
    }
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

START_TEST(fixture_case)
{
    const struct fx_case *c = &cases[_i];
    char root[] = "/tmp/check_pcie.XXXXXX";
    struct ushmemi_pcie_atomics res;

    ck_assert_ptr_nonnull(mkdtemp(root));
    build_tree(root, c);
    memset(&res, 0x5a, sizeof(res));
    ushmem_status_t st = ushmemi_pcie_atomics_path(root, c->src, c->dst, &res);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);

    ck_assert_msg(st == USHMEM_OK, "%s: status %d", c->name, st);
    ck_assert_msg(res.ok == c->expect, "%s: ok %d, want %d (%s)", c->name, res.ok, c->expect,
                  res.why);
    ck_assert_msg(memchr(res.why, '\0', sizeof(res.why)) != NULL, "%s: why unterminated", c->name);
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(strstr(res.why, c->want[i]) != NULL, "%s: why \"%s\" lacks \"%s\"", c->name,
                      res.why, c->want[i]);
}
END_TEST

START_TEST(bad_arguments)
{
    struct ushmemi_pcie_atomics res = {.ok = USHMEMI_YES, .why = "untouched"};

    ck_assert_int_eq(ushmemi_pcie_atomics_path("/sys", "3b:00.0", "0000:3c:00.0", &res),
                     USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_pcie_atomics_path("/sys", "0000:3b:00.0", "0000:3c:00.8", &res),
                     USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_pcie_atomics_path("/sys", "0000:3b:00.0/../x", "0000:3c:00.0", &res),
                     USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_pcie_atomics_path("/sys", NULL, "0000:3c:00.0", &res),
                     USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_pcie_atomics_path("/sys", "0000:3b:00.0", "0000:3c:00.0", NULL),
                     USHMEM_ERR_INVALID_PARAM);
    /* Output arguments are set only on success. */
    ck_assert_int_eq(res.ok, USHMEMI_YES);
    ck_assert_str_eq(res.why, "untouched");
}
END_TEST

/* Whatever this machine's PCI tree looks like, the probe answers and says why. */
START_TEST(real_sysfs)
{
    char bdf[2][sizeof(((struct dirent *)0)->d_name)];
    int n = 0;
    DIR *d = opendir("/sys/bus/pci/devices");
    if (d == NULL) {
        printf("real sysfs: no /sys/bus/pci/devices here, nothing to probe\n");
        return;
    }
    for (struct dirent *e; n < 2 && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            snprintf(bdf[n++], sizeof(bdf[0]), "%s", e->d_name);
    closedir(d);
    if (n < 2) {
        printf("real sysfs: fewer than two PCI devices, nothing to probe\n");
        return;
    }
    struct ushmemi_pcie_atomics res;
    ck_assert_int_eq(ushmemi_pcie_atomics_path(NULL, bdf[0], bdf[1], &res), USHMEM_OK);
    ck_assert(res.ok == USHMEMI_NO || res.ok == USHMEMI_YES || res.ok == USHMEMI_UNKNOWN);
    ck_assert_uint_gt(strlen(res.why), 0);
    printf("real sysfs: %s -> %s: %s: %s\n", bdf[0], bdf[1],
           res.ok == USHMEMI_YES ? "yes" : res.ok == USHMEMI_NO ? "no" : "unknown", res.why);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pcie");
    TCase *tc = tcase_create("atomics_path");
    tcase_add_loop_test(tc, fixture_case, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, real_sysfs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
