/* Where the ofi transport's endpoint can be reached. Providers pick their
 * own source address: tcp, sockets and udp listen on the first external
 * interface, where any local user (`ss -ltn`) and any other host can
 * connect, and shm names its shared-memory region after the pid
 * (/dev/shm/<pid>:<uid>:0), which another local user can create first to
 * break the job. After choose_provider has picked a provider, this file
 * asks fi_getinfo again for that same provider from an address of its own:
 * 127.0.0.1 for the IP providers when every PE is on this host, the
 * interface USHMEM_FABRIC_IFACE names otherwise, and for shm the name
 * ushmem-<pid>-<128 random bits in hex> (libfabric 1.17 takes an
 * FI_ADDR_STR source address with a prefix other than fi_shm:// as the
 * region name, prefix stripped). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/random.h"
#include "ofi.h"
#include "ofi_private.h"

/* What kind of address a provider's endpoint has, told by the core
 * provider under any utility layer ("tcp;ofi_rxm" is tcp). */
enum addr_family { ADDR_OTHER, ADDR_IP, ADDR_SHM };

static enum addr_family family_of(const char *prov_name)
{
    size_t len = strcspn(prov_name, ";");
    static const char *const ip[] = {"tcp", "sockets", "udp"};
    for (size_t i = 0; i < sizeof(ip) / sizeof(ip[0]); i++)
        if (strlen(ip[i]) == len && strncmp(prov_name, ip[i], len) == 0)
            return ADDR_IP;
    return len == 3 && strncmp(prov_name, "shm", 3) == 0 ? ADDR_SHM : ADDR_OTHER;
}

/* The IPv4 address USHMEM_FABRIC_IFACE names: an address of one of this
 * host's interfaces, or an interface with an IPv4 address. Logs otherwise. */
static ushmem_status_t iface_address(int rank, const char *want, struct in_addr *addr_p)
{
    struct in_addr literal;
    bool is_literal = inet_pton(AF_INET, want, &literal) == 1;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) {
        ushmemi_error("ofi init on PE %d: cannot list this host's interfaces for "
                      "USHMEM_FABRIC_IFACE=%s: getifaddrs: %s", rank, want, strerror(errno));
        return USHMEM_ERR_IO;
    }
    bool found = false;
    char names[256] = "";
    size_t used = 0;
    for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
            continue;
        struct in_addr a = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if (!found && (is_literal ? a.s_addr == literal.s_addr : strcmp(i->ifa_name, want) == 0)) {
            *addr_p = a;
            found = true;
        }
        char text[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &a, text, sizeof(text));
        int n = snprintf(names + used, sizeof(names) - used, "%s%s %s", used > 0 ? ", " : "",
                         i->ifa_name, text);
        if (n > 0 && used + (size_t)n < sizeof(names))
            used += (size_t)n;
    }
    freeifaddrs(ifs);
    if (!found) {
        ushmemi_error("ofi init on PE %d: USHMEM_FABRIC_IFACE=%s is neither an IPv4 address of "
                      "this host nor one of its interfaces with an IPv4 address (its IPv4 "
                      "interfaces: %s)", rank, want, names[0] != '\0' ? names : "none");
        return USHMEM_ERR_INVALID_VALUE;
    }
    return USHMEM_OK;
}

/* fi_getinfo for the provider, fabric and capabilities of t->info, from
 * source address `src` (addr_format its format); replaces t->info. */
static int requery(struct ushmemi_transport *t, uint32_t addr_format, void *src, size_t srclen)
{
    struct fi_info *hints = ushmemi_fi.dupinfo(t->info);
    if (hints == NULL) {
        free(src);
        return -FI_ENOMEM;
    }
    /* The fabric and domain names are those of the first query's
     * interface; the new address picks its own. */
    free(hints->fabric_attr->name);
    hints->fabric_attr->name = NULL;
    hints->fabric_attr->fabric = NULL;
    free(hints->domain_attr->name);
    hints->domain_attr->name = NULL;
    hints->domain_attr->domain = NULL;
    free(hints->dest_addr);
    hints->dest_addr = NULL;
    hints->dest_addrlen = 0;
    free(hints->src_addr);
    hints->src_addr = src;
    hints->src_addrlen = srclen;
    hints->addr_format = addr_format;
    struct fi_info *info = NULL;
    int rc = ushmemi_fi.getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0,
                                hints, &info);
    ushmemi_fi.freeinfo(hints);
    if (rc != 0)
        return rc;
    if (strcmp(info->fabric_attr->prov_name, t->prov_name) != 0) {
        ushmemi_fi.freeinfo(info);
        return -FI_ENODATA;
    }
    ushmemi_fi.freeinfo(t->info);
    t->info = info;
    t->prov_name = info->fabric_attr->prov_name;
    return 0;
}

