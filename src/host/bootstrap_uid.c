/* The unique-id bootstrap, the PEs' side (bootstrap_uid.h says what the star
 * does): the rendezvous, the exchanges through the root, the ops table, and
 * the thread that watches the connection to the root between bootstrap
 * calls: it exits the process on an abort, or when the root's connection
 * closes without a goodbye. The id itself is bootstrap_uid_id.c's. */
#include "bootstrap_uid.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/threads.h"
#include "../device/node_id.h"
#include "internal.h"

#define ANSWER_GRACE_MS 2000 /* a PE that reached the root waits this much longer, so that
                              * the root, which knows who is missing, says it first */
#define CONTROL_MS 2000
#define ABORT_WAIT_MS 3000 /* for the root to echo an abort, which ends this process */

/* This process's unique-id job: one at a time (ushmemi_g.bs). */
static struct {
    int fd; /* to the root; -1: none */
    int rank, npes;
    uint8_t secret[UID_SECRET_LEN];
    char where[80];
    struct uid_server *server; /* PE 0 only */
    pthread_t reader;
    bool reader_running;
    bool forked; /* a child forked by the PE: the job is the parent's */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_mutex_t send_lock; /* one message at a time on fd */
    uint32_t next_seq;
    /* The exchange this PE waits for, filled by the reader thread. */
    bool waiting;
    uint32_t want_seq;
    void *want_buf;
    size_t want_len;
    int outcome; /* 0 waiting, 1 arrived, -1 the root left */
    bool closing;   /* finalize under way: a close is expected */
    bool root_gone; /* the root said goodbye */
} cl = {
    .fd = -1,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
    .send_lock = PTHREAD_MUTEX_INITIALIZER,
};

static const struct ushmemi_bootstrap_ops uid_ops;

/* ---- the rendezvous ---- */

/* 1: connected; 0: not now (err_p), try again; -1: never (err_p). */
static int connect_once(const struct uid_info *u, int64_t deadline, int *fd_p, int *err_p)
{
    struct sockaddr_storage sa;
    socklen_t salen = ushmemi_uid_sockaddr(u, &sa);
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err_p = errno;
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int err = 0;
    if (connect(fd, (struct sockaddr *)&sa, salen) != 0) {
        err = errno;
        if (err == EINPROGRESS || err == EINTR) {
            int r = ushmemi_uid_wait(fd, POLLOUT, deadline);
            socklen_t len = sizeof(err);
            if (r == 0)
                err = ETIMEDOUT;
            else if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
        }
    }
    if (err == 0) {
        *fd_p = fd;
        return 1;
    }
    close(fd);
    *err_p = err;
    switch (err) {
    case ECONNREFUSED: case EACCES: case EPERM: case EAFNOSUPPORT: case EINVAL: return -1;
    default: return 0;
    }
}

/* The root's answer to a hello: the job (USHMEM_OK, *nodes_p allocated),
 * a failure already said (USHMEM_ERR_BOOTSTRAP, USHMEM_ERR_TIMEOUT), or the
 * connection dropped without an answer (USHMEM_ERR_IO: try again). */
