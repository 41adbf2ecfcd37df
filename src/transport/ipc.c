/* The ipc transport's connection phase: every PE exports its heap, the PEs
 * exchange one fixed-size card each, and every PE maps the heap of each peer
 * on its node through a copy of the peer's fd. It owns the mappings it makes
 * until ushmemi_ipc_disconnect. */
#include "transport.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* What each PE tells the others; the same layout on every PE of a job. */
struct ipc_card {
    int32_t pid;
    int32_t fd; /* the exporter's fd number, for pidfd_getfd */
    uint64_t node_hash;
    uint64_t heap_size;
    uint8_t handle_data[sizeof(((struct ushmemi_ipc_handle *)0)->data)];
    struct ushmemi_device_id id; /* for the peer-access probe before mapping */
};
static_assert(sizeof(struct ipc_card) == 136, "ipc card layout changed");

struct fetch_state {
    enum ushmemi_fd_method method; /* becomes SOCKET once auto has fallen back */
    const struct ushmemi_oob *oob;
    int timeout_s;
};

static const char *method_why(enum ushmemi_fd_method method)
{
    return method == USHMEMI_FD_SOCKET ? "same node: heap mapped through an fd passed over a socket"
                                       : "same node: heap mapped through an fd taken with pidfd_getfd";
}

/* Gets this process's copy of peer `pe`'s heap fd; *used_p says how. */
static ushmem_status_t fetch_fd(struct fetch_state *st, int pe, const struct ipc_card *card,
                                int *fd_p, enum ushmemi_fd_method *used_p)
{
    ushmem_status_t status;

    if (st->method != USHMEMI_FD_SOCKET) {
        status = ushmemi_fd_get_pidfd((pid_t)card->pid, card->fd, fd_p);
        int err = errno;
        if (status == USHMEM_OK) {
            *used_p = USHMEMI_FD_PIDFD;
            return USHMEM_OK;
        }
        bool refused = status == USHMEM_ERR_PERMISSION || status == USHMEM_ERR_UNSUPPORTED;
        if (st->method == USHMEMI_FD_PIDFD || !refused) {
            ushmemi_error("ushmemi_ipc_connect: PE %d cannot take PE %d's heap fd %d (pid %d) with "
                          "pidfd_getfd: %s (errno %d, %s)%s", st->oob->rank, pe, (int)card->fd,
                          (int)card->pid, strerror(err), err, ushmemi_status_name(status),
                          st->method == USHMEMI_FD_PIDFD ? "; USHMEM_FD_PASSING=socket may work" : "");
            return status;
        }
        /* Ptrace permission (Yama, containers) commonly forbids pidfd_getfd;
         * the socket needs none, so switch for the remaining peers too. */
        ushmemi_debug("ushmemi_ipc_connect: pidfd_getfd refused for PE %d (%s); using the socket "
                      "for fd passing from now on", pe, strerror(err));
        st->method = USHMEMI_FD_SOCKET;
    }

    status = ushmemi_fd_get_socket(st->oob->job_id, pe, (pid_t)card->pid, st->timeout_s, fd_p);
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d could not receive PE %d's heap fd over its "
                      "socket: %s", st->oob->rank, pe, ushmemi_status_string(status));
        return status;
    }
    *used_p = USHMEMI_FD_SOCKET;
    return USHMEM_OK;
}

static void unmap_peers(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                        struct ushmemi_peer *peers, int npeers, int self, size_t heap_size)
{
    for (int pe = npeers - 1; pe >= 0; pe--) {
        if (pe == self || peers[pe].base == NULL)
            continue;
        ops->close_import(dev, peers[pe].base, heap_size);
        peers[pe].base = NULL;
        peers[pe].map_why = "unmapped";
    }
}

/* Tells our fd server the pids of the other PEs on this node: the socket's
 * name is predictable, and only they may have our heap. */
static ushmem_status_t allow_local_peers(struct ushmemi_fd_server *server,
                                         const struct ushmemi_oob *oob,
                                         const struct ipc_card *cards, uint64_t node_hash)
{
    ushmem_status_t status;
    int npids = 0;
    pid_t *pids = malloc((size_t)oob->size * sizeof(*pids));

    if (pids == NULL) {
        ushmemi_error("ushmemi_ipc_connect: PE %d cannot allocate %d pids", oob->rank, oob->size);
        return USHMEM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < oob->size; pe++)
        if (pe != oob->rank && cards[pe].node_hash == node_hash)
            pids[npids++] = (pid_t)cards[pe].pid;
    status = ushmemi_fd_server_allow(server, pids, npids);
    free(pids);
    return status;
}

ushmem_status_t ushmemi_ipc_connect(const struct ushmemi_oob *oob, const struct ushmemi_device_ops *ops,
                                    struct ushmemi_device *dev, void *heap, size_t heap_size,
                                    const struct ushmemi_ipc_config *config,
                                    struct ushmemi_peer *peers)
{
    ushmem_status_t status;
    struct ushmemi_ipc_handle handle;
    struct ushmemi_device_id id;
    struct ushmemi_fd_server *server = NULL;
    struct ipc_card mine, *cards;
    const int nranks = oob->size;
    const char *segment = config->segment ? config->segment : "symmetric heap";

    for (int pe = 0; pe < nranks; pe++)
        peers[pe] = (struct ushmemi_peer){.map_why = "not connected"};

