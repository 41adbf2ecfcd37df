/* The ipc transport's connection phase: every PE exports its heap, the PEs
 * exchange one fixed-size card each, and every PE maps the heap of each peer
 * on its node through a copy of the peer's fd. It owns the mappings it makes
 * until ushmemi_ipc_disconnect.
 *
 * How the fds move (USHMEM_FD_PASSING):
 * - pidfd: pidfd_getfd from the pid and fd number in the card; no socket.
 * - socket: every PE binds a randomly named fd server before the card
 *   exchange and publishes the name in its card, so it is listening before
 *   anyone can know where to connect.
 * - auto: pidfd first, with no socket at all. Then one small exchange says
 *   whether some PE had pidfd refused (ptrace permission); only then do its
 *   node's PEs start servers and exchange their names, and that PE fetches
 *   over the sockets what pidfd could not take.
 * Every PE makes the same sequence of exchanges, decided from what all of
 * them see, so that none waits in an exchange the others skip. */
#include "transport.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* Whether the last connection in auto mode had pidfd_getfd refused on some
 * PE (the same answer on every PE): growth then passes its fds over
 * sockets from the start, as socket mode does. */
static bool auto_needs_sockets;

/* What each PE tells the others; the same layout on every PE of a job. */
struct ipc_card {
    int32_t pid;
    int32_t fd; /* the exporter's fd number, for pidfd_getfd */
    uint64_t node_hash;
    uint64_t heap_size;
    uint8_t handle_data[sizeof(((struct ushmemi_ipc_handle *)0)->data)];
    struct ushmemi_device_id id;   /* for the peer-access probe before mapping */
    struct ushmemi_fd_name server; /* socket mode: where this PE serves its fd */
    uint32_t fd_method;            /* must agree: it decides the exchanges that follow */
    uint32_t reserved;
};
static_assert(sizeof(struct ipc_card) == 160, "ipc card layout changed");

static const char *method_name(uint32_t method)
{
    return method == USHMEMI_FD_PIDFD ? "pidfd" : method == USHMEMI_FD_SOCKET ? "socket" : "auto";
}

static const char *method_why(enum ushmemi_fd_method method)
{
    return method == USHMEMI_FD_SOCKET ? "same node: heap mapped through an fd passed over a socket"
                                       : "same node: heap mapped through an fd taken with pidfd_getfd";
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

/* What one connection needs at hand while it maps peers. */
struct connect_state {
    const struct ushmemi_oob *oob;
    const struct ushmemi_device_ops *ops;
    struct ushmemi_device *dev;
    const struct ushmemi_ipc_config *config;
    const struct ipc_card *cards;
    struct ushmemi_peer *peers;
    uint64_t node_hash; /* this PE's */
};

/* The pids of the other PEs on this node, those with want[pe] set (all of
 * them when want is NULL): only they may have our fd. */
static ushmem_status_t local_pids(const struct connect_state *cs, const uint32_t *want,
                                  pid_t **pids_p, int *npids_p)
{
    const struct ushmemi_oob *oob = cs->oob;
    pid_t *pids = malloc((size_t)oob->size * sizeof(*pids));
    int npids = 0;

    if (pids == NULL) {
        ushmemi_error("ushmemi_ipc_connect: PE %d cannot allocate %d pids", oob->rank, oob->size);
        return USHMEM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < oob->size; pe++)
        if (pe != oob->rank && cs->cards[pe].node_hash == cs->node_hash &&
            (want == NULL || want[pe] != 0))
            pids[npids++] = (pid_t)cs->cards[pe].pid;
    *pids_p = pids;
    *npids_p = npids;
    return USHMEM_OK;
}

/* Maps peer `pe`'s segment from this process's copy of its fd (consumed). */
static ushmem_status_t import_peer(struct connect_state *cs, int pe, int fd,
                                   enum ushmemi_fd_method used)
{
    const struct ipc_card *card = &cs->cards[pe];
    struct ushmemi_ipc_handle peer_handle = {.fd = fd, .size = card->heap_size};
    void *base;

    memcpy(peer_handle.data, card->handle_data, sizeof(peer_handle.data));
    ushmem_status_t status = cs->ops->import_mem(cs->dev, &peer_handle, fd, &base);
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d cannot map PE %d's heap: %s", cs->oob->rank, pe,
                      ushmemi_status_string(status));
        return status;
    }
    cs->peers[pe].base = base;
    cs->peers[pe].map_why = method_why(used);
    return USHMEM_OK;
}

