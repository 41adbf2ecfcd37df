/* The unique-id bootstrap's root: a server thread in the PE that made the id
 * (bootstrap_uid.h says what the star does), from that PE's
 * ushmemx_init_uniqueid until its bootstrap finalizes.
 *
 * The port is visible to every local user (ss -ltn), so the rendezvous
 * assumes strangers: the thread serves every connection at once with poll
 * and never waits on one peer; a connection must prove the secret within
 * PENDING_MS, and when PENDING_MAX unproven ones are held the oldest is
 * dropped for the newest (a PE whose connection was dropped connects
 * again). Once every PE joined the listening socket closes. From then on a
 * PE's connection that closes without a goodbye is a PE that died: the
 * root tells every PE to exit, so that no PE waits forever for it. */
#include "bootstrap_uid.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/threads.h"
#include "../device/node_id.h"

#define PENDING_MAX 64   /* unproven connections held at once */
#define PENDING_MS 5000  /* to prove the secret: a PE sends it as it connects */
#define CONTROL_MS 2000  /* to take a small message (welcome, failure, abort, goodbye) */
#define ABORT_GRACE_MS 1000 /* for this process's own PE to print its line before _exit */

struct conn {
    /* -1 when closed; cleared before the close, so that a child forked
     * meanwhile never closes a number the parent has reused. */
    atomic_int fd;
    int64_t deadline; /* an unproven connection is dropped then */
    uint8_t hdr[UID_HDR_LEN];
    size_t hdr_got;
    uint32_t type, len;
    uint8_t *body; /* set once the header is in */
    size_t body_got;
    char from[64];
};

struct member {
    struct conn c;
    bool joined, bye;
    uint32_t pid;
    uint64_t node;
    char host[UID_HOST_LEN + 1];
    uint8_t *part; /* the message holding its part of the current exchange */
};

struct uid_server {
    int npes, timeout_s;
    uint8_t secret[UID_SECRET_LEN];
    uint8_t token[UID_TOKEN_LEN];
    uint64_t node;
    char where[80];
    atomic_int listen_fd;
    int wake[2]; /* stop: a byte written to wake[1] */
    struct conn pending[PENDING_MAX];
    struct member *members; /* by rank */
    struct pollfd *pfds;
    int *who; /* for each pfds entry: WHO_* or a pending slot or PENDING_MAX + rank */
    int joined;
    bool started;
    atomic_bool failed;
    bool stranger_logged;
    int64_t deadline; /* of the rendezvous */
    uint32_t seq;     /* the exchange under way */
    int gathered;
    size_t part_len;
    pthread_t thread;
};

enum { WHO_WAKE = -1, WHO_LISTEN = -2 };

static void conn_reset_message(struct conn *c)
{
    free(c->body);
    c->body = NULL;
    c->hdr_got = 0;
    c->body_got = 0;
}

static void conn_close(struct conn *c)
{
    int fd = atomic_exchange(&c->fd, -1);
    if (fd >= 0)
        close(fd);
    conn_reset_message(c);
}

static bool header_ok(bool member, uint32_t type, uint32_t len)
{
    if (!member)
        return type == UID_MSG_HELLO && len == UID_HELLO_LEN;
    switch (type) {
    case UID_MSG_GATHER: return len >= 4 && len - 4 <= UID_GATHER_MAX;
    case UID_MSG_ABORT: return len >= 4 && len - 4 <= UID_TEXT_MAX;
    case UID_MSG_BYE: return len == 0;
    default: return false;
    }
}

/* Reads what has arrived without waiting: 1 when a whole message is in
 * (type, len, body), 0 when more must come, -1 when the connection closed
 * or failed (errno; 0 for a close), -2 when the header is not a message
 * this side takes. */
/* Reads what has come of buf[*got .. len) without blocking: 1 once it is
 * all there, 0 when the rest has not come yet, -1 when the connection
 * closed (errno 0) or failed (errno). */