static ushmem_status_t answer(int fd, int rank, int npes, int timeout_s, int64_t deadline,
                              bool is_root, uint8_t *token, uint64_t **nodes_p)
{
    uint8_t hdr[UID_HDR_LEN];
    ushmem_status_t status = ushmemi_uid_recv(fd, hdr, sizeof(hdr), deadline);
    if (status == USHMEM_ERR_TIMEOUT) {
        ushmemi_error("%s: PE %d waited %d s (USHMEM_BOOTSTRAP_TIMEOUT) for the job to start: "
                      "it reached PE 0 at %s, which did not answer: PE 0 has not called "
                      "ushmemx_init_uniqueid, or other PEs have not joined",
                      UID_CALL_INIT, rank, timeout_s, cl.where);
        return USHMEM_ERR_TIMEOUT;
    }
    if (status != USHMEM_OK)
        return USHMEM_ERR_IO;
    uint32_t type = ushmemi_uid_get32(hdr), len = ushmemi_uid_get32(hdr + 4);
    size_t welcome_len = 4 + UID_TOKEN_LEN + 8 * (size_t)npes;
    char text[UID_TEXT_MAX + 1];
    if ((type == UID_MSG_FAIL && len <= UID_TEXT_MAX) ||
        (type == UID_MSG_ABORT && len >= 8 && len - 8 <= UID_TEXT_MAX)) {
        uint8_t body[UID_TEXT_MAX + 8];
        if (ushmemi_uid_recv(fd, body, len, deadline) != USHMEM_OK)
            return USHMEM_ERR_IO;
        size_t skip = type == UID_MSG_ABORT ? 8 : 0;
        memcpy(text, body + skip, len - skip);
        text[len - skip] = '\0';
        if (!is_root) /* PE 0's server said it already */
            ushmemi_error("%s: PE %d: the job did not start: %s", UID_CALL_INIT, rank, text);
        return USHMEM_ERR_BOOTSTRAP;
    }
    if (type == UID_MSG_BYE && len == 0) {
        if (!is_root)
            ushmemi_error("%s: PE %d: PE 0 at %s gave up the job before it started",
                          UID_CALL_INIT, rank, cl.where);
        return USHMEM_ERR_BOOTSTRAP;
    }
    if (type != UID_MSG_WELCOME || len != welcome_len) {
        ushmemi_error("%s: PE %d: %s answered with something that is not the ushmem bootstrap's "
                      "welcome for %d PEs", UID_CALL_INIT, rank, cl.where, npes);
        return USHMEM_ERR_BOOTSTRAP;
    }
    uint8_t *body = malloc(welcome_len);
    uint64_t *nodes = calloc((size_t)npes, sizeof(*nodes));
    if (body == NULL || nodes == NULL) {
        ushmemi_error("%s: PE %d: out of memory for the job's %d PEs", UID_CALL_INIT, rank, npes);
        status = USHMEM_ERR_NO_MEMORY;
        goto err_free;
    }
    status = ushmemi_uid_recv(fd, body, welcome_len, deadline);
    if (status != USHMEM_OK) {
        status = USHMEM_ERR_IO;
        goto err_free;
    }
    if ((int)ushmemi_uid_get32(body) != npes) {
        ushmemi_error("%s: PE %d: PE 0 started a job of %u PEs, not %d", UID_CALL_INIT, rank,
                      ushmemi_uid_get32(body), npes);
        status = USHMEM_ERR_BOOTSTRAP;
        goto err_free;
    }
    memcpy(token, body + 4, UID_TOKEN_LEN);
    for (int r = 0; r < npes; r++)
        nodes[r] = ushmemi_uid_get64(body + 4 + UID_TOKEN_LEN + 8 * (size_t)r);
    free(body);
    *nodes_p = nodes;
    return USHMEM_OK;

err_free:
    free(nodes);
    free(body);
    return status;
}

/* Connects to the root, proves the secret and waits for the job. A
 * connection dropped without an answer (the root drops the oldest unproven
 * ones when strangers crowd it) is tried again until the deadline. */
