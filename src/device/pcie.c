/* PCIe AtomicOps probe. It owns the parsing of sysfs paths into root complex
 * and bridge chains and the reading of the PCI Express capability registers
 * that decide whether a 64-bit AtomicOp can be routed from one device to
 * another: requester enable at the source, routing and egress blocking at
 * every port between them, the 64-bit completer bit at the destination. */
#include "pcie.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/log.h"

/* The PCI Express capability always lies in the first 256 bytes; an
 * unprivileged read of sysfs config stops at 64. */
#define CONFIG_NEEDED 256
#define CAP_PTR 0x34
#define STATUS 0x06
#define STATUS_CAP_LIST 0x10
#define CAP_ID_EXP 0x10
#define EXP_FLAGS 0x02
#define EXP_DEVCAP2 0x24
#define EXP_DEVCTL2 0x28
#define EXP_V2_END 0x2a /* one past Device Control 2 */
#define DEVCAP2_ATOMIC_ROUTE (1u << 6)
#define DEVCAP2_ATOMIC_COMP64 (1u << 8)
#define DEVCTL2_ATOMIC_REQ (1u << 6)
#define DEVCTL2_ATOMIC_EGRESS_BLOCK (1u << 7)

/* Device/Port Type, bits 7:4 of the PCI Express Capabilities register. */
enum port_type {
    TYPE_ROOT_PORT = 0x4,
    TYPE_UPSTREAM = 0x5,
    TYPE_DOWNSTREAM = 0x6,
    TYPE_PCIE_TO_PCI = 0x7,
    TYPE_PCI_TO_PCIE = 0x8,
};

/* Deeper than any real hierarchy; a longer path is reported as unknown. */
#define MAX_DEPTH 32

/* A device's sysfs directory split into its root complex and the chain of
 * functions from the first port below the root complex down to the device. */
struct chain {
    char real[PATH_MAX];
    char rc[24];             /* "pci0000:00" */
    size_t depth;            /* components in ends[], the device included */
    size_t ends[MAX_DEPTH];  /* offset just past each DDDD:BB:DD.F component */
};

struct node {
    unsigned type;
    uint32_t devcap2;
    uint16_t devctl2;
};

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_hex(s[i]))
            return false;
    return true;
}

/* Length of a "DDDD:BB" domain and bus prefix of s (VMD domains have more
 * than four digits), or 0. */
static size_t domain_bus_len(const char *s, size_t n)
{
    size_t d = 0;
    while (d < n && is_hex(s[d]))
        d++;
    if (d < 4 || d > 8 || d + 3 > n || s[d] != ':' || !all_hex(s + d + 1, 2))
        return 0;
    return d + 3;
}

/* "0000:3b:00.0" */
static bool is_bdf(const char *s, size_t n)
{
    size_t p = domain_bus_len(s, n);
    return p != 0 && n == p + 5 && s[p] == ':' && all_hex(s + p + 1, 2) && s[p + 3] == '.' &&
           s[p + 4] >= '0' && s[p + 4] <= '7';
}

/* "pci0000:00" */
static bool is_root_complex(const char *s, size_t n)
{
    return n > 3 && strncmp(s, "pci", 3) == 0 && domain_bus_len(s + 3, n - 3) == n - 3;
}

static void say(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(((struct ushmemi_pcie_atomics *)0)->why), fmt, ap);
    va_end(ap);
}

static const char *port_kind(unsigned type)
{
    switch (type) {
    case TYPE_ROOT_PORT: return "root port";
    case TYPE_UPSTREAM: return "switch upstream port";
    case TYPE_DOWNSTREAM: return "switch downstream port";
    case TYPE_PCIE_TO_PCI: return "PCIe-to-PCI bridge";
    case TYPE_PCI_TO_PCIE: return "PCI-to-PCIe bridge";
    default: return "bridge";
    }
}

static const char *chain_bdf(const struct chain *c, size_t i, char *buf, size_t len)
{
    size_t start = c->ends[i];
    while (start > 0 && c->real[start - 1] != '/')
        start--;
    snprintf(buf, len, "%.*s", (int)(c->ends[i] - start), c->real + start);
    return buf;
}

/* Resolves <root>/bus/pci/devices/<bdf> and splits it; false (with why) when
 * the entry is missing or its path has no recognisable root complex. */