static int read_some(int fd, uint8_t *buf, size_t *got, size_t len)
{
    while (*got < len) {
        ssize_t n = recv(fd, buf + *got, len - *got, 0);
        if (n > 0) {
            *got += (size_t)n;
            continue;
        }
        if (n == 0)
            errno = 0;
        else if (errno == EINTR)
            continue;
        else if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
    return 1;
}

static int conn_read(struct conn *c, bool member)
{
    int fd = atomic_load(&c->fd);
    int r = read_some(fd, c->hdr, &c->hdr_got, UID_HDR_LEN);
    if (r <= 0)
        return r;
    if (c->body == NULL) {
        c->type = ushmemi_uid_get32(c->hdr);
        c->len = ushmemi_uid_get32(c->hdr + 4);
        if (!header_ok(member, c->type, c->len))
            return -2;
        c->body = malloc(c->len > 0 ? c->len : 1);
        if (c->body == NULL) {
            errno = ENOMEM;
            return -1;
        }
    }
    return read_some(fd, c->body, &c->body_got, c->len);
}

/* A connection that did not prove the secret: dropped, said once at warn
 * level (someone knows the port), then at debug level. */
static void refuse(struct uid_server *s, struct conn *c, const char *why)
{
    if (!s->stranger_logged)
        ushmemi_warn("%s: refused a connection from %s to the bootstrap's port %s: it %s "
                     "(further refusals are logged at debug level)",
                     UID_CALL_INIT, c->from, s->where, why);
    else
        ushmemi_debug("%s: refused a connection from %s: it %s", UID_CALL_INIT, c->from, why);
    s->stranger_logged = true;
    conn_close(c);
}

static void close_listener(struct uid_server *s)
{
    int fd = atomic_exchange(&s->listen_fd, -1);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < PENDING_MAX; i++)
        conn_close(&s->pending[i]);
}

/* The rendezvous failed: said once here, sent to every PE that joined (and
 * to `also`, a PE whose hello caused it), then everything is closed. */
static void fail_rendezvous(struct uid_server *s, struct conn *also, const char *text)
{
    ushmemi_error("%s: %s", UID_CALL_INIT, text);
    atomic_store(&s->failed, true);
    int64_t deadline = ushmemi_uid_now_ms() + CONTROL_MS;
    if (also != NULL) {
        int fd = atomic_load(&also->fd);
        (void)ushmemi_uid_send_msg(fd, UID_MSG_FAIL, text, strlen(text), NULL, 0, deadline);
    }
    for (int r = 0; r < s->npes; r++) {
        int fd = atomic_load(&s->members[r].c.fd);
        if (fd >= 0)
            (void)ushmemi_uid_send_msg(fd, UID_MSG_FAIL, text, strlen(text), NULL, 0, deadline);
        conn_close(&s->members[r].c);
    }
    close_listener(s);
}

/* Ends the job: every PE still connected is told to exit with `code`, this
 * process's own PE (rank 0) last, since it ends the process. */
_Noreturn static void abort_job(struct uid_server *s, int code, int origin, const char *text)
{
    uint8_t head[8];
    ushmemi_uid_put32(head, (uint32_t)code);
    ushmemi_uid_put32(head + 4, (uint32_t)origin);
    size_t len = strnlen(text, UID_TEXT_MAX);
    int64_t deadline = ushmemi_uid_now_ms() + CONTROL_MS;
    for (int i = 1; i <= s->npes; i++) {
        int r = i % s->npes;
        struct member *m = &s->members[r];
        int fd = atomic_load(&m->c.fd);
        if (fd >= 0 && !m->bye)
            (void)ushmemi_uid_send_msg(fd, UID_MSG_ABORT, head, sizeof(head), text, len,
                                       deadline);
    }
    /* This process's PE prints its line and exits with the code itself;
     * the wait covers a PE 0 that is no longer connected. */
    int64_t until = ushmemi_uid_now_ms() + ABORT_GRACE_MS;
    while (ushmemi_uid_now_ms() < until)
        usleep(10000);
    _exit(code);
}

static void describe(const struct member *m, int rank, char *buf, size_t len)
{
    snprintf(buf, len, "PE %d (pid %u on %s)", rank, (unsigned)m->pid, m->host);
}