static ushmem_status_t join(const struct uid_info *u, int rank, int npes, int timeout_s,
                            uint8_t *token, uint64_t **nodes_p, int *fd_p)
{
    uint8_t hello[UID_HELLO_LEN] = {0};
    memcpy(hello, u->secret, UID_SECRET_LEN);
    ushmemi_uid_put32(hello + UID_SECRET_LEN, (uint32_t)rank);
    ushmemi_uid_put32(hello + UID_SECRET_LEN + 4, (uint32_t)npes);
    ushmemi_uid_put32(hello + UID_SECRET_LEN + 8, (uint32_t)getpid());
    ushmemi_uid_put64(hello + UID_SECRET_LEN + 12, ushmemi_node_hash());
    char host[UID_HOST_LEN + 1];
    ushmemi_uid_host_name(host, sizeof(host));
    memcpy(hello + UID_SECRET_LEN + 20, host, strnlen(host, UID_HOST_LEN));

    bool is_root = cl.server != NULL;
    int64_t deadline = ushmemi_uid_now_ms() + (int64_t)timeout_s * 1000;
    int64_t pause_ms = 10;
    int drops = 0, err = 0;
    for (;;) {
        if (is_root && ushmemi_uid_server_failed(cl.server))
            return USHMEM_ERR_BOOTSTRAP; /* the server said why */
        int fd = -1;
        int r = connect_once(u, deadline, &fd, &err);
        if (r < 0) {
            if (err == ECONNREFUSED)
                ushmemi_error("%s: PE %d cannot reach PE 0 at %s: nothing listens there: PE 0 "
                              "(pid %u on %s) has ended or failed its ushmemx_init_uniqueid, or "
                              "the id is from an earlier job", UID_CALL_INIT, rank, cl.where,
                              (unsigned)u->root_pid, u->root_host);
            else
                ushmemi_error("%s: PE %d cannot reach PE 0 at %s: %s", UID_CALL_INIT, rank,
                              cl.where, strerror(err));
            return USHMEM_ERR_BOOTSTRAP;
        }
        if (r > 0) {
            ushmem_status_t status = ushmemi_uid_send_msg(fd, UID_MSG_HELLO, hello,
                                                          sizeof(hello), NULL, 0, deadline);
            if (status == USHMEM_OK) {
                status = answer(fd, rank, npes, timeout_s, deadline + ANSWER_GRACE_MS, is_root,
                                token, nodes_p);
                if (status == USHMEM_OK) {
                    *fd_p = fd;
                    return USHMEM_OK;
                }
                if (status != USHMEM_ERR_IO) { /* answer() said why */
                    close(fd);
                    return status;
                }
            }
            err = errno;
            close(fd);
            drops++;
        }
        int64_t now = ushmemi_uid_now_ms();
        if (now >= deadline) {
            if (is_root && ushmemi_uid_server_failed(cl.server))
                return USHMEM_ERR_BOOTSTRAP;
            if (drops > 0)
                ushmemi_error("%s: PE %d: PE 0 at %s closed the connection %d times without an "
                              "answer in %d s (USHMEM_BOOTSTRAP_TIMEOUT): is the id from an "
                              "earlier job?", UID_CALL_INIT, rank, cl.where, drops, timeout_s);
            else
                ushmemi_error("%s: PE %d waited %d s (USHMEM_BOOTSTRAP_TIMEOUT) to reach PE 0 "
                              "at %s: %s", UID_CALL_INIT, rank, timeout_s, cl.where,
                              strerror(err));
            return USHMEM_ERR_TIMEOUT;
        }
        int64_t nap = pause_ms < deadline - now ? pause_ms : deadline - now;
        struct timespec ts = {.tv_sec = nap / 1000, .tv_nsec = (nap % 1000) * 1000000};
        nanosleep(&ts, NULL);
        pause_ms = pause_ms * 2 > 500 ? 500 : pause_ms * 2;
    }
}

/* Node numbers from the PEs' host identities: node_id counts hosts in the
 * order of their first PE, local_rank the PEs of this host before this one. */
static ushmem_status_t place(struct ushmemi_bootstrap *bs, const uint64_t *nodes)
{
    uint64_t *seen = calloc((size_t)bs->size, sizeof(*seen));
    if (seen == NULL)
        return USHMEM_ERR_NO_MEMORY;
    int nseen = 0;
    uint64_t mine = nodes[bs->rank];
    bs->local_rank = 0;
    bs->local_size = 0;
    for (int r = 0; r < bs->size; r++) {
        int k = 0;
        while (k < nseen && seen[k] != nodes[r])
            k++;
        if (k == nseen)
            seen[nseen++] = nodes[r];
        if (nodes[r] == mine) {
            if (r < bs->rank)
                bs->local_rank++;
            bs->local_size++;
            bs->node_id = k;
        }
    }
    free(seen);
    return USHMEM_OK;
}

/* ---- the job ---- */

/* The connection to the root closed or failed. During a finalize that is
 * expected; otherwise PE 0 is gone, and so is the job. */
static void root_lost(int err, const char *when)
{
    pthread_mutex_lock(&cl.lock);
    bool expected = cl.closing;
    pthread_mutex_unlock(&cl.lock);
    if (expected)
        return;
    if (err == 0)
        ushmemi_error("PE 0 (the bootstrap's root, at %s) ended %s: the connection to it "
                      "closed; ending this PE", cl.where, when);
    else
        ushmemi_error("PE 0 (the bootstrap's root, at %s) ended %s: the connection to it "
                      "failed (%s); ending this PE", cl.where, when, strerror(err));
    _exit(1);
}

_Noreturn static void root_garbled(void)
{
    ushmemi_error("PE 0 at %s sent this PE something that is not a bootstrap message; ending "
                  "this PE", cl.where);
    _exit(1);
}

