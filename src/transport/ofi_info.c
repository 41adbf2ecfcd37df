/* What libfabric offers here, for ushmem_info: the library and its
 * version, the providers that have what the ofi transport needs (RMA on a
 * reliable datagram endpoint), with atomics and device memory (FI_HMEM),
 * and the GPU memory it can register on this machine. Provider lists honour FI_PROVIDER, as the
 * transport does. */
#include "ofi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_private.h"

struct text {
    char *buf;
    size_t len, used;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...)
{
    if (t->used + 1 >= t->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->used = t->used + (size_t)n < t->len ? t->used + (size_t)n : t->len - 1;
}

static struct fi_info *query(uint64_t caps)
{
    struct fi_info *hints = ushmemi_fi.dupinfo(NULL), *info = NULL;
    if (hints == NULL)
        return NULL;
    hints->caps = caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                                  FI_MR_PROV_KEY | FI_MR_ENDPOINT |
                                  ((caps & FI_HMEM) ? FI_MR_HMEM : 0);
    if (ushmemi_fi.getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints,
                           &info) != 0)
        info = NULL;
    ushmemi_fi.freeinfo(hints);
    return info;
}

/* Each provider once, in libfabric's order, with what it offers. */
static void list_providers(struct text *t, struct fi_info *rma)
{
    struct fi_info *hmem = query(FI_RMA | FI_HMEM), *amo = query(FI_RMA | FI_ATOMIC);
    add(t, "         providers with RMA:");
    int n = 0;
    for (struct fi_info *i = rma; i != NULL; i = i->next) {
        bool seen = false;
        for (struct fi_info *j = rma; j != i && !seen; j = j->next)
            seen = strcmp(j->fabric_attr->prov_name, i->fabric_attr->prov_name) == 0;
        if (seen)
            continue;
        bool atomics = false, device = false;
        for (struct fi_info *j = amo; j != NULL; j = j->next)
            atomics |= strcmp(j->fabric_attr->prov_name, i->fabric_attr->prov_name) == 0;
        for (struct fi_info *j = hmem; j != NULL; j = j->next)
            device |= strcmp(j->fabric_attr->prov_name, i->fabric_attr->prov_name) == 0;
        add(t, "%s %s%s%s%s%s", n++ > 0 ? "," : "", i->fabric_attr->prov_name,
            atomics || device ? " (" : "", atomics ? "atomics" : "",
            atomics && device ? ", " : "", device ? "FI_HMEM)" : atomics ? ")" : "");
    }
    add(t, "%s\n", n == 0 ? " none" : "");
    if (hmem != NULL)
        ushmemi_fi.freeinfo(hmem);
    if (amo != NULL)
        ushmemi_fi.freeinfo(amo);
}

/* Interfaces usable here: a registration that names one succeeds only when
 * libfabric found its runtime and a device (a domain of the first FI_HMEM
 * provider, host memory, local access only). */
static void list_usable_interfaces(struct text *t)
{
    static const struct {
        const char *name;
        enum fi_hmem_iface iface;
    } ifaces[] = {{"cuda", FI_HMEM_CUDA}, {"ze", FI_HMEM_ZE}, {"rocr", FI_HMEM_ROCR}};
    struct fi_info *hmem = query(FI_RMA | FI_HMEM);
    struct fid_fabric *fabric = NULL;
    struct fid_domain *domain = NULL;
    static char probe[4096];
    int n = 0;

    add(t, "         FI_HMEM: GPU memory it registers here:");
    if (hmem == NULL || ushmemi_fi.fabric(hmem->fabric_attr, &fabric, NULL) != 0 ||
        fi_domain(fabric, hmem, &domain, NULL) != 0) {
        add(t, " none (no provider offers FI_HMEM)\n");
        goto release;
    }
    for (size_t k = 0; k < sizeof(ifaces) / sizeof(ifaces[0]); k++) {
        struct iovec iov = {.iov_base = probe, .iov_len = sizeof(probe)};
        struct fi_mr_attr attr;
        struct fid_mr *mr = NULL;
        memset(&attr, 0, sizeof(attr));
        attr.mr_iov = &iov;
        attr.iov_count = 1;
        attr.access = FI_READ | FI_WRITE;
        attr.iface = ifaces[k].iface;
        if (fi_mr_regattr(domain, &attr, 0, &mr) == 0) {
            add(t, "%s %s", n++ > 0 ? "," : "", ifaces[k].name);
            fi_close(&mr->fid);
        }
    }
    add(t, "%s (provider %s)\n", n == 0 ? " none" : "", hmem->fabric_attr->prov_name);
release:
    if (domain != NULL)
        fi_close(&domain->fid);
    if (fabric != NULL)
        fi_close(&fabric->fid);
    if (hmem != NULL)
        ushmemi_fi.freeinfo(hmem);
}

void ushmemi_ofi_describe(char *buf, size_t len)
{
    struct text t = {buf, len, 0};
    const char *why = NULL;

    if (len == 0)
        return;
    buf[0] = '\0';
    if (ushmemi_fi_load(&why) != USHMEM_OK) {
        add(&t, "         %s\n", why);
        return;
    }
    uint32_t v = ushmemi_fi.version();
    add(&t, "         libfabric %u.%u from %s (built against %u.%u headers), loaded only when a "
        "peer needs the fabric\n", FI_MAJOR(v), FI_MINOR(v), ushmemi_fi_path(), FI_MAJOR_VERSION,
        FI_MINOR_VERSION);
    struct fi_info *rma = query(FI_RMA);
    list_providers(&t, rma);
    if (rma != NULL)
        ushmemi_fi.freeinfo(rma);
    list_usable_interfaces(&t);
    const char *restored = ushmemi_fi_restored_signals();
    if (restored[0] != '\0')
        add(&t, "         its libraries installed handlers for %s when loaded; ushmem put the "
            "program's own dispositions back\n", restored);
    else
        add(&t, "         loading it changed no signal disposition\n");
}