static bool locate(const char *root, const char *bdf, struct chain *c, char *why)
{
    char link[PATH_MAX];
    size_t pos, n = 0;
    size_t ends_rev[MAX_DEPTH];
    bool found = false;

    if ((size_t)snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", root, bdf) >= sizeof(link)) {
        say(why, "the sysfs path of %s is too long", bdf);
        return false;
    }
    if (realpath(link, c->real) == NULL) {
        say(why, "%s is not listed under %s/bus/pci/devices (%s)", bdf, root, strerror(errno));
        return false;
    }
    /* Walk back from the device through DDDD:BB:DD.F components to the
     * pciDDDD:BB of its root complex. */
    pos = strlen(c->real);
    for (;;) {
        size_t start = pos;
        while (start > 0 && c->real[start - 1] != '/')
            start--;
        if (is_bdf(c->real + start, pos - start) && n < MAX_DEPTH) {
            ends_rev[n++] = pos;
        } else {
            if (n > 0 && is_root_complex(c->real + start, pos - start)) {
                snprintf(c->rc, sizeof(c->rc), "%.*s", (int)(pos - start), c->real + start);
                found = true;
            }
            break;
        }
        if (start == 0)
            break;
        pos = start - 1;
    }
    if (!found) {
        say(why, "the sysfs path of %s (%s) shows no root complex above it", bdf, c->real);
        return false;
    }
    c->depth = n;
    for (size_t i = 0; i < n; i++)
        c->ends[i] = ends_rev[n - 1 - i];
    char last[24];
    if (strcasecmp(chain_bdf(c, c->depth - 1, last, sizeof(last)), bdf) != 0) {
        say(why, "the sysfs entry of %s resolves to %s, another device", bdf, c->real);
        return false;
    }
    return true;
}

static unsigned get16(const uint8_t *cfg, size_t off) { return cfg[off] | (unsigned)cfg[off + 1] << 8; }

static uint32_t get32(const uint8_t *cfg, size_t off)
{
    return (uint32_t)get16(cfg, off) | (uint32_t)get16(cfg, off + 2) << 16;
}

/* Reads the config space in dir and finds the PCI Express capability.
 * role names the device in messages; NULL means "name it by its port type".
 * YES: node_p filled; NO or UNKNOWN: why written. */
static enum ushmemi_tristate read_node(const char *dir, const char *bdf, const char *role,
                                       struct node *node_p, char *why)
{
    char path[PATH_MAX];
    uint8_t cfg[CONFIG_NEEDED];
    size_t got = 0;
    int fd;

    if (role == NULL)
        role = "bridge";
    if ((size_t)snprintf(path, sizeof(path), "%s/config", dir) >= sizeof(path)) {
        say(why, "the config path of %s %s is too long", role, bdf);
        return USHMEMI_UNKNOWN;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say(why, "cannot open the config space of %s %s (%s)", role, bdf, strerror(errno));
        return USHMEMI_UNKNOWN;
    }
    while (got < sizeof(cfg)) {
        ssize_t r = pread(fd, cfg + got, sizeof(cfg) - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say(why, "cannot read the config space of %s %s (%s)", role, bdf, strerror(errno));
            close(fd);
            return USHMEMI_UNKNOWN;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got < sizeof(cfg)) {
        say(why, "%s %s shows only %zu bytes of config space (reading all of it needs CAP_SYS_ADMIN)",
            role, bdf, got);
        return USHMEMI_UNKNOWN;
    }
    if (get16(cfg, 0) == 0xffff) {
        say(why, "the config space of %s %s reads as all ones (device removed or powered off)",
            role, bdf);
        return USHMEMI_UNKNOWN;
    }
    if (!(get16(cfg, STATUS) & STATUS_CAP_LIST)) {
        say(why, "%s %s has no capability list, so no PCI Express capability (status bit 4 clear)",
            role, bdf);
        return USHMEMI_NO;
    }
    /* 48 hops is more capabilities than fit in 192 bytes: a longer walk is a loop. */
    unsigned ptr = cfg[CAP_PTR] & 0xfc;
    for (int hops = 0; ptr != 0; hops++) {
        if (hops == 48 || ptr < 0x40 || ptr + 2 > sizeof(cfg)) {
            say(why, "the capability list of %s %s is malformed (pointer 0x%02x)", role, bdf, ptr);
            return USHMEMI_UNKNOWN;
        }
        if (cfg[ptr] == CAP_ID_EXP)
            break;
        ptr = cfg[ptr + 1] & 0xfc;
    }
    if (ptr == 0) {
        say(why, "%s %s has no PCI Express capability (ID 0x10), so no AtomicOps", role, bdf);
        return USHMEMI_NO;
    }
    if (ptr + EXP_V2_END > sizeof(cfg)) {
        say(why, "the PCI Express capability of %s %s at 0x%02x overruns the config header", role,
            bdf, ptr);
        return USHMEMI_UNKNOWN;
    }
    unsigned flags = get16(cfg, ptr + EXP_FLAGS);
    unsigned version = flags & 0xf;
    node_p->type = (flags >> 4) & 0xf;
    if (strcmp(role, "bridge") == 0)
        role = port_kind(node_p->type);
    if (version < 2) {
        say(why, "%s %s has PCI Express capability version %u, older than the version 2 that "
                 "brought AtomicOps", role, bdf, version);
        return USHMEMI_NO;
    }
    node_p->devcap2 = get32(cfg, ptr + EXP_DEVCAP2);
    node_p->devctl2 = (uint16_t)get16(cfg, ptr + EXP_DEVCTL2);
    return USHMEMI_YES;
}

/* The port at chain component i on the path. up: the request travels
 * towards the root complex through it. */
static enum ushmemi_tristate check_port(const struct chain *c, size_t i, bool up, char *why)
{
    char dir[PATH_MAX], bdf[24];
    struct node node;
    enum ushmemi_tristate ok;