/* Reads everything the root sends between and during bootstrap calls. */
static void *reader_main(void *arg)
{
    (void)arg;
    for (;;) {
        uint8_t hdr[UID_HDR_LEN];
        if (ushmemi_uid_recv(cl.fd, hdr, sizeof(hdr), -1) != USHMEM_OK) {
            root_lost(errno, "without shmem_finalize");
            return NULL;
        }
        uint32_t type = ushmemi_uid_get32(hdr), len = ushmemi_uid_get32(hdr + 4);
        if (type == UID_MSG_RESULT && len >= 4) {
            uint8_t seqb[4];
            if (ushmemi_uid_recv(cl.fd, seqb, 4, -1) != USHMEM_OK) {
                root_lost(errno, "during an exchange");
                return NULL;
            }
            pthread_mutex_lock(&cl.lock);
            bool ok = cl.waiting && cl.outcome == 0 && cl.want_seq == ushmemi_uid_get32(seqb) &&
                      cl.want_len == len - 4;
            pthread_mutex_unlock(&cl.lock);
            if (!ok)
                root_garbled();
            if (ushmemi_uid_recv(cl.fd, cl.want_buf, len - 4, -1) != USHMEM_OK) {
                root_lost(errno, "during an exchange");
                return NULL;
            }
            pthread_mutex_lock(&cl.lock);
            cl.outcome = 1;
            pthread_cond_broadcast(&cl.cond);
            pthread_mutex_unlock(&cl.lock);
        } else if (type == UID_MSG_ABORT && len >= 8 && len - 8 <= UID_TEXT_MAX) {
            uint8_t body[UID_TEXT_MAX + 8];
            char text[UID_TEXT_MAX + 1];
            int code = 1, origin = -1;
            if (ushmemi_uid_recv(cl.fd, body, len, ushmemi_uid_now_ms() + CONTROL_MS) ==
                USHMEM_OK) {
                code = (int)ushmemi_uid_get32(body);
                origin = (int)ushmemi_uid_get32(body + 4);
                memcpy(text, body + 8, len - 8);
                text[len - 8] = '\0';
            } else {
                snprintf(text, sizeof(text), "PE 0 ended the job (its message was cut short)");
            }
            if (origin != cl.rank) /* the PE that ended the job said why itself */
                ushmemi_error("%s (exit code %d); ending this PE", text, code);
            _exit(code);
        } else if (type == UID_MSG_BYE && len == 0) {
            pthread_mutex_lock(&cl.lock);
            cl.root_gone = true;
            if (cl.waiting && cl.outcome == 0)
                cl.outcome = -1;
            pthread_cond_broadcast(&cl.cond);
            pthread_mutex_unlock(&cl.lock);
            return NULL;
        } else {
            root_garbled();
        }
    }
}

static ushmem_status_t uid_allgather(struct ushmemi_bootstrap *bs, const void *mine, void *all,
                                     size_t len)
{
    if (len > UID_GATHER_MAX || len * (size_t)bs->size > UINT32_MAX - 4) {
        ushmemi_error("bootstrap allgather of %zu bytes per PE is more than the unique-id "
                      "bootstrap carries", len);
        return USHMEM_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&cl.lock);
    if (cl.forked || cl.root_gone || !cl.reader_running) {
        pthread_mutex_unlock(&cl.lock);
        ushmemi_error("bootstrap allgather: PE 0 (at %s) has left the job: its bootstrap "
                      "finalized", cl.where);
        return USHMEM_ERR_BOOTSTRAP;
    }
    uint32_t seq = cl.next_seq++;
    cl.waiting = true;
    cl.want_seq = seq;
    cl.want_buf = all;
    cl.want_len = len * (size_t)bs->size;
    cl.outcome = 0;
    pthread_mutex_unlock(&cl.lock);

    uint8_t seqb[4];
    ushmemi_uid_put32(seqb, seq);
    pthread_mutex_lock(&cl.send_lock);
    ushmem_status_t status = ushmemi_uid_send_msg(cl.fd, UID_MSG_GATHER, seqb, sizeof(seqb), mine,
                                                  len, -1);
    int err = errno;
    pthread_mutex_unlock(&cl.send_lock);

    pthread_mutex_lock(&cl.lock);
    while (status == USHMEM_OK && cl.outcome == 0)
        pthread_cond_wait(&cl.cond, &cl.lock);
    int outcome = cl.outcome;
    cl.waiting = false;
    pthread_mutex_unlock(&cl.lock);
    if (status != USHMEM_OK) {
        ushmemi_error("bootstrap allgather: cannot send to PE 0 at %s: %s", cl.where,
                      ushmemi_uid_io_why(err));
        return USHMEM_ERR_BOOTSTRAP;
    }
    if (outcome < 0) {
        ushmemi_error("bootstrap allgather: PE 0 (at %s) left the job during the exchange",
                      cl.where);
        return USHMEM_ERR_BOOTSTRAP;
    }
    return USHMEM_OK;
}