/* Every PE joined: the listening socket closes and each PE gets the job. */
static void start_job(struct uid_server *s)
{
    close_listener(s);
    size_t len = 4 + UID_TOKEN_LEN + 8 * (size_t)s->npes;
    uint8_t *welcome = malloc(len);
    if (welcome == NULL) {
        fail_rendezvous(s, NULL, "out of memory for the job's welcome");
        return;
    }
    ushmemi_uid_put32(welcome, (uint32_t)s->npes);
    memcpy(welcome + 4, s->token, UID_TOKEN_LEN);
    for (int r = 0; r < s->npes; r++)
        ushmemi_uid_put64(welcome + 4 + UID_TOKEN_LEN + 8 * (size_t)r, s->members[r].node);
    s->started = true;
    int dead = -1;
    int64_t deadline = ushmemi_uid_now_ms() + CONTROL_MS;
    for (int r = 0; r < s->npes; r++) {
        int fd = atomic_load(&s->members[r].c.fd);
        if (ushmemi_uid_send_msg(fd, UID_MSG_WELCOME, welcome, len, NULL, 0, deadline) !=
                USHMEM_OK &&
            dead < 0)
            dead = r;
    }
    free(welcome);
    ushmemi_debug("%s: all %d PEs joined; the job starts", UID_CALL_INIT, s->npes);
    if (dead >= 0) {
        char who[UID_HOST_LEN + 64], text[UID_TEXT_MAX];
        describe(&s->members[dead], dead, who, sizeof(who));
        snprintf(text, sizeof(text), "%s ended as the job started: its connection to PE 0 "
                 "failed", who);
        abort_job(s, 1, dead, text);
    }
}

/* A connection's hello is in: a PE of the job joins, or the rendezvous
 * fails with a reason that every PE hears, or a stranger is dropped. */
static void hello(struct uid_server *s, int slot)
{
    struct conn *c = &s->pending[slot];
    const uint8_t *b = c->body;
    if (!ushmemi_uid_secret_equal(b, s->secret)) {
        refuse(s, c, "gave a wrong secret");
        return;
    }
    int rank = (int)ushmemi_uid_get32(b + UID_SECRET_LEN);
    int npes = (int)ushmemi_uid_get32(b + UID_SECRET_LEN + 4);
    uint32_t pid = ushmemi_uid_get32(b + UID_SECRET_LEN + 8);
    uint64_t node = ushmemi_uid_get64(b + UID_SECRET_LEN + 12);
    char host[UID_HOST_LEN + 1];
    memcpy(host, b + UID_SECRET_LEN + 20, UID_HOST_LEN);
    host[UID_HOST_LEN] = '\0';

    char text[UID_TEXT_MAX];
    if (npes != s->npes) {
        snprintf(text, sizeof(text), "PE %d (pid %u on %s) passed npes %d, but PE 0 passed %d: "
                 "every PE must pass the same number of PEs", rank, (unsigned)pid, host, npes,
                 s->npes);
        fail_rendezvous(s, c, text);
        return;
    }
    if (rank < 0 || rank >= s->npes) {
        snprintf(text, sizeof(text), "a PE (pid %u on %s) passed rank %d, outside 0 to %d",
                 (unsigned)pid, host, rank, s->npes - 1);
        fail_rendezvous(s, c, text);
        return;
    }
    struct member *m = &s->members[rank];
    if (m->joined) {
        snprintf(text, sizeof(text), "two processes passed rank %d: pid %u on %s and pid %u "
                 "on %s", rank, (unsigned)m->pid, m->host, (unsigned)pid, host);
        fail_rendezvous(s, c, text);
        return;
    }
    if (rank == 0 && (pid != (uint32_t)getpid() || node != s->node)) {
        snprintf(text, sizeof(text), "pid %u on %s passed rank 0, but rank 0 is the process "
                 "that made the unique id with ushmemx_get_uniqueid (pid %u)", (unsigned)pid,
                 host, (unsigned)getpid());
        fail_rendezvous(s, c, text);
        return;
    }
    m->joined = true;
    m->pid = pid;
    m->node = node;
    memcpy(m->host, host, sizeof(host));
    memcpy(m->c.from, c->from, sizeof(c->from));
    conn_reset_message(c);
    atomic_store(&m->c.fd, atomic_exchange(&c->fd, -1));
    s->joined++;
    ushmemi_debug("%s: PE %d (pid %u on %s, from %s) joined: %d of %d", UID_CALL_INIT, rank,
                  (unsigned)pid, host, m->c.from, s->joined, s->npes);
    if (s->joined == s->npes)
        start_job(s);
}