/* Takes peer `pe`'s fd with pidfd_getfd and maps it. In auto mode a refusal
 * (ptrace permission, which Yama and containers commonly withhold, or no
 * pidfd_getfd at all) is no error: *refused_p is set, and the fd comes over
 * a socket in auto_fallback. */
static ushmem_status_t map_by_pidfd(struct connect_state *cs, int pe, bool *refused_p)
{
    const struct ipc_card *card = &cs->cards[pe];
    enum ushmemi_fd_method method = cs->config->fd_method;
    int fd;

    ushmem_status_t status = ushmemi_fd_get_pidfd((pid_t)card->pid, card->fd, &fd);
    int err = errno;
    if (status == USHMEM_OK)
        return import_peer(cs, pe, fd, USHMEMI_FD_PIDFD);
    bool refused = status == USHMEM_ERR_PERMISSION || status == USHMEM_ERR_UNSUPPORTED;
    if (method == USHMEMI_FD_AUTO && refused) {
        ushmemi_debug("ushmemi_ipc_connect: pidfd_getfd refused for PE %d (%s); its fd will "
                      "come over a socket", pe, strerror(err));
        *refused_p = true;
        return USHMEM_OK;
    }
    ushmemi_error("ushmemi_ipc_connect: PE %d cannot take PE %d's heap fd %d (pid %d) with "
                  "pidfd_getfd: %s (errno %d, %s)%s", cs->oob->rank, pe, (int)card->fd,
                  (int)card->pid, strerror(err), err, ushmemi_status_name(status),
                  method == USHMEMI_FD_PIDFD ? "; USHMEM_FD_PASSING=socket may work" : "");
    return status;
}

static ushmem_status_t map_by_socket(struct connect_state *cs, int pe,
                                     const struct ushmemi_fd_name *name)
{
    int fd;
    ushmem_status_t status = ushmemi_fd_get_socket(name, pe, (pid_t)cs->cards[pe].pid,
                                                   cs->config->timeout_s, &fd);
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d could not receive PE %d's heap fd over its "
                      "socket: %s", cs->oob->rank, pe, ushmemi_status_string(status));
        return status;
    }
    return import_peer(cs, pe, fd, USHMEMI_FD_SOCKET);
}

static ushmem_status_t closing_barrier(const struct ushmemi_oob *oob)
{
    ushmem_status_t status = oob->barrier(oob->ctx);
    if (status != USHMEM_OK)
        ushmemi_error("ushmemi_ipc_connect: PE %d: barrier after mapping failed: %s", oob->rank,
                      ushmemi_status_string(status));
    return status;
}

/* Auto mode, once pidfd has been tried on every local peer: one exchange
 * says which PEs had it refused. Where none did (the common case) that is
 * all, and no socket was ever opened. Otherwise every PE with such a PE on
 * its node starts a server that serves only those PEs, a second exchange
 * publishes the servers' names, and the refused PEs fetch over them.
 * *server_p receives the server, for the caller to stop. */
static ushmem_status_t auto_fallback(struct connect_state *cs, int my_fd, const bool *refused,
                                     struct ushmemi_fd_server **server_p)
{
    const struct ushmemi_oob *oob = cs->oob;
    ushmem_status_t status = USHMEM_ERR_NO_MEMORY;
    uint32_t need = 0;
    uint32_t *needs = calloc((size_t)oob->size, sizeof(*needs));
    struct ushmemi_fd_name my_name, *names = calloc((size_t)oob->size, sizeof(*names));
    pid_t *pids = NULL;
    int npids;

    if (needs == NULL || names == NULL) {
        ushmemi_error("ushmemi_ipc_connect: PE %d cannot allocate the fallback tables of %d PEs",
                      oob->rank, oob->size);
        goto free_tables;
    }
    for (int pe = 0; pe < oob->size; pe++)
        need |= refused[pe];
    status = oob->allgather(oob->ctx, &need, needs, sizeof(need));
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d: exchange of pidfd refusals failed: %s",
                      oob->rank, ushmemi_status_string(status));
        goto free_tables;
    }
    bool anyone = false;
    for (int pe = 0; pe < oob->size; pe++)
        anyone |= needs[pe] != 0;
    auto_needs_sockets = anyone;
    if (!anyone)
        goto free_tables; /* the exchange was also the closing barrier */

    status = local_pids(cs, needs, &pids, &npids);
    if (status != USHMEM_OK)
        goto free_tables;
    memset(&my_name, 0, sizeof(my_name));
    if (npids > 0) {
        status = ushmemi_fd_server_start(oob->rank, my_fd, npids, pids, npids, &my_name,
                                         server_p);
        if (status != USHMEM_OK)
            goto free_pids;
    }
    status = oob->allgather(oob->ctx, &my_name, names, sizeof(my_name));
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d: exchange of fd server names failed: %s",
                      oob->rank, ushmemi_status_string(status));
        goto free_pids;
    }
    for (int pe = 0; pe < oob->size; pe++) {
        if (!refused[pe])
            continue;
        status = map_by_socket(cs, pe, &names[pe]);
        if (status != USHMEM_OK)
            goto free_pids;
    }
    /* No server may stop before every local peer has taken its fd. */
    status = closing_barrier(oob);