static ushmem_status_t uid_barrier(struct ushmemi_bootstrap *bs)
{
    return uid_allgather(bs, NULL, NULL, 0);
}

static void uid_abort(struct ushmemi_bootstrap *bs, int code, const char *msg)
{
    (void)bs;
    if (cl.forked || cl.fd < 0)
        return;
    char text[UID_TEXT_MAX];
    snprintf(text, sizeof(text), "PE %d ended the job: %s", cl.rank, msg ? msg : "abort");
    uint8_t head[4];
    ushmemi_uid_put32(head, (uint32_t)code);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += CONTROL_MS / 1000;
    if (pthread_mutex_timedlock(&cl.send_lock, &until) != 0)
        return;
    ushmem_status_t status = ushmemi_uid_send_msg(cl.fd, UID_MSG_ABORT, head, sizeof(head), text,
                                                  strlen(text), ushmemi_uid_now_ms() + CONTROL_MS);
    pthread_mutex_unlock(&cl.send_lock);
    pthread_mutex_lock(&cl.lock);
    bool echo = status == USHMEM_OK && cl.reader_running && !cl.root_gone;
    pthread_mutex_unlock(&cl.lock);
    /* The root sends the abort to every PE, this one too, whose reader
     * thread then exits with the code: by then every PE has it. */
    int64_t end = ushmemi_uid_now_ms() + ABORT_WAIT_MS;
    while (echo && ushmemi_uid_now_ms() < end)
        usleep(10000);
}

static void uid_finalize(struct ushmemi_bootstrap *bs)
{
    (void)bs;
    if (cl.forked || cl.fd < 0)
        return;
    pthread_mutex_lock(&cl.lock);
    cl.closing = true;
    bool gone = cl.root_gone;
    pthread_mutex_unlock(&cl.lock);
    if (!gone) {
        pthread_mutex_lock(&cl.send_lock);
        (void)ushmemi_uid_send_msg(cl.fd, UID_MSG_BYE, NULL, 0, NULL, 0,
                                   ushmemi_uid_now_ms() + CONTROL_MS);
        pthread_mutex_unlock(&cl.send_lock);
    }
    shutdown(cl.fd, SHUT_RDWR); /* the reader sees the end */
    if (cl.reader_running)
        pthread_join(cl.reader, NULL);
    close(cl.fd);
    if (cl.server != NULL)
        ushmemi_uid_server_stop(cl.server);
    pthread_mutex_lock(&cl.lock);
    cl.fd = -1;
    cl.server = NULL;
    cl.reader_running = false;
    cl.closing = false;
    cl.root_gone = false;
    cl.waiting = false;
    cl.next_seq = 0;
    pthread_mutex_unlock(&cl.lock);
}

static const struct ushmemi_bootstrap_ops uid_ops = {
    .size = sizeof(struct ushmemi_bootstrap_ops),
    .name = "uid",
    .finalize = uid_finalize,
    .allgather = uid_allgather,
    .barrier = uid_barrier,
    .abort = uid_abort,
};

/* A child forked by a PE is not a PE: it drops its copies of the job's
 * sockets, so that the PE's death still closes them and its finalize in
 * the child (at exit) says no goodbye on the PE's behalf. */
static void forked_child(void)
{
    if (cl.fd < 0 && cl.server == NULL)
        return;
    cl.forked = true;
    /* A parent's thread may have held these at the fork. */
    pthread_mutex_init(&cl.lock, NULL);
    pthread_mutex_init(&cl.send_lock, NULL);
    pthread_cond_init(&cl.cond, NULL);
    if (cl.fd >= 0)
        close(cl.fd);
    cl.fd = -1;
    if (cl.server != NULL)
        ushmemi_uid_server_forget(cl.server);
    cl.reader_running = false;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, forked_child); }

bool ushmemi_bootstrap_uid_same(const struct ushmemi_bootstrap *bs, const void *uid)
{
    return bs->ops == &uid_ops && cl.fd >= 0 && ushmemi_uid_same_secret(uid, cl.secret);
}

