/* Transports and the per-peer route table. A transport reaches peers' heaps;
 * the host layer hands it an out-of-band exchange (struct ushmemi_oob) so that
 * this layer never sees the bootstrap. */
#ifndef USHMEMI_TRANSPORT_H
#define USHMEMI_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/status.h"
#include "../device/device.h"

/* Out-of-band exchange among all PEs, implemented by the host's bootstrap. */
struct ushmemi_oob {
    int rank, size;
    int local_rank, local_size; /* on this PE's node (simulated nodes included) */
    /* On the machine, where helper threads are placed (threads.h): the
     * same as local_* unless USHMEM_SIM_NODES splits the machine. */
    int host_local_rank, host_local_size;
    const char *job_id; /* unique per job, printable, short; for messages only: it is
                         * guessable, so nothing another user could squat is named after it */
    void *ctx;
    /* Every PE contributes len bytes; all_p receives size * len bytes in rank order. */
    ushmem_status_t (*allgather)(void *ctx, const void *mine, void *all, size_t len);
    ushmem_status_t (*barrier)(void *ctx);
};

enum ushmemi_fd_method { USHMEMI_FD_AUTO, USHMEMI_FD_PIDFD, USHMEMI_FD_SOCKET };

/* Operation classes that take a route of their own to each peer. */
enum ushmemi_op_class {
    USHMEMI_CLASS_RMA,
    USHMEMI_CLASS_AMO,
    USHMEMI_CLASS_SIGNAL,
    USHMEMI_CLASS_SYNC, /* synchronisation inside collectives and barriers */
    USHMEMI_CLASS_COUNT,
};

/* The road one operation class takes to one peer. */
enum ushmemi_route {
    USHMEMI_ROUTE_NONE = 0,
    USHMEMI_ROUTE_SELF,
    USHMEMI_ROUTE_DIRECT,    /* peer heap mapped through IPC: loads, stores, atomics */
    USHMEMI_ROUTE_PROXY_OFI, /* libfabric on the heap itself (device code: through the proxy) */
    USHMEMI_ROUTE_STAGED,    /* libfabric through host bounce buffers */
    USHMEMI_ROUTE_HOST_SYNC, /* SYNC only: two PEs on one device wait on the host */
};

struct ushmemi_peer {
    void *base;      /* mapped peer heap (own heap for self); NULL when not mapped */
    pid_t pid;
    uint64_t node_hash;
    const char *map_why; /* static text: how the heap was mapped, or why not */
    /* Filled by the host layer from the route decision. */
    enum ushmemi_route route[USHMEMI_CLASS_COUNT];
    const char *why[USHMEMI_CLASS_COUNT]; /* static text */
};

struct ushmemi_ipc_config {
    enum ushmemi_fd_method fd_method;
    int timeout_s;
    const char *segment; /* what is mapped, for messages: "symmetric heap" when NULL */
};

/* The ipc transport: exports this PE's heap, receives every local peer's fd
 * (pidfd_getfd, or SCM_RIGHTS over an abstract socket checked with
 * SO_PEERCRED), and maps it. peers[] has oob->size entries; base, pid,
 * node_hash and map_why are filled for every PE (base is NULL for PEs on
 * other nodes), routes are left to the caller. Collective over all PEs. */
ushmem_status_t ushmemi_ipc_connect(const struct ushmemi_oob *oob, const struct ushmemi_device_ops *ops,
                                    struct ushmemi_device *dev, void *heap, size_t heap_size,
                                    const struct ushmemi_ipc_config *config,
                                    struct ushmemi_peer *peers);
/* Unmaps every import made by ushmemi_ipc_connect. */
void ushmemi_ipc_disconnect(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                            struct ushmemi_peer *peers, int npeers, int self, size_t heap_size);

/* One step of a heap growth that reaches the peers' new chunks (mapping
 * them, or learning their keys), as the host tells it and hears back. */