static void pending_ready(struct uid_server *s, int slot);

/* Accepts what waits (a bounded number, so that the members are served
 * too), reading each connection at once: a PE sends its hello as it
 * connects, so it is judged before a flood can push it out. */
static void accept_all(struct uid_server *s, int64_t now)
{
    for (int taken = 0; taken < 4 * PENDING_MAX; taken++) {
        int lfd = atomic_load(&s->listen_fd);
        if (lfd < 0 || atomic_load(&s->failed))
            return;
        struct sockaddr_storage sa;
        socklen_t salen = sizeof(sa);
        int fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                ushmemi_debug("%s: accept on %s: %s", UID_CALL_INIT, s->where, strerror(errno));
            return;
        }
        int slot = -1;
        for (int i = 0; i < PENDING_MAX && slot < 0; i++)
            if (atomic_load(&s->pending[i].fd) < 0)
                slot = i;
        if (slot < 0) {
            /* Full: the oldest goes. A stranger who floods the port drops
             * its own connections; a PE's hello arrives with its connection. */
            slot = 0;
            for (int i = 1; i < PENDING_MAX; i++)
                if (s->pending[i].deadline < s->pending[slot].deadline)
                    slot = i;
            ushmemi_debug("%s: %d unproven connections held; dropping the oldest, from %s",
                          UID_CALL_INIT, PENDING_MAX, s->pending[slot].from);
            conn_close(&s->pending[slot]);
        }
        struct conn *c = &s->pending[slot];
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->deadline = now + PENDING_MS;
        if (sa.ss_family == AF_INET6)
            ushmemi_uid_addr_text(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr,
                                  ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), c->from,
                                  sizeof(c->from));
        else
            ushmemi_uid_addr_text(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr,
                                  ntohs(((struct sockaddr_in *)&sa)->sin_port), c->from,
                                  sizeof(c->from));
        conn_reset_message(c);
        atomic_store(&c->fd, fd);
        pending_ready(s, slot);
    }
}

static void pending_ready(struct uid_server *s, int slot)
{
    struct conn *c = &s->pending[slot];
    int r = conn_read(c, false);
    if (r == 0)
        return;
    if (r == -2) {
        refuse(s, c, "sent bytes that are not a bootstrap hello");
        return;
    }
    if (r < 0) {
        refuse(s, c, errno == 0 ? "closed before proving it knows the id's secret"
                                : "failed before proving it knows the id's secret");
        return;
    }
    hello(s, slot);
}

/* An exchange is complete: every PE gets every part, in rank order. */
static void deliver(struct uid_server *s)
{
    size_t total = s->part_len * (size_t)s->npes;
    char text[UID_TEXT_MAX];
    if (s->part_len > (UINT32_MAX - 4) / (size_t)s->npes) {
        snprintf(text, sizeof(text), "exchange %u of %zu bytes per PE is too large for the "
                 "bootstrap", (unsigned)s->seq, s->part_len);
        abort_job(s, 1, 0, text);
    }
    uint8_t *msg = malloc(UID_HDR_LEN + 4 + total);
    if (msg == NULL) {
        snprintf(text, sizeof(text), "PE 0 is out of memory for exchange %u (%zu bytes)",
                 (unsigned)s->seq, total);
        abort_job(s, 1, 0, text);
    }
    ushmemi_uid_put32(msg, UID_MSG_RESULT);
    ushmemi_uid_put32(msg + 4, (uint32_t)(4 + total));
    ushmemi_uid_put32(msg + 8, s->seq);
    for (int r = 0; r < s->npes; r++) {
        if (s->part_len > 0)
            memcpy(msg + UID_HDR_LEN + 4 + (size_t)r * s->part_len, s->members[r].part + 4,
                   s->part_len);
        free(s->members[r].part);
        s->members[r].part = NULL;
    }
    s->gathered = 0;
    s->seq++;
    for (int r = 0; r < s->npes; r++) {
        struct member *m = &s->members[r];
        int fd = atomic_load(&m->c.fd);
        /* No deadline: a PE's own thread always reads, and one stopped in a
         * debugger holds up an exchange that its peers wait for anyway. */
        if (fd >= 0 && ushmemi_uid_send(fd, msg, UID_HDR_LEN + 4 + total, -1) != USHMEM_OK) {
            char who[UID_HOST_LEN + 64];
            describe(m, r, who, sizeof(who));
            snprintf(text, sizeof(text), "%s ended without shmem_finalize: its connection to "
                     "PE 0 failed (%s)", who, ushmemi_uid_io_why(errno));
            free(msg);
            abort_job(s, 1, r, text);
        }
    }
    free(msg);
}