ushmem_status_t ushmemi_bootstrap_uid_init(struct ushmemi_bootstrap *bs, const char *call,
                                           int rank, int npes, const void *uid)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    pthread_once(&atfork_once, register_atfork);

    if (cl.fd >= 0 && !cl.forked) {
        ushmemi_error("%s: PE %d: this process is in a unique-id job already", call, rank);
        return USHMEM_ERR_BUSY;
    }
    struct uid_info u;
    ushmem_status_t status = ushmemi_uid_check_args(call, rank, npes, uid, &u);
    int listen_fd = -1;
    if (status == USHMEM_OK)
        status = ushmemi_uid_claim_root(call, rank, &u, &listen_fd);
    if (status != USHMEM_OK)
        return status;

    ushmemi_uid_load_vars_quietly();
    int timeout_s = ushmemi_settings.bootstrap_timeout > 0 &&
                            ushmemi_settings.bootstrap_timeout <= USHMEMI_BOOTSTRAP_TIMEOUT_MAX
                        ? (int)ushmemi_settings.bootstrap_timeout
                        : 60; /* shmem_init reports a bad value once the job is up */
    ushmemi_node_simulate(-1); /* the real host: USHMEM_SIM_NODES applies later */
    uint64_t node = ushmemi_node_hash();
    if (cl.forked) { /* a child of a PE starts a job of its own */
        cl.forked = false;
        cl.server = NULL;
    }
    ushmemi_uid_addr_text(u.family, u.addr, u.port, cl.where, sizeof(cl.where));
    if (listen_fd < 0 && ushmemi_uid_is_loopback(&u) && u.root_node != 0 &&
        node != u.root_node) {
        char host[256];
        ushmemi_uid_host_name(host, sizeof(host));
        ushmemi_error("%s: PE %d runs on %s, but the unique id names %s, a loopback address of "
                      "PE 0's host %s: set USHMEM_BOOTSTRAP_UID_ADDR, where PE 0 makes the id, "
                      "to an address or interface of its host that the others reach",
                      call, rank, host, cl.where, u.root_host);
        return USHMEM_ERR_INVALID_PARAM;
    }

    if (listen_fd >= 0) {
        struct uid_server_args args = {.listen_fd = listen_fd, .npes = npes,
                                       .timeout_s = timeout_s, .uid = &u, .where = cl.where};
        status = ushmemi_uid_server_start(&args, &cl.server);
        if (status != USHMEM_OK)
            return status;
    }
    int fd = -1;
    uint8_t token[UID_TOKEN_LEN];
    uint64_t *nodes = NULL;
    status = join(&u, rank, npes, timeout_s, token, &nodes, &fd);
    if (status != USHMEM_OK)
        goto err_server;

    struct ushmemi_bootstrap mine = {.ops = &uid_ops, .rank = rank, .size = npes};
    status = place(&mine, nodes);
    free(nodes);
    if (status != USHMEM_OK) {
        ushmemi_error("%s: PE %d: out of memory", call, rank);
        goto err_close;
    }
    static const char hex[] = "0123456789abcdef";
    char *p = mine.job_id + snprintf(mine.job_id, sizeof(mine.job_id), "uid-");
    for (size_t i = 0; i < UID_TOKEN_LEN; i++) {
        *p++ = hex[token[i] >> 4];
        *p++ = hex[token[i] & 0xf];
    }
    *p = '\0';

    pthread_mutex_lock(&cl.lock);
    cl.fd = fd;
    cl.rank = rank;
    cl.npes = npes;
    memcpy(cl.secret, u.secret, UID_SECRET_LEN);
    cl.next_seq = 0;
    cl.closing = cl.root_gone = cl.waiting = false;
    pthread_mutex_unlock(&cl.lock);
    int rc = ushmemi_helper_thread_start(&cl.reader, reader_main, NULL, "ushmem-uid",
                                         mine.local_rank, mine.local_size);
    if (rc != 0) {
        ushmemi_error("%s: PE %d: cannot start the bootstrap's thread: %s", call, rank,
                      strerror(rc));
        status = USHMEM_ERR_IO;
        cl.fd = -1;
        goto err_close;
    }
    cl.reader_running = true;
    ushmemi_debug("%s: PE %d of %d through PE 0 at %s: local rank %d of %d, node %d, job %s",
                  call, rank, npes, cl.where, mine.local_rank, mine.local_size, mine.node_id,
                  mine.job_id);
    *bs = mine;
    return USHMEM_OK;

err_close:
    close(fd);
err_server:
    if (cl.server != NULL) {
        ushmemi_uid_server_stop(cl.server);
        cl.server = NULL;
    }
    return status;
}
