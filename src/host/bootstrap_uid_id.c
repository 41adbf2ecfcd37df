/* The unique id (bootstrap_uid.h): its layout and checks, the address and
 * the listening socket of PE 0 (USHMEM_BOOTSTRAP_UID_ADDR), which
 * ushmemx_get_uniqueid opens and the init of this process takes or closes,
 * and the checks of ushmemx_init_uniqueid's arguments. */
#include "bootstrap_uid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../device/node_id.h"
#include "internal.h"

_Static_assert(sizeof(ushmemx_uniqueid_t) == 128, "ushmemx_uniqueid_t is 128 bytes");

/* The id's internal bytes; network order. The check word catches an id
 * that was never filled, cut short or scribbled on. */
#define ID_MAGIC 0x75534831u /* "uSH1" */
enum {
    ID_OFF_MAGIC = 0,
    ID_OFF_FAMILY = 4,
    ID_OFF_PORT = 6,
    ID_OFF_ADDR = 8,
    ID_OFF_SECRET = 24,
    ID_OFF_NODE = ID_OFF_SECRET + UID_SECRET_LEN,
    ID_OFF_PID = ID_OFF_NODE + 8,
    ID_OFF_HOST = ID_OFF_PID + 4,
    ID_HOST_LEN = 32,
    ID_OFF_CHECK = 120,
};
_Static_assert(ID_OFF_HOST + ID_HOST_LEN <= ID_OFF_CHECK, "the id's fields overlap");
_Static_assert(ID_OFF_CHECK + 4 == sizeof(((ushmemx_uniqueid_t *)0)->internal),
               "the check word ends the id");

/* The listening socket that ushmemx_get_uniqueid opened, until an
 * ushmemx_init_uniqueid of this process takes it (as PE 0) or closes it. */
static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;
static int made_fd = -1;
static struct uid_info made;

/* ---- the id ---- */

static uint32_t id_check(const uint8_t *p)
{
    uint32_t hash = 0x811c9dc5u; /* FNV-1a */
    for (size_t i = 0; i < ID_OFF_CHECK; i++) {
        hash ^= p[i];
        hash *= 0x01000193u;
    }
    return hash;
}

static void id_encode(const struct uid_info *u, ushmemx_uniqueid_t *id)
{
    memset(id, 0, sizeof(*id));
    id->version = USHMEMX_UNIQUEID_VERSION;
    uint8_t *p = (uint8_t *)id->internal;
    ushmemi_uid_put32(p + ID_OFF_MAGIC, ID_MAGIC);
    p[ID_OFF_FAMILY] = u->family == AF_INET6 ? 6 : 4;
    p[ID_OFF_PORT] = (uint8_t)(u->port >> 8);
    p[ID_OFF_PORT + 1] = (uint8_t)u->port;
    memcpy(p + ID_OFF_ADDR, u->addr, 16);
    memcpy(p + ID_OFF_SECRET, u->secret, UID_SECRET_LEN);
    ushmemi_uid_put64(p + ID_OFF_NODE, u->root_node);
    ushmemi_uid_put32(p + ID_OFF_PID, u->root_pid);
    memcpy(p + ID_OFF_HOST, u->root_host, strnlen(u->root_host, ID_HOST_LEN));
    ushmemi_uid_put32(p + ID_OFF_CHECK, id_check(p));
}

/* Reads an id; says what is wrong with one that is not, naming the call
 * and the PE. */