/* A whole message from the member of `rank`; it is consumed here. */
static void member_message(struct uid_server *s, int rank)
{
    struct member *m = &s->members[rank];
    struct conn *c = &m->c;
    char text[UID_TEXT_MAX];
    if (!s->started) {
        snprintf(text, sizeof(text), "PE %d sent a message before the job started", rank);
        fail_rendezvous(s, NULL, text);
        return;
    }
    if (c->type == UID_MSG_ABORT) {
        int code = (int)ushmemi_uid_get32(c->body);
        size_t n = c->len - 4 < sizeof(text) - 1 ? c->len - 4 : sizeof(text) - 1;
        memcpy(text, c->body + 4, n);
        text[n] = '\0';
        abort_job(s, code, rank, text);
    }
    if (c->type == UID_MSG_BYE) {
        m->bye = true;
        conn_close(c);
        if (s->gathered > 0 && m->part == NULL) {
            snprintf(text, sizeof(text), "PE %d left the job (its bootstrap finalized) while "
                     "the others were in exchange %u", rank, (unsigned)s->seq);
            abort_job(s, 1, rank, text);
        }
        return;
    }
    /* UID_MSG_GATHER */
    uint32_t seq = ushmemi_uid_get32(c->body);
    size_t len = c->len - 4;
    if (seq != s->seq || m->part != NULL) {
        snprintf(text, sizeof(text), "PE %d sent exchange %u while the job is at exchange %u: "
                 "the PEs called the bootstrap's collectives in different orders", rank,
                 (unsigned)seq, (unsigned)s->seq);
        abort_job(s, 1, rank, text);
    }
    if (s->gathered > 0 && len != s->part_len) {
        snprintf(text, sizeof(text), "exchange %u: PE %d gave %zu bytes, but the PEs before it "
                 "gave %zu", (unsigned)seq, rank, len, s->part_len);
        abort_job(s, 1, rank, text);
    }
    for (int r = 0; r < s->npes; r++) {
        if (s->members[r].bye) {
            snprintf(text, sizeof(text), "exchange %u cannot complete: PE %d has left the job "
                     "(its bootstrap finalized)", (unsigned)seq, r);
            abort_job(s, 1, r, text);
        }
    }
    s->part_len = len;
    m->part = c->body; /* kept until delivered */
    c->body = NULL;
    conn_reset_message(c);
    if (++s->gathered == s->npes)
        deliver(s);
}

static void member_ready(struct uid_server *s, int rank)
{
    struct member *m = &s->members[rank];
    for (;;) {
        if (atomic_load(&m->c.fd) < 0)
            return;
        int r = conn_read(&m->c, true);
        if (r == 0)
            return;
        char who[UID_HOST_LEN + 64], text[UID_TEXT_MAX];
        describe(m, rank, who, sizeof(who));
        if (r == -2) {
            snprintf(text, sizeof(text), "%s sent PE 0 something that is not a bootstrap "
                     "message", who);
            abort_job(s, 1, rank, text);
        }
        if (r < 0) {
            char how[128] = "closed";
            if (errno != 0)
                snprintf(how, sizeof(how), "failed (%s)", strerror(errno));
            if (!s->started) {
                snprintf(text, sizeof(text), "%s left before the job started: its connection "
                         "to PE 0 %s", who, how);
                fail_rendezvous(s, NULL, text);
                return;
            }
            snprintf(text, sizeof(text), "%s ended without shmem_finalize: its connection to "
                     "PE 0 %s", who, how);
            abort_job(s, 1, rank, text);
        }
        member_message(s, rank);
        if (atomic_load(&s->failed))
            return;
        conn_reset_message(&m->c);
    }
}