struct ushmemi_grow_step {
    /* Test only (USHMEMI_FAULT_GROW_MAP, src/host/heap_grow.c): this PE's
     * taking of that peer's new chunk fails, in place of the call that
     * takes it, and the step undoes itself as for a real failure; -1: none. */
    int fail_peer;
    /* Set, unlogged, on the PE where the step failed: why, naming the peer
     * (empty on the PEs that only learned of it). The host gathers every
     * PE's answer into one line for the job. */
    char why[160];
};

/* Grows the mappings made by ushmemi_ipc_connect: every PE's heap grew
 * from old_size to new_size (device ops heap_grow), and each PE exports its
 * new chunk to the local peers that map its heap, which map it behind that
 * heap. All or none: on failure on any PE (step->why says why there) no PE
 * keeps a chunk it mapped, and every PE returns an error. Collective over
 * all PEs. */
ushmem_status_t ushmemi_ipc_grow(const struct ushmemi_oob *oob, const struct ushmemi_device_ops *ops,
                                 struct ushmemi_device *dev, void *heap, size_t old_size,
                                 size_t new_size, const struct ushmemi_ipc_config *config,
                                 struct ushmemi_peer *peers, struct ushmemi_grow_step *step);
/* Unmaps the peers' chunks of the last successful ushmemi_ipc_grow (a later
 * step of the growth failed). */
void ushmemi_ipc_ungrow(const struct ushmemi_device_ops *ops, struct ushmemi_device *dev,
                        struct ushmemi_peer *peers, int npeers, int self, size_t old_size,
                        size_t new_size);

/* fd passing, exposed for tests. */
/* Takes a copy of fd `remote_fd` from process `pid` with pidfd_getfd. */
ushmem_status_t ushmemi_fd_get_pidfd(pid_t pid, int remote_fd, int *fd_p);

/* The name of an fd server's abstract socket: a random token, drawn when the
 * server binds it and published to the peers through the out-of-band
 * exchange. All zeros: no server. */
struct ushmemi_fd_name {
    uint8_t token[16];
};
bool ushmemi_fd_name_is_set(const struct ushmemi_fd_name *name);

struct ushmemi_fd_server;
/* Listens on the abstract socket "ushmem-<random token>", drawing another
 * token while a name is taken, and serves `fd` to up to `expected` clients
 * whose SO_PEERCRED uid matches ours and whose pid is in allowed_pids; other
 * clients are closed without the fd and do not count. allowed_pids NULL: the
 * list is not known yet, and clients wait in the backlog until
 * ushmemi_fd_server_allow gives it. Serving happens on a thread. *name_p
 * receives the name, which the clients need. */
ushmem_status_t ushmemi_fd_server_start(int rank, int fd, int expected, const pid_t *allowed_pids,
                                        int npids, struct ushmemi_fd_name *name_p,
                                        struct ushmemi_fd_server **server_p);
/* Sets (or replaces) the pids the server may serve, copying the list, and
 * releases the clients waiting for it. */
ushmem_status_t ushmemi_fd_server_allow(struct ushmemi_fd_server *server, const pid_t *pids,
                                        int npids);
/* Waits for the serving thread (up to timeout_s) and releases everything. */
ushmem_status_t ushmemi_fd_server_stop(struct ushmemi_fd_server *server, int timeout_s);
/* Connects to the server of `rank` named `name`, checks that the server is
 * `pid`, and receives the fd. Retries until timeout_s. */
ushmem_status_t ushmemi_fd_get_socket(const struct ushmemi_fd_name *name, int rank, pid_t pid,
                                      int timeout_s, int *fd_p);

/* "none", "self", "direct", "proxy/ofi", "staged", "host-sync" */
const char *ushmemi_route_name(enum ushmemi_route route);
/* "RMA", "atomics", "signals", "synchronisation" */
const char *ushmemi_op_class_name(enum ushmemi_op_class cls);

#endif