static ushmem_status_t id_decode(const char *call, int rank, const void *uid,
                                 struct uid_info *u_p)
{
    if (uid == NULL) {
        ushmemi_error("%s: PE %d passed a NULL unique id", call, rank);
        return USHMEM_ERR_INVALID_PARAM;
    }
    const ushmemx_uniqueid_t *id = uid;
    const uint8_t *p = (const uint8_t *)id->internal;
    if (id->version != USHMEMX_UNIQUEID_VERSION) {
        ushmemi_error("%s: PE %d passed a unique id of version %d, not %d: it was not made by "
                      "this library's ushmemx_get_uniqueid, or not copied whole",
                      call, rank, id->version, USHMEMX_UNIQUEID_VERSION);
        return USHMEM_ERR_INVALID_PARAM;
    }
    bool empty = true;
    for (size_t i = 0; i < sizeof(id->internal) && empty; i++)
        empty = p[i] == 0;
    if (empty) {
        ushmemi_error("%s: PE %d passed an empty unique id: it was initialised but never filled "
                      "by ushmemx_get_uniqueid (did PE 0's id reach this PE?)", call, rank);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (ushmemi_uid_get32(p + ID_OFF_MAGIC) != ID_MAGIC ||
        ushmemi_uid_get32(p + ID_OFF_CHECK) != id_check(p) ||
        (p[ID_OFF_FAMILY] != 4 && p[ID_OFF_FAMILY] != 6)) {
        ushmemi_error("%s: PE %d passed a unique id whose check bytes do not match: it was not "
                      "made by ushmemx_get_uniqueid, or not copied whole (all %zu bytes)",
                      call, rank, sizeof(ushmemx_uniqueid_t));
        return USHMEM_ERR_INVALID_PARAM;
    }
    struct uid_info u = {0};
    u.family = p[ID_OFF_FAMILY] == 6 ? AF_INET6 : AF_INET;
    u.port = (uint16_t)(p[ID_OFF_PORT] << 8 | p[ID_OFF_PORT + 1]);
    memcpy(u.addr, p + ID_OFF_ADDR, 16);
    memcpy(u.secret, p + ID_OFF_SECRET, UID_SECRET_LEN);
    u.root_node = ushmemi_uid_get64(p + ID_OFF_NODE);
    u.root_pid = ushmemi_uid_get32(p + ID_OFF_PID);
    memcpy(u.root_host, p + ID_OFF_HOST, ID_HOST_LEN);
    u.root_host[ID_HOST_LEN] = '\0';
    *u_p = u;
    return USHMEM_OK;
}

bool ushmemi_uid_is_loopback(const struct uid_info *u)
{
    if (u->family == AF_INET)
        return u->addr[0] == 127;
    static const uint8_t v6_loopback[16] = {[15] = 1};
    return memcmp(u->addr, v6_loopback, 16) == 0;
}

void ushmemi_uid_load_vars_quietly(void)
{
    int saved = ushmemi_log_level;
    ushmemi_log_level = -1;
    (void)ushmemi_vars_load();
    ushmemi_log_level = saved;
}

void ushmemi_uid_host_name(char *buf, size_t len)
{
    if (gethostname(buf, len - 1) != 0)
        snprintf(buf, len, "?");
    buf[len - 1] = '\0';
}

/* ---- the root's address (USHMEM_BOOTSTRAP_UID_ADDR) ---- */

static bool take_address(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET) {
        memcpy(out, sa, sizeof(struct sockaddr_in));
        return true;
    }
    /* A link-local IPv6 address needs a scope that the id does not carry. */
    if (sa->sa_family == AF_INET6 &&
        !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
        memcpy(out, sa, sizeof(struct sockaddr_in6));
        return true;
    }
    return false;
}

/* "auto": the address the host name resolves to (IPv4 first), which other
 * hosts reach where the name is in DNS or their hosts file; else loopback. */