static void timed_out(struct uid_server *s)
{
    char missing[256] = "";
    size_t used = 0;
    int shown = 0, absent = s->npes - s->joined;
    for (int r = 0; r < s->npes && used + 24 < sizeof(missing); r++) {
        if (s->members[r].joined)
            continue;
        if (shown == 8) {
            used += (size_t)snprintf(missing + used, sizeof(missing) - used, " and %d more",
                                     absent - shown);
            break;
        }
        used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%d",
                                 shown > 0 ? ", " : "", r);
        shown++;
    }
    char text[UID_TEXT_MAX];
    snprintf(text, sizeof(text), "PE 0 waited %d s (USHMEM_BOOTSTRAP_TIMEOUT) at %s for the "
             "job's %d PEs, but only %d joined: %s %s never came", s->timeout_s, s->where,
             s->npes, s->joined, absent == 1 ? "PE" : "PEs", missing);
    fail_rendezvous(s, NULL, text);
}

static void say_goodbye(struct uid_server *s)
{
    int64_t deadline = ushmemi_uid_now_ms() + CONTROL_MS;
    for (int r = 0; r < s->npes; r++) {
        struct member *m = &s->members[r];
        int fd = atomic_load(&m->c.fd);
        if (fd >= 0 && !m->bye)
            (void)ushmemi_uid_send_msg(fd, UID_MSG_BYE, NULL, 0, NULL, 0, deadline);
        conn_close(&m->c);
    }
    close_listener(s);
}

