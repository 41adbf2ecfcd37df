/* The unique-id bootstrap's private header: the id's layout, the messages
 * between the PEs and the root (the PE that made the id), the I/O helpers
 * both sides use (bootstrap_uid_io.c) and the root's server
 * (bootstrap_uid_root.c). The PEs' side and the ops table are in
 * bootstrap_uid.c.
 *
 * The job is a star: every PE, the root included, connects over TCP to the
 * root's listening socket, whose address and port the id carries, and
 * proves with the id's secret that it belongs to the job. The root checks
 * that every PE gave the same PE count and a rank of its own, answers with
 * the job (a fresh job token and every PE's host identity), then carries
 * the exchanges (an allgather: each PE sends its part, the root sends every
 * PE the whole) and the aborts, and watches every connection: one that
 * closes without a goodbye ends the job. */
#ifndef USHMEMI_BOOTSTRAP_UID_H
#define USHMEMI_BOOTSTRAP_UID_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../common/status.h"

#define UID_CALL_INIT "ushmemx_init_uniqueid"
#define UID_SECRET_LEN 32 /* 256 random bits: what a stranger must guess */
#define UID_TOKEN_LEN 12  /* the job token (job_id): random, not from the secret */
#define UID_HOST_LEN 64
#define UID_NPES_MAX 16384 /* a star of TCP connections; far beyond it, use PMIx */
#define UID_TEXT_MAX 480   /* a failure's or an abort's sentence */
/* One PE's part of an exchange; the root refuses more (an internal bug). */
#define UID_GATHER_MAX ((size_t)1 << 26)

/* What the id holds (its 124 internal bytes, written in network order). */
struct uid_info {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    uint16_t port;
    uint8_t secret[UID_SECRET_LEN];
    uint64_t root_node; /* ushmemi_node_hash() of the root's host */
    uint32_t root_pid;
    char root_host[33]; /* for messages; may be cut short */
};

/* Messages: an 8-byte header (type, body length; network order), then the
 * body. A stranger's bytes fail the header check at once. */
enum uid_msg {
    UID_MSG_HELLO = 0x75480001,   /* PE -> root: secret, rank, npes, pid, node, host */
    UID_MSG_WELCOME = 0x75480002, /* root -> PE: npes, job token, npes node hashes */
    UID_MSG_FAIL = 0x75480003,    /* root -> PE: the job did not start: why (text) */
    UID_MSG_GATHER = 0x75480004,  /* PE -> root: exchange number, this PE's part */
    UID_MSG_RESULT = 0x75480005,  /* root -> PE: exchange number, every PE's part */
    UID_MSG_ABORT = 0x75480006,   /* PE -> root: code, text; root -> PE: code, origin, text */
    UID_MSG_BYE = 0x75480007,     /* either way: a normal end, not a death */
};
#define UID_HDR_LEN 8
#define UID_HELLO_LEN (UID_SECRET_LEN + 4 + 4 + 4 + 8 + UID_HOST_LEN)

/* bootstrap_uid_io.c */
int64_t ushmemi_uid_now_ms(void);
void ushmemi_uid_put32(uint8_t *p, uint32_t v);
void ushmemi_uid_put64(uint8_t *p, uint64_t v);
uint32_t ushmemi_uid_get32(const uint8_t *p);
uint64_t ushmemi_uid_get64(const uint8_t *p);
/* Compares two secrets in time that does not depend on where they differ. */
bool ushmemi_uid_secret_equal(const uint8_t *a, const uint8_t *b);
/* Waits for `events` on fd until deadline (monotonic ms; -1: none): 1
 * ready, 0 timed out, -1 poll failed. */
int ushmemi_uid_wait(int fd, short events, int64_t deadline);
/* Whole buffers on a non-blocking socket. USHMEM_OK, USHMEM_ERR_TIMEOUT,
 * or USHMEM_ERR_IO with errno set (0: the other end closed). */
ushmem_status_t ushmemi_uid_send(int fd, const void *buf, size_t len, int64_t deadline);
ushmem_status_t ushmemi_uid_recv(int fd, void *buf, size_t len, int64_t deadline);
/* A header and a body made of two parts (either may be empty). */
ushmem_status_t ushmemi_uid_send_msg(int fd, uint32_t type, const void *a, size_t alen,
                                     const void *b, size_t blen, int64_t deadline);
/* errno after ushmemi_uid_send/recv as words. */
const char *ushmemi_uid_io_why(int err);
/* "192.0.2.7:41234" or "[2001:db8::1]:41234". */
void ushmemi_uid_addr_text(int family, const void *addr, uint16_t port, char *buf, size_t len);
/* The socket address of an id's root. */
socklen_t ushmemi_uid_sockaddr(const struct uid_info *u, struct sockaddr_storage *sa);
/* getrandom until len bytes are in. */
ushmem_status_t ushmemi_uid_random(uint8_t *buf, size_t len, const char *call);

/* bootstrap_uid_id.c */
/* The arguments of an init, with messages naming `call` and the PE; a
 * failure closes an id this process made (the other PEs then fail at once
 * instead of waiting for a PE 0 that will not come). */
ushmem_status_t ushmemi_uid_check_args(const char *call, int rank, int npes, const void *uid,
                                       struct uid_info *u_p);
/* Whether this process is PE 0 of the id (it holds the id's listening
 * socket, made here or in a parent before a fork): the socket moves into
 * *listen_fd_p, else -1. Says why a process that made the id passes
 * another rank, or one that did not make it passes rank 0. Any other id of
 * this process is closed. */
ushmem_status_t ushmemi_uid_claim_root(const char *call, int rank, const struct uid_info *u,
                                       int *listen_fd_p);
bool ushmemi_uid_same_secret(const void *uid, const uint8_t *secret);
bool ushmemi_uid_is_loopback(const struct uid_info *u);
/* The variables, with no message (shmem_init says what is wrong, once). */
void ushmemi_uid_load_vars_quietly(void);
void ushmemi_uid_host_name(char *buf, size_t len);

/* bootstrap_uid_root.c: the root's server, a thread from the root's
 * ushmemx_init_uniqueid until its bootstrap finalizes. */
struct uid_server;
struct uid_server_args {
    int listen_fd; /* taken over by the server */
    int npes;
    int timeout_s; /* for the rendezvous */
    const struct uid_info *uid;
    const char *where; /* the address in the id, for messages */
};
ushmem_status_t ushmemi_uid_server_start(const struct uid_server_args *args,
                                         struct uid_server **server_p);
/* Whether the rendezvous failed (the server said why, once). */
bool ushmemi_uid_server_failed(const struct uid_server *s);
/* Says goodbye to every PE still connected, closes everything, frees. */
void ushmemi_uid_server_stop(struct uid_server *s);
/* In a child forked by the root: closes the child's copies of the server's
 * sockets (the server thread is the parent's), so that only the parent
 * holds the PEs' connections. */
void ushmemi_uid_server_forget(struct uid_server *s);

#endif