free_pids:
    free(pids);
free_tables:
    free(names);
    free(needs);
    return status;
}

/* Every PE sees the same cards, so all of them fail here together. */
static ushmem_status_t check_cards(const struct ushmemi_oob *oob, const struct ipc_card *cards,
                                   size_t heap_size, const char *segment, bool same_executable)
{
    for (int pe = 0; pe < oob->size; pe++) {
        if (cards[pe].fd_method != cards[0].fd_method) {
            ushmemi_error("ushmemi_ipc_connect: USHMEM_FD_PASSING is %s on PE 0 but %s on PE %d; "
                          "it must be the same on every PE", method_name(cards[0].fd_method),
                          method_name(cards[pe].fd_method), pe);
            return USHMEM_ERR_INVALID_PARAM;
        }
        if (cards[pe].heap_size != heap_size) {
            ushmemi_error("ushmemi_ipc_connect: PE %d has a %llu-byte %s but PE %d has %zu bytes; %s",
                          pe, (unsigned long long)cards[pe].heap_size, segment, oob->rank,
                          heap_size,
                          same_executable ? "every PE must run the same executable"
                                          : "SHMEM_SYMMETRIC_SIZE must be the same on every PE");
            return USHMEM_ERR_INVALID_PARAM;
        }
    }
    return USHMEM_OK;
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
    bool *refused;
    const int nranks = oob->size;
    const enum ushmemi_fd_method method = config->fd_method;
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
    refused = calloc((size_t)nranks, sizeof(*refused));
    if (cards == NULL || refused == NULL) {
        ushmemi_error("ushmemi_ipc_connect: PE %d cannot allocate %d cards", oob->rank, nranks);
        status = USHMEM_ERR_NO_MEMORY;
        goto free_cards;
    }

    memset(&mine, 0, sizeof(mine));
    /* In socket mode every local PE both serves and fetches: the server is
     * listening under its fresh name before the card carries that name to
     * anyone. Who may fetch is known only from the cards: until then the
     * server keeps clients waiting (see ushmemi_fd_server_allow). */
    if (method == USHMEMI_FD_SOCKET && oob->local_size > 1) {
        status = ushmemi_fd_server_start(oob->rank, handle.fd, oob->local_size - 1, NULL, 0,
                                         &mine.server, &server);
        if (status != USHMEM_OK)
            goto free_cards;
    }
    mine.pid = (int32_t)getpid();
    mine.fd = handle.fd;
    mine.node_hash = id.node_hash;
    mine.heap_size = heap_size;
    mine.id = id;
    mine.fd_method = (uint32_t)method;
    memcpy(mine.handle_data, handle.data, sizeof(mine.handle_data));
    status = oob->allgather(oob->ctx, &mine, cards, sizeof(mine));
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_connect: PE %d: card exchange failed: %s", oob->rank,
                      ushmemi_status_string(status));
        goto stop_server;
    }

    struct connect_state cs = {.oob = oob, .ops = ops, .dev = dev, .config = config,
                               .cards = cards, .peers = peers, .node_hash = id.node_hash};
    if (server != NULL) {
        pid_t *pids;
        int npids;
        status = local_pids(&cs, NULL, &pids, &npids);
        if (status != USHMEM_OK)
            goto stop_server;
        status = ushmemi_fd_server_allow(server, pids, npids);
        free(pids);
        if (status != USHMEM_OK)
            goto stop_server;
    }
    status = check_cards(oob, cards, heap_size, segment, config->segment != NULL);
    if (status != USHMEM_OK)
        goto stop_server;

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
        if (method == USHMEMI_FD_SOCKET)
            status = map_by_socket(&cs, pe, &cards[pe].server);
        else
            status = map_by_pidfd(&cs, pe, &refused[pe]);
        if (status != USHMEM_OK)
            goto unmap;
    }

    if (method == USHMEMI_FD_AUTO)
        status = auto_fallback(&cs, handle.fd, refused, &server);
    else
        status = closing_barrier(oob); /* no server may stop before its peers have the fd */
    if (status != USHMEM_OK)
        goto unmap;
    /* After the barrier nobody is left to serve; peers that had no need of
     * a server never connect, so a short count is expected here. */
    ushmemi_fd_server_stop(server, 0);
    free(refused);
    free(cards);
    return USHMEM_OK;