static void *server_main(void *arg)
{
    struct uid_server *s = arg;
    for (;;) {
        int n = 0;
        s->pfds[n] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
        s->who[n++] = WHO_WAKE;
        int lfd = atomic_load(&s->listen_fd);
        if (lfd >= 0) {
            s->pfds[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
            s->who[n++] = WHO_LISTEN;
        }
        int64_t wake_at = s->started ? -1 : s->deadline;
        for (int i = 0; i < PENDING_MAX; i++) {
            int fd = atomic_load(&s->pending[i].fd);
            if (fd < 0)
                continue;
            s->pfds[n] = (struct pollfd){.fd = fd, .events = POLLIN};
            s->who[n++] = i;
            if (wake_at < 0 || s->pending[i].deadline < wake_at)
                wake_at = s->pending[i].deadline;
        }
        for (int r = 0; r < s->npes; r++) {
            int fd = atomic_load(&s->members[r].c.fd);
            if (fd < 0)
                continue;
            s->pfds[n] = (struct pollfd){.fd = fd, .events = POLLIN};
            s->who[n++] = PENDING_MAX + r;
        }
        int timeout = -1;
        if (wake_at >= 0) {
            int64_t left = wake_at - ushmemi_uid_now_ms();
            timeout = left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
        }
        int got = poll(s->pfds, (nfds_t)n, timeout);
        if (got < 0 && errno != EINTR) {
            char text[UID_TEXT_MAX];
            snprintf(text, sizeof(text), "PE 0's bootstrap server cannot poll: %s",
                     strerror(errno));
            if (!s->started) {
                fail_rendezvous(s, NULL, text);
                return NULL;
            }
            abort_job(s, 1, 0, text);
        }
        int64_t now = ushmemi_uid_now_ms();
        for (int k = 0; k < n && got > 0; k++) {
            if (s->pfds[k].revents == 0)
                continue;
            int who = s->who[k];
            if (who == WHO_WAKE) {
                say_goodbye(s);
                return NULL;
            }
            if (who == WHO_LISTEN) {
                accept_all(s, now);
            } else if (who < PENDING_MAX) {
                if (atomic_load(&s->pending[who].fd) == s->pfds[k].fd)
                    pending_ready(s, who);
            } else if (atomic_load(&s->members[who - PENDING_MAX].c.fd) == s->pfds[k].fd) {
                member_ready(s, who - PENDING_MAX);
            }
            if (atomic_load(&s->failed))
                return NULL;
        }
        for (int i = 0; i < PENDING_MAX; i++)
            if (atomic_load(&s->pending[i].fd) >= 0 && s->pending[i].deadline <= now)
                refuse(s, &s->pending[i], "did not prove it knows the id's secret in time");
        if (!s->started && now >= s->deadline) {
            timed_out(s);
            return NULL;
        }
    }
}

static void server_free(struct uid_server *s)
{
    close_listener(s);
    for (int r = 0; r < s->npes; r++) {
        conn_close(&s->members[r].c);
        free(s->members[r].part);
    }
    if (s->wake[0] >= 0)
        close(s->wake[0]);
    if (s->wake[1] >= 0)
        close(s->wake[1]);
    free(s->members);
    free(s->pfds);
    free(s->who);
    free(s);
}

ushmem_status_t ushmemi_uid_server_start(const struct uid_server_args *args,
                                         struct uid_server **server_p)
{
    ushmem_status_t status = USHMEM_ERR_NO_MEMORY;
    struct uid_server *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        ushmemi_error("%s: out of memory for the bootstrap server", UID_CALL_INIT);
        close(args->listen_fd);
        return USHMEM_ERR_NO_MEMORY;
    }
    s->wake[0] = s->wake[1] = -1;
    atomic_init(&s->listen_fd, args->listen_fd);
    atomic_init(&s->failed, false);
    for (int i = 0; i < PENDING_MAX; i++)
        atomic_init(&s->pending[i].fd, -1);
    s->npes = args->npes;
    s->timeout_s = args->timeout_s;
    memcpy(s->secret, args->uid->secret, UID_SECRET_LEN);
    s->node = ushmemi_node_hash();
    snprintf(s->where, sizeof(s->where), "%s", args->where);
    s->members = calloc((size_t)s->npes, sizeof(*s->members));
    size_t slots = 2 + PENDING_MAX + (size_t)s->npes;
    s->pfds = calloc(slots, sizeof(*s->pfds));
    s->who = calloc(slots, sizeof(*s->who));
    if (s->members == NULL || s->pfds == NULL || s->who == NULL) {
        ushmemi_error("%s: out of memory for the bootstrap server of %d PEs", UID_CALL_INIT,
                      s->npes);
        goto err_free;
    }
    for (int r = 0; r < s->npes; r++)
        atomic_init(&s->members[r].c.fd, -1);
    /* The job token names the job (job_id); it is drawn afresh, never
     * derived from the secret, which must not leak through it. */
    status = ushmemi_uid_random(s->token, sizeof(s->token), UID_CALL_INIT);
    if (status != USHMEM_OK)
        goto err_free;
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        ushmemi_error("%s: pipe for the bootstrap server: %s", UID_CALL_INIT, strerror(errno));
        status = USHMEM_ERR_IO;
        goto err_free;
    }
    s->deadline = ushmemi_uid_now_ms() + (int64_t)s->timeout_s * 1000;
    int rc = ushmemi_helper_thread_start(&s->thread, server_main, s, "ushmem-uid-root", 0, 1);
    if (rc != 0) {
        ushmemi_error("%s: cannot start the bootstrap server thread: %s", UID_CALL_INIT,
                      strerror(rc));
        status = USHMEM_ERR_IO;
        goto err_free;
    }
    *server_p = s;
    return USHMEM_OK;

err_free:
    server_free(s);
    return status;
}

bool ushmemi_uid_server_failed(const struct uid_server *s) { return atomic_load(&s->failed); }

void ushmemi_uid_server_stop(struct uid_server *s)
{
    char byte = 0;
    ssize_t rc;
    do
        rc = write(s->wake[1], &byte, 1);
    while (rc < 0 && errno == EINTR);
    pthread_join(s->thread, NULL);
    server_free(s);
}

void ushmemi_uid_server_forget(struct uid_server *s)
{
    int fd = atomic_exchange(&s->listen_fd, -1);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < PENDING_MAX; i++) {
        fd = atomic_exchange(&s->pending[i].fd, -1);
        if (fd >= 0)
            close(fd);
    }
    for (int r = 0; r < s->npes; r++) {
        fd = atomic_exchange(&s->members[r].c.fd, -1);
        if (fd >= 0)
            close(fd);
    }
}