static ushmem_status_t bind_ip(struct ushmemi_transport *t, const char *want)
{
    bool one_host = t->oob->host_local_size == t->oob->size;
    struct in_addr addr = {.s_addr = htonl(INADDR_LOOPBACK)};
    /* Checked wherever an IP provider opens, so that a typo shows on a
     * test job on one host before the job across hosts. */
    if (want != NULL && want[0] != '\0') {
        struct in_addr named;
        ushmem_status_t status = iface_address(t->rank, want, &named);
        if (status != USHMEM_OK)
            return status;
        if (!one_host)
            addr = named;
    } else if (!one_host) {
        snprintf(t->addr_why, sizeof(t->addr_why),
                 "the provider's choice: the job spans hosts and USHMEM_FABRIC_IFACE is unset");
        return USHMEM_OK;
    }
    if (one_host)
        snprintf(t->addr_why, sizeof(t->addr_why),
                 "loopback only: every PE of the job is on this host");
    else
        snprintf(t->addr_why, sizeof(t->addr_why), "USHMEM_FABRIC_IFACE=%s", want);

    struct sockaddr_in *sin = calloc(1, sizeof(*sin));
    if (sin == NULL) {
        ushmemi_error("ofi init on PE %d: out of memory", t->rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    sin->sin_family = AF_INET;
    sin->sin_addr = addr; /* port 0: the kernel picks */
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &addr, text, sizeof(text));
    int rc = requery(t, FI_SOCKADDR_IN, sin, sizeof(*sin));
    if (rc != 0) {
        ushmemi_error("ofi init on PE %d: provider %s cannot open its endpoint on %s (%s): "
                      "fi_getinfo: %s; the provider's default address is not taken instead, "
                      "as other hosts and local users could connect to it", t->rank,
                      t->prov_name, text, t->addr_why, ushmemi_fi.strerror(-rc));
        return ushmemi_ofi_status(rc);
    }
    ushmemi_debug("ofi: PE %d opens its %s endpoint on %s (%s)", t->rank, t->prov_name, text,
                  t->addr_why);
    return USHMEM_OK;
}

/* The region gets a name nobody can create first; only the PEs learn it,
 * through the bootstrap (the cards of ofi.c). */
static ushmem_status_t name_shm(struct ushmemi_transport *t)
{
    uint8_t token[16];
    int err = ushmemi_random_bytes(token, sizeof(token));
    if (err != 0) {
        ushmemi_error("ofi init on PE %d: cannot draw a name for the shm provider's region: "
                      "getrandom: %s", t->rank, strerror(err));
        return USHMEM_ERR_IO;
    }
    /* Not "fi_shm://": shm would append the guessable ":<uid>:<index>".
     * The pid lets a launcher remove the file of a PE killed by SIGKILL
     * (oshrun's remove_pe_shm); the random part keeps it unpredictable. */
    char name[80];
    int len = snprintf(name, sizeof(name), "fi_ns://ushmem-%ld-", (long)getpid());
    for (size_t i = 0; i < sizeof(token); i++)
        len += snprintf(name + len, sizeof(name) - (size_t)len, "%02x", token[i]);
    char *src = strdup(name);
    if (src == NULL) {
        ushmemi_error("ofi init on PE %d: out of memory", t->rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    snprintf(t->addr_why, sizeof(t->addr_why), "a random name, which nobody can create first");
    int rc = requery(t, FI_ADDR_STR, src, (size_t)len + 1);
    if (rc != 0) {
        ushmemi_error("ofi init on PE %d: provider %s takes no chosen name for its shared-memory "
                      "region (fi_getinfo: %s), and the name it picks itself derives from the "
                      "pid, which another local user can create first to break the job",
                      t->rank, t->prov_name, ushmemi_fi.strerror(-rc));
        return ushmemi_ofi_status(rc);
    }
    ushmemi_debug("ofi: PE %d names its shm region %s", t->rank, name + strlen("fi_ns://"));
    return USHMEM_OK;
}

ushmem_status_t ushmemi_ofi_addr_choose(struct ushmemi_transport *t, const char *iface)
{
    switch (family_of(t->prov_name)) {
    case ADDR_IP:
        return bind_ip(t, iface);
    case ADDR_SHM:
        return name_shm(t);
    case ADDR_OTHER:
        break;
    }
    snprintf(t->addr_why, sizeof(t->addr_why), "the provider's choice");
    return USHMEM_OK;
}

void ushmemi_ofi_endpoint_text(struct ushmemi_transport *t, char *buf, size_t len)
{
    if (len == 0)
        return;
    char name[OFI_NAME_MAX];
    char text[OFI_NAME_MAX] = "";
    size_t namelen = sizeof(name), textlen = sizeof(text);
    int rc = fi_getname(&t->ep->fid, name, &namelen);
    if (rc == 0)
        fi_av_straddr(t->av, name, text, &textlen);
    text[sizeof(text) - 1] = '\0';
    if (rc != 0)
        snprintf(text, sizeof(text), "unknown (fi_getname: %s)", ushmemi_fi.strerror(-rc));
    snprintf(buf, len, "%s, provider %s (%s)", text, t->prov_name, t->addr_why);
}