static void host_address(const char *call, struct sockaddr_storage *out)
{
    char host[256];
    ushmemi_uid_host_name(host, sizeof(host));
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    bool found = false;
    if (getaddrinfo(host, NULL, &hints, &list) == 0) {
        for (int family = AF_INET; !found; family = AF_INET6) {
            for (struct addrinfo *a = list; a != NULL && !found; a = a->ai_next)
                if (a->ai_family == family)
                    found = take_address(a->ai_addr, out);
            if (family == AF_INET6)
                break;
        }
        freeaddrinfo(list);
    }
    if (!found) {
        ushmemi_debug("%s: the host name %s does not resolve; listening on loopback", call, host);
        struct sockaddr_in *s4 = (struct sockaddr_in *)out;
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
}

static ushmem_status_t choose_address(const char *call, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    const char *want = ushmemi_settings.bootstrap_uid_addr;
    if (want == NULL || want[0] == '\0' || strcmp(want, "auto") == 0) {
        host_address(call, out);
        return USHMEM_OK;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, want, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        return USHMEM_OK;
    }
    if (inet_pton(AF_INET6, want, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        return USHMEM_OK;
    }
    struct ifaddrs *ifs = NULL;
    char names[256] = "";
    size_t used = 0;
    bool found = false;
    if (getifaddrs(&ifs) == 0) {
        for (int family = AF_INET; !found; family = AF_INET6) {
            for (struct ifaddrs *i = ifs; i != NULL && !found; i = i->ifa_next)
                if (i->ifa_addr != NULL && i->ifa_addr->sa_family == family &&
                    strcmp(i->ifa_name, want) == 0)
                    found = take_address(i->ifa_addr, out);
            if (family == AF_INET6)
                break;
        }
        for (struct ifaddrs *i = ifs; i != NULL && !found && used + 20 < sizeof(names);
             i = i->ifa_next) {
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
                strstr(names, i->ifa_name) != NULL)
                continue;
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
                                     used > 0 ? ", " : "", i->ifa_name);
        }
        freeifaddrs(ifs);
    }
    if (!found) {
        ushmemi_error("%s: USHMEM_BOOTSTRAP_UID_ADDR=%s is neither an IP address nor a network "
                      "interface of this host with an address (its IPv4 interfaces: %s)",
                      call, want, names[0] ? names : "none");
        return USHMEM_ERR_INVALID_VALUE;
    }
    return USHMEM_OK;
}

/* Opens the root's listening socket on the chosen address and a port that
 * the kernel picks; fills the id's address. */
static ushmem_status_t open_listener(const char *call, struct uid_info *u, int *fd_p)
{
    struct sockaddr_storage sa;
    ushmem_status_t status = choose_address(call, &sa);
    if (status != USHMEM_OK)
        return status;
    socklen_t salen = sa.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                               : sizeof(struct sockaddr_in);
    const void *addr = sa.ss_family == AF_INET6
                           ? (const void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
                           : (const void *)&((struct sockaddr_in *)&sa)->sin_addr;
    char where[80];
    ushmemi_uid_addr_text(sa.ss_family, addr, 0, where, sizeof(where));

    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ushmemi_error("%s: socket: %s", call, strerror(errno));
        return USHMEM_ERR_IO;
    }
    if (bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
        ushmemi_error("%s: cannot listen on %s: %s (USHMEM_BOOTSTRAP_UID_ADDR chooses the "
                      "address)", call, where, strerror(errno));
        close(fd);
        return USHMEM_ERR_IO;
    }
    u->family = sa.ss_family;
    memcpy(u->addr, addr, sa.ss_family == AF_INET6 ? 16 : 4);
    u->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                             : ((struct sockaddr_in *)&sa)->sin_port);
    *fd_p = fd;
    return USHMEM_OK;
}

USHMEMI_API int ushmemx_get_uniqueid(ushmemx_uniqueid_t *uid)
{
    static const char call[] = "ushmemx_get_uniqueid";
    if (uid == NULL) {
        ushmemi_error("%s: uid is NULL: pass the address of a ushmemx_uniqueid_t", call);
        return -1;
    }
    ushmemi_uid_load_vars_quietly();
    if (ushmemi_settings.debug && ushmemi_log_level < USHMEMI_LOG_DEBUG)
        ushmemi_log_level = USHMEMI_LOG_DEBUG;
    struct uid_info u = {0};
    int fd = -1;
    if (open_listener(call, &u, &fd) != USHMEM_OK)
        return -1;
    if (ushmemi_uid_random(u.secret, sizeof(u.secret), call) != USHMEM_OK) {
        close(fd);
        return -1;
    }
    /* The host, for the check that a PE elsewhere is not sent to loopback.
     * Under USHMEM_SIM_NODES (testing) a job, running or finalized, may have
     * left a simulated node in the hash: 0, unknown, skips the check. */
    u.root_node = ushmemi_settings.sim_nodes > 1 ? 0 : ushmemi_node_hash();
    u.root_pid = (uint32_t)getpid();
    char host[256] = {0};
    ushmemi_uid_host_name(host, sizeof(host));
    memcpy(u.root_host, host, sizeof(u.root_host) - 1); /* cut short for the id */

    pthread_mutex_lock(&made_lock);
    if (made_fd >= 0)
        close(made_fd); /* the previous id of this process is void */
    made_fd = fd;
    made = u;
    pthread_mutex_unlock(&made_lock);
    id_encode(&u, uid);
    char where[80];
    ushmemi_uid_addr_text(u.family, u.addr, u.port, where, sizeof(where));
    ushmemi_debug("%s: PE 0 listens at %s", call, where);
    return 0;
}