    snprintf(dir, sizeof(dir), "%.*s", (int)c->ends[i], c->real);
    chain_bdf(c, i, bdf, sizeof(bdf));
    ok = read_node(dir, bdf, NULL, &node, why);
    if (ok != USHMEMI_YES)
        return ok;
    if (!(node.devcap2 & DEVCAP2_ATOMIC_ROUTE)) {
        say(why, "%s %s does not route AtomicOps (DevCap2 bit 6 clear)", port_kind(node.type), bdf);
        return USHMEMI_NO;
    }
    /* Egress blocking applies where the request leaves a port onto its link:
     * going up that is a switch upstream port, going down a root port or a
     * switch downstream port. A port of unknown type is checked either way. */
    bool ingress = up ? (node.type == TYPE_ROOT_PORT || node.type == TYPE_DOWNSTREAM)
                      : node.type == TYPE_UPSTREAM;
    if (!ingress && (node.devctl2 & DEVCTL2_ATOMIC_EGRESS_BLOCK)) {
        say(why, "%s %s blocks AtomicOp egress (DevCtl2 bit 7 set)", port_kind(node.type), bdf);
        return USHMEMI_NO;
    }
    return USHMEMI_YES;
}

/* Folds one step's answer: the first NO decides; otherwise the first UNKNOWN
 * is kept. Returns true when the walk can stop. */
static bool fold(enum ushmemi_tristate step, const char *step_why,
                 struct ushmemi_pcie_atomics *res)
{
    if (step == USHMEMI_NO) {
        res->ok = USHMEMI_NO;
        snprintf(res->why, sizeof(res->why), "%s", step_why);
        return true;
    }
    if (step == USHMEMI_UNKNOWN && res->ok != USHMEMI_UNKNOWN) {
        res->ok = USHMEMI_UNKNOWN;
        snprintf(res->why, sizeof(res->why), "%s", step_why);
    }
    return false;
}

static void walk(const struct chain *s, const struct chain *d, const char *src_bdf,
                 const char *dst_bdf, struct ushmemi_pcie_atomics *res)
{
    char why[sizeof(res->why)], dir[PATH_MAX], a[24], b[24];
    struct node node;
    enum ushmemi_tristate step;
    size_t k = 0, ports = 0;

    /* Devices on a root bus with no port above them (an integrated device, or
     * a virtual machine's flat bus) reach each other through the host bridge,
     * whose routing config space does not describe; a hypervisor's emulated
     * config bits say nothing about the physical path either. */
    if (s->depth == 1 || d->depth == 1) {
        if (s->depth == 1 && d->depth == 1)
            say(res->why, "%s and %s sit on root bus %s with no visible root port: the path "
                          "cannot be verified", src_bdf, dst_bdf, s->rc);
        else
            say(res->why, "%s sits on root bus %s with no visible root port: the path cannot be "
                          "verified", s->depth == 1 ? src_bdf : dst_bdf,
                s->depth == 1 ? s->rc : d->rc);
        res->ok = USHMEMI_UNKNOWN;
        return;
    }
    if (strcmp(s->rc, d->rc) != 0) {
        say(res->why, "%s and %s are under different root complexes (%s, %s): routing between "
                      "them is not described in config space", src_bdf, dst_bdf, s->rc, d->rc);
        res->ok = USHMEMI_UNKNOWN;
        return;
    }
    /* Ports both devices sit below are not on the path: the request turns
     * around on the bus below the deepest of them. */
    while (k < s->depth - 1 && k < d->depth - 1 &&
           strcmp(chain_bdf(s, k, a, sizeof(a)), chain_bdf(d, k, b, sizeof(b))) == 0)
        k++;

    res->ok = USHMEMI_YES;
    snprintf(dir, sizeof(dir), "%.*s", (int)s->ends[s->depth - 1], s->real);
    step = read_node(dir, src_bdf, "source", &node, why);
    if (step == USHMEMI_YES && !(node.devctl2 & DEVCTL2_ATOMIC_REQ)) {
        say(why, "source %s does not enable AtomicOp requests (DevCtl2 bit 6 clear)", src_bdf);
        step = USHMEMI_NO;
    }
    if (fold(step, why, res))
        return;
    for (size_t i = s->depth - 1; i-- > k; ports++)
        if (fold(check_port(s, i, true, why), why, res))
            return;
    for (size_t i = k; i < d->depth - 1; i++, ports++)
        if (fold(check_port(d, i, false, why), why, res))
            return;
    snprintf(dir, sizeof(dir), "%.*s", (int)d->ends[d->depth - 1], d->real);
    step = read_node(dir, dst_bdf, "destination", &node, why);
    if (step == USHMEMI_YES && !(node.devcap2 & DEVCAP2_ATOMIC_COMP64)) {
        say(why, "destination %s does not complete 64-bit AtomicOps (DevCap2 bit 8 clear)",
            dst_bdf);
        step = USHMEMI_NO;
    }
    if (fold(step, why, res))
        return;
    if (res->ok == USHMEMI_YES)
        say(res->why, "%s enables AtomicOp requests, the %zu port(s) between route them without "
                      "egress blocking, and %s completes 64-bit AtomicOps", src_bdf, ports, dst_bdf);
}

ushmem_status_t ushmemi_pcie_atomics_path(const char *root, const char *src_bdf,
                                          const char *dst_bdf,
                                          struct ushmemi_pcie_atomics *result_p)
{
    struct ushmemi_pcie_atomics res = {.ok = USHMEMI_UNKNOWN};
    struct chain *chains;