    status = ops->identity(dev, &id);
    if (status != USHMEM_OK)
        return status;
    /* The handle's fd stays the backend's until heap_free. */
    status = ops->export_mem(dev, heap, heap_size, &handle);
    if (status != USHMEM_OK)
        return status;

    cards = calloc((size_t)nranks, sizeof(*cards));
    if (cards == NULL) {
        ushmemi_error("ushmemi_ipc_connect: PE %d cannot allocate %d cards", oob->rank, nranks);
        return USHMEM_ERR_NO_MEMORY;
    }

    /* In socket mode every local PE both serves and fetches, so the server
     * must be listening before anyone can leave the allgather. Who may fetch
     * is known only from the cards: until then the server keeps clients
     * waiting (see allow_local_peers). */
    if (config->fd_method != USHMEMI_FD_PIDFD && oob->local_size > 1) {
        status = ushmemi_fd_server_start(oob->job_id, oob->rank, handle.fd, oob->local_size - 1,
                                         NULL, 0, &server);
        if (status != USHMEM_OK)
            goto free_cards;
    }

    memset(&mine, 0, sizeof(mine));
    mine.pid = (int32_t)getpid();
    mine.fd = handle.fd;
    mine.node_hash = id.node_hash;
    mine.heap_size = heap_size;
    mine.id = id;
    memcpy(mine.handle_data, handle.data, sizeof(mine.handle_data));
    status = oob->allgather(oob->ctx, &mine, cards, sizeof(mine));
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d: card exchange failed: %s", oob->rank,
                      ushmemi_status_string(status));
        goto stop_server;
    }
    if (server != NULL) {
        status = allow_local_peers(server, oob, cards, id.node_hash);
        if (status != USHMEM_OK)
            goto stop_server;
    }

    /* Every PE sees the same cards, so all of them fail here together. */
    for (int pe = 0; pe < nranks; pe++) {
        if (cards[pe].heap_size != heap_size) {
            ushmemi_error("ushmemi_ipc_connect: PE %d has a %llu-byte %s but PE %d has %zu bytes; %s",
                          pe, (unsigned long long)cards[pe].heap_size, segment, oob->rank,
                          heap_size,
                          config->segment ? "every PE must run the same executable"
                                          : "SHMEM_SYMMETRIC_SIZE must be the same on every PE");
            status = USHMEM_ERR_INVALID_PARAM;
            goto stop_server;
        }
    }

    struct fetch_state st = {.method = config->fd_method, .oob = oob, .timeout_s = config->timeout_s};
    for (int pe = 0; pe < nranks; pe++) {
        struct ushmemi_peer *peer = &peers[pe];
        peer->pid = (pid_t)cards[pe].pid;
        peer->node_hash = cards[pe].node_hash;

        if (pe == oob->rank) {
            peer->base = heap;
            peer->map_why = "this PE";
            continue;
        }
        if (cards[pe].node_hash != id.node_hash) {
            peer->map_why = "peer on another node";
            continue;
        }
        /* GPUs without peer access cannot map each other's memory; such a
         * pair stays unmapped and its route goes over the fabric (or init
         * says there is none), instead of an import failing. */
        struct ushmemi_p2p_caps p2p;
        status = ops->p2p_probe(dev, &cards[pe].id, &p2p);
        if (status != USHMEM_OK) {
            ushmemi_error("ushmemi_ipc_connect: PE %d: the %s backend's peer probe of PE %d "
                          "failed: %s", oob->rank, ops->name, pe, ushmemi_status_string(status));
            goto unmap;
        }
        if (!p2p.access) {
            peer->map_why = "not mapped: the device backend reports no peer access between "
                            "the two devices";
            continue;
        }

        int fd;
        enum ushmemi_fd_method used;
        status = fetch_fd(&st, pe, &cards[pe], &fd, &used);
        if (status != USHMEM_OK)
            goto unmap;
        struct ushmemi_ipc_handle peer_handle = {.fd = fd, .size = cards[pe].heap_size};
        memcpy(peer_handle.data, cards[pe].handle_data, sizeof(peer_handle.data));
        void *base;
        status = ops->import_mem(dev, &peer_handle, fd, &base); /* consumes fd */
        if (status != USHMEM_OK) {
            ushmemi_error("ushmemi_ipc_connect: PE %d cannot map PE %d's heap: %s", oob->rank, pe,
                          ushmemi_status_string(status));
            goto unmap;
        }
        peer->base = base;
        peer->map_why = method_why(used);
    }

    /* No server may stop before every local peer has taken its fd. */
    status = oob->barrier(oob->ctx);
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d: barrier after mapping failed: %s", oob->rank,
                      ushmemi_status_string(status));
        goto unmap;
    }
    /* After the barrier nobody is left to serve; in auto mode peers that used
     * pidfd never connect, so a short count is expected here. */
    ushmemi_fd_server_stop(server, 0);
    free(cards);
    return USHMEM_OK;

unmap:
    unmap_peers(ops, dev, peers, nranks, oob->rank, heap_size);
stop_server:
    ushmemi_fd_server_stop(server, 0);
free_cards:
    free(cards);
    return status;
}

void ushmemi_ipc_disconnect(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                            struct ushmemi_peer *peers, int npeers, int self, size_t heap_size)
{
    unmap_peers(ops, dev, peers, npeers, self, heap_size); /* our own heap is not an import */
}