/* Closes an id this process made and no job took: a failed
 * ushmemx_init_uniqueid there makes the other PEs fail at once instead of
 * waiting for a PE 0 that will not come. */
static void drop_made(void)
{
    pthread_mutex_lock(&made_lock);
    if (made_fd >= 0)
        close(made_fd);
    made_fd = -1;
    pthread_mutex_unlock(&made_lock);
}

ushmem_status_t ushmemi_uid_claim_root(const char *call, int rank, const struct uid_info *u,
                                       int *listen_fd_p)
{
    ushmem_status_t status = USHMEM_OK;
    *listen_fd_p = -1;
    pthread_mutex_lock(&made_lock);
    bool holds = made_fd >= 0 && made.port == u->port &&
                 ushmemi_uid_secret_equal(made.secret, u->secret);
    if (holds && rank == 0) {
        *listen_fd_p = made_fd;
        made_fd = -1;
    } else if (holds && made.root_pid == (uint32_t)getpid()) {
        ushmemi_error("%s: PE %d: this process made the unique id with ushmemx_get_uniqueid, so "
                      "it is PE 0 and must pass rank 0, not %d", call, rank, rank);
        status = USHMEM_ERR_INVALID_PARAM;
    } else if (rank == 0) {
        ushmemi_error("%s: PE 0: rank 0 belongs to the process that made the unique id with "
                      "ushmemx_get_uniqueid (pid %u on %s), but this process (pid %d) did not "
                      "make it", call, (unsigned)u->root_pid, u->root_host, (int)getpid());
        status = USHMEM_ERR_INVALID_PARAM;
    }
    pthread_mutex_unlock(&made_lock);
    if (*listen_fd_p < 0)
        drop_made(); /* on a failure too (see drop_made) */
    return status;
}

ushmem_status_t ushmemi_uid_check_args(const char *call, int rank, int npes, const void *uid,
                                       struct uid_info *u_p)
{
    ushmem_status_t status = USHMEM_ERR_INVALID_PARAM;
    if (npes < 1)
        ushmemi_error("%s: PE %d passed npes %d: a job has at least one PE", call, rank, npes);
    else if (npes > UID_NPES_MAX)
        ushmemi_error("%s: PE %d passed npes %d, more than the unique-id bootstrap takes (%d); "
                      "start so large a job with a PMIx launcher", call, rank, npes,
                      UID_NPES_MAX);
    else if (rank < 0 || rank >= npes)
        ushmemi_error("%s: rank %d is out of range: npes is %d, so ranks are 0 to %d", call, rank,
                      npes, npes - 1);
    else
        status = id_decode(call, rank, uid, u_p);
    if (status != USHMEM_OK)
        drop_made();
    return status;
}

ushmem_status_t ushmemi_bootstrap_uid_check(const char *call, int rank, int npes,
                                            const void *uid)
{
    struct uid_info u;
    return ushmemi_uid_check_args(call, rank, npes, uid, &u);
}

bool ushmemi_uid_same_secret(const void *uid, const uint8_t *secret)
{
    const ushmemx_uniqueid_t *id = uid;
    return id != NULL && id->version == USHMEMX_UNIQUEID_VERSION &&
           ushmemi_uid_secret_equal((const uint8_t *)id->internal + ID_OFF_SECRET, secret);
}