unmap:
    unmap_peers(ops, dev, peers, nranks, oob->rank, heap_size);
stop_server:
    ushmemi_fd_server_stop(server, 0);
free_cards:
    free(refused);
    free(cards);
    return status;
}

void ushmemi_ipc_disconnect(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                            struct ushmemi_peer *peers, int npeers, int self, size_t heap_size)
{
    unmap_peers(ops, dev, peers, npeers, self, heap_size); /* our own heap is not an import */
}

/* ---- Growth: each PE's new heap chunk mapped by the local peers that map
 * its heap, where that heap's reserve puts it. ---- */

/* What each PE tells the others about its new chunk. */
struct grow_card {
    int32_t pid;
    int32_t fd; /* the exporter's fd number, for pidfd_getfd */
    uint64_t new_size;
    uint64_t chunk_size; /* the handle's size */
    uint8_t handle_data[sizeof(((struct ushmemi_ipc_handle *)0)->data)];
    struct ushmemi_fd_name server; /* sockets: where this PE serves its fd */
    uint32_t ok;                   /* 0: this PE could not export (it said why) */
    uint32_t reserved;
};

/* Unmaps the chunks mapped[pe] says this PE mapped. */
static void close_chunks(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                         struct ushmemi_peer *peers, int npeers, const bool *mapped,
                         size_t old_size, size_t new_size)
{
    for (int pe = npeers - 1; pe >= 0; pe--)
        if (mapped == NULL || mapped[pe])
            ops->close_chunk(dev, peers[pe].base, old_size, new_size);
}

/* Takes peer pe's chunk fd and maps the chunk behind its heap; on failure
 * step->why says why. */
static ushmem_status_t import_peer_chunk(const struct ushmemi_device_ops *ops,
                                         struct ushmemi_device *dev,
                                         const struct ushmemi_ipc_config *config,
                                         const struct grow_card *card, bool sockets, int pe,
                                         void *peer_base, size_t old_size, size_t new_size,
                                         struct ushmemi_grow_step *step)
{
    int fd = -1;
    ushmem_status_t status = USHMEM_OK;
    /* A growth that needed no new memory on the exporter (its rounding had
     * mapped it already) has nothing to pass: the backend just notes it. */
    if (card->chunk_size != 0 && sockets)
        status = ushmemi_fd_get_socket(&card->server, pe, (pid_t)card->pid, config->timeout_s,
                                       &fd);
    else if (card->chunk_size != 0)
        status = ushmemi_fd_get_pidfd((pid_t)card->pid, card->fd, &fd);
    if (status != USHMEM_OK) {
        snprintf(step->why, sizeof(step->why), "cannot take PE %d's new heap chunk fd %d (pid "
                 "%d) %s: %s", pe, (int)card->fd, (int)card->pid,
                 sockets ? "over its socket" : "with pidfd_getfd", ushmemi_status_string(status));
        return status;
    }
    if (pe == step->fail_peer) {
        /* The fault stands in for the backend's import, fd consumed and
         * nothing mapped, as a refused import leaves it. */
        if (fd >= 0)
            close(fd);
        snprintf(step->why, sizeof(step->why), "cannot map PE %d's new heap chunk (%llu bytes): "
                 "the fault that USHMEMI_FAULT_GROW_MAP injects", pe,
                 (unsigned long long)card->chunk_size);
        return USHMEM_ERR_DEVICE;
    }
    struct ushmemi_ipc_handle handle = {.fd = fd, .size = card->chunk_size};
    memcpy(handle.data, card->handle_data, sizeof(handle.data));
    status = ops->import_chunk(dev, peer_base, old_size, new_size, &handle, fd);
    if (status != USHMEM_OK)
        snprintf(step->why, sizeof(step->why), "cannot map PE %d's new heap chunk (%llu bytes): "
                 "%s", pe, (unsigned long long)card->chunk_size, ushmemi_status_string(status));
    return status;
}