    if (src_bdf == NULL || dst_bdf == NULL || result_p == NULL) {
        ushmemi_error("ushmemi_pcie_atomics_path: NULL argument (src %p, dst %p, result %p)",
                      (const void *)src_bdf, (const void *)dst_bdf, (void *)result_p);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (!is_bdf(src_bdf, strlen(src_bdf)) || !is_bdf(dst_bdf, strlen(dst_bdf))) {
        ushmemi_error("ushmemi_pcie_atomics_path: malformed PCI address \"%s\" (want DDDD:BB:DD.F)",
                      is_bdf(src_bdf, strlen(src_bdf)) ? dst_bdf : src_bdf);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (root == NULL)
        root = "/sys";
    /* Two PATH_MAX buffers each: too much for a caller's stack. */
    chains = calloc(2, sizeof(*chains));
    if (chains == NULL) {
        ushmemi_error("ushmemi_pcie_atomics_path: cannot allocate %zu bytes", 2 * sizeof(*chains));
        return USHMEM_ERR_NO_MEMORY;
    }
    if (locate(root, src_bdf, &chains[0], res.why) && locate(root, dst_bdf, &chains[1], res.why))
        walk(&chains[0], &chains[1], src_bdf, dst_bdf, &res);
    free(chains);
    ushmemi_debug("PCIe AtomicOps %s -> %s: %s: %s", src_bdf, dst_bdf,
                  res.ok == USHMEMI_YES ? "yes" : res.ok == USHMEMI_NO ? "no" : "unknown", res.why);
    *result_p = res;
    return USHMEM_OK;
}