ushmem_status_t ushmemi_ipc_grow(const struct ushmemi_oob *oob, const struct ushmemi_device_ops *ops,
                                 struct ushmemi_device *dev, void *heap, size_t old_size,
                                 size_t new_size, const struct ushmemi_ipc_config *config,
                                 struct ushmemi_peer *peers, struct ushmemi_grow_step *step)
{
    const int n = oob->size, me = oob->rank;
    struct ushmemi_ipc_handle handle;
    struct ushmemi_fd_server *server = NULL;
    struct grow_card mine, *cards = calloc((size_t)n, sizeof(*cards));
    bool *mapped = calloc((size_t)n, sizeof(*mapped));
    pid_t *pids = calloc((size_t)n, sizeof(*pids));
    uint32_t *oks = calloc((size_t)n, sizeof(*oks));
    int npids = 0;
    bool sockets = config->fd_method == USHMEMI_FD_SOCKET ||
                   (config->fd_method == USHMEMI_FD_AUTO && auto_needs_sockets);
    ushmem_status_t status = USHMEM_OK;

    memset(&mine, 0, sizeof(mine));
    step->why[0] = '\0';
    if (cards == NULL || mapped == NULL || pids == NULL || oks == NULL) {
        /* Without room to receive the cards this PE cannot join the
         * exchange: its peers wait in it until the bootstrap times out. */
        ushmemi_error("ushmemi_ipc_grow: PE %d cannot allocate the tables of %d PEs", me, n);
        status = USHMEM_ERR_NO_MEMORY;
        goto stop_server;
    }
    /* Who maps this PE's heap: the local peers it maps (the probe that
     * decided it is symmetric). */
    for (int pe = 0; pe < n; pe++)
        if (pe != me && peers[pe].base != NULL)
            pids[npids++] = peers[pe].pid;
    if (npids > 0) {
        status = ops->export_chunk != NULL && ops->import_chunk != NULL
                     ? ops->export_chunk(dev, heap, old_size, new_size, &handle)
                     : USHMEM_ERR_UNSUPPORTED;
        if (status == USHMEM_OK && sockets && handle.size > 0)
            status = ushmemi_fd_server_start(me, handle.fd, npids, pids, npids, &mine.server,
                                             &server);
        if (status == USHMEM_OK) {
            mine.fd = handle.fd;
            mine.chunk_size = handle.size;
            memcpy(mine.handle_data, handle.data, sizeof(mine.handle_data));
        } else {
            snprintf(step->why, sizeof(step->why), "cannot export its new heap chunk to the %d "
                     "local PEs that map it: %s", npids, ushmemi_status_string(status));
        }
    }
    mine.pid = (int32_t)getpid();
    mine.new_size = new_size;
    mine.ok = status == USHMEM_OK;
    /* Joined whatever happened above: the others learn of it from ok. */
    ushmem_status_t ex = oob->allgather(oob->ctx, &mine, cards, sizeof(mine));
    if (ex != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_grow: PE %d: card exchange failed: %s", me,
                      ushmemi_status_string(ex));
        status = ex;
        goto stop_server;
    }
    bool everyone = true;
    for (int pe = 0; pe < n; pe++)
        everyone &= cards[pe].ok != 0 && cards[pe].new_size == new_size;
    if (!everyone) {
        if (status == USHMEM_OK)
            status = USHMEM_ERR_TRANSPORT; /* the PE that failed said why */
        goto stop_server;
    }
    for (int pe = 0; pe < n && status == USHMEM_OK; pe++) {
        if (pe == me || peers[pe].base == NULL)
            continue;
        status = import_peer_chunk(ops, dev, config, &cards[pe], sockets, pe, peers[pe].base,
                                   old_size, new_size, step);
        mapped[pe] = status == USHMEM_OK;
    }
    /* All or none: the vote is also the barrier after which no server is
     * needed any more. */
    uint32_t ok = status == USHMEM_OK;
    ex = oob->allgather(oob->ctx, &ok, oks, sizeof(ok));
    if (ex != USHMEM_OK) {
        ushmemi_error("ushmemi_ipc_grow: PE %d: the closing vote failed: %s", me,
                      ushmemi_status_string(ex));
        status = ex;
    }
    for (int pe = 0; ex == USHMEM_OK && pe < n; pe++)
        if (!oks[pe] && status == USHMEM_OK)
            status = USHMEM_ERR_TRANSPORT; /* that PE said why */
    if (status != USHMEM_OK)
        close_chunks(ops, dev, peers, n, mapped, old_size, new_size);

stop_server:
    ushmemi_fd_server_stop(server, 0);
    free(oks);
    free(pids);
    free(mapped);
    free(cards);
    return status;
}

void ushmemi_ipc_ungrow(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                        struct ushmemi_peer *peers, int npeers, int self, size_t old_size,
                        size_t new_size)
{
    for (int pe = npeers - 1; pe >= 0; pe--)
        if (pe != self && peers[pe].base != NULL)
            ops->close_chunk(dev, peers[pe].base, old_size, new_size);
}
