/* The fabric's own floor: what libfabric takes for one 8-byte message
 * between two PEs, back to back and after a quiet spell, with nothing of
 * ushmem in the path. Landing (USHMEM_FABRIC_STAGING=1) carries every
 * request as such messages, a request and its reply, so its figures are
 * read against these, measured in the same run.
 *
 * ushmem only starts the job and trades the two endpoints' addresses;
 * each PE then opens an endpoint of its own (reliable datagrams, the
 * provider FI_PROVIDER names, default libfabric's choice; from the
 * loopback address where the provider takes one, so both PEs on one
 * host, as landing's own figures are taken) and PE 0 sends
 * 8 bytes to PE 1, which sends them back, both polling their completion
 * queues. Rows, microseconds one way (half a round trip):
 *   back to back     ITERS round trips after a warm-up, the mean;
 *   after T us       one round trip after PE 0 spun on the clock T us
 *                    (PE 1 polling meanwhile), the median of REPS, with
 *                    the lowest and the highest;
 *   after T us, warm K  the same with a round trip every K us meanwhile
 *                    (--warm-us K): whether traffic keeps the path warm.
 *
 * Usage: oshrun -n 2 fabric_floor [--iters N] [--idle-us LIST] [--reps R]
 *                                 [--warm-us K]
 * (defaults 5000; 1000,10000,100000; 15; 0: none). */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ADDR_MAX 256
#define MAX_IDLE 16
#define MAX_REPS 101

struct fab {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *mr;
    void *desc;
    fi_addr_t peer;
    char buf[2][8]; /* [0] sent, [1] received */
    struct fi_context ctx[2];
    int done[2]; /* completions of ctx[i] read and not yet waited for */
};

static int me;

static void die(const char *what, int rc)
{
    fprintf(stderr, "fabric_floor: PE %d: %s failed: %s\n", me, what, fi_strerror(-rc));
    shmem_global_exit(1);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An endpoint of reliable datagrams with sends and receives; on one host,
 * from the loopback address where the provider takes one (as ushmem's
 * transport does), else from the provider's default. */
static void open_fabric(struct fab *f)
{
    struct fi_info *hints = fi_allocinfo();
    if (hints == NULL)
        die("fi_allocinfo", -FI_ENOMEM);
    hints->caps = FI_MSG;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    int rc = fi_getinfo(FI_VERSION(1, 9), "127.0.0.1", NULL, FI_SOURCE, hints, &f->info);
    if (rc != 0)
        rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &f->info);
    fi_freeinfo(hints);
    if (rc != 0)
        die("fi_getinfo (reliable datagrams with sends)", rc);
    if ((rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)) != 0)
        die("fi_fabric", rc);
    if ((rc = fi_domain(f->fabric, f->info, &f->domain, NULL)) != 0)
        die("fi_domain", rc);
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 64};
    if ((rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)) != 0)
        die("fi_cq_open", rc);
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = 2};
    if ((rc = fi_av_open(f->domain, &av_attr, &f->av, NULL)) != 0)
        die("fi_av_open", rc);
    if ((rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)) != 0)
        die("fi_endpoint", rc);
    if ((rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) != 0)
        die("fi_ep_bind (queue)", rc);
    if ((rc = fi_ep_bind(f->ep, &f->av->fid, 0)) != 0)
        die("fi_ep_bind (addresses)", rc);
    if ((rc = fi_enable(f->ep)) != 0)
        die("fi_enable", rc);
    if ((rc = fi_mr_reg(f->domain, f->buf, sizeof(f->buf), FI_SEND | FI_RECV, 0, 0, 0, &f->mr,
                        NULL)) != 0)
        die("fi_mr_reg", rc);
    f->desc = fi_mr_desc(f->mr);
}

static void close_fabric(struct fab *f)
{
    fi_close(&f->mr->fid);
    fi_close(&f->ep->fid);
    fi_close(&f->av->fid);
    fi_close(&f->cq->fid);
    fi_close(&f->domain->fid);
    fi_close(&f->fabric->fid);
    fi_freeinfo(f->info);
}

/* Polls the queue until operation i (0 the send, 1 the receive) has
 * completed; completions of the other are kept for their own wait. */
static void wait_for(struct fab *f, int i)
{
    while (f->done[i] == 0) {
        struct fi_cq_entry e[4];
        ssize_t n = fi_cq_read(f->cq, e, 4);
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof(err));
            fi_cq_readerr(f->cq, &err, 0);
            die("a message (completion error)", -err.err);
        }
        if (n < 0 && n != -FI_EAGAIN)
            die("fi_cq_read", (int)n);
        for (ssize_t k = 0; k < n; k++)
            f->done[e[k].op_context == &f->ctx[0] ? 0 : 1]++;
    }
    f->done[i]--;
}

static void post_recv(struct fab *f)
{
    ssize_t rc;
    while ((rc = fi_recv(f->ep, f->buf[1], 8, f->desc, f->peer, &f->ctx[1])) == -FI_EAGAIN)
        fi_cq_read(f->cq, NULL, 0);
    if (rc != 0)
        die("fi_recv", (int)rc);
}

static void send_one(struct fab *f)
{
    ssize_t rc;
    while ((rc = fi_send(f->ep, f->buf[0], 8, f->desc, f->peer, &f->ctx[0])) == -FI_EAGAIN)
        fi_cq_read(f->cq, NULL, 0);
    if (rc != 0)
        die("fi_send", (int)rc);
}

/* PE 0: one round trip, 8 bytes there and back; a first byte of 1 tells
 * PE 1 to stop instead of answering. The next receive is posted before the
 * message that provokes it can leave. */
static void round_trip(struct fab *f, char stop)
{
    f->buf[0][0] = stop;
    send_one(f);
    wait_for(f, 0);
    if (stop)
        return;
    wait_for(f, 1);
    post_recv(f);
}

/* PE 1: answers every message until told to stop. */
static void answer_all(struct fab *f)
{
    for (;;) {
        wait_for(f, 1);
        char stop = f->buf[1][0];
        post_recv(f);
        if (stop != 0)
            return;
        f->buf[0][0] = 0;
        send_one(f);
        wait_for(f, 0);
    }
}

/* PE 0 keeps busy for us microseconds, spinning on the clock; with warm_us
 * above 0, one round trip every warm_us meanwhile. */
static void quiet_spell(struct fab *f, long us, long warm_us)
{
    double start = now_s(), until = start + (double)us * 1e-6, next = start + (double)warm_us * 1e-6;
    while (now_s() < until) {
        if (warm_us > 0 && now_s() >= next) {
            round_trip(f, 0);
            next += (double)warm_us * 1e-6;
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    if (me != 0)
        return;
    fprintf(stderr, "usage: oshrun -n 2 fabric_floor [--iters N] [--idle-us LIST] [--reps R] "
                    "[--warm-us K]\n");
}

int main(int argc, char **argv)
{
    long iters = 5000, reps = 15, warm_us = 0, idle[MAX_IDLE] = {1000, 10000, 100000};
    int nidle = 3;
    static char addrs[2][ADDR_MAX];

    shmem_init();
    me = shmem_my_pe();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atol(argv[++i]);
        } else if (strcmp(argv[i], "--warm-us") == 0 && i + 1 < argc) {
            warm_us = atol(argv[++i]);
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atol(argv[++i]);
        } else if (strcmp(argv[i], "--idle-us") == 0 && i + 1 < argc) {
            char *p = argv[++i];
            for (nidle = 0; *p != '\0' && nidle < MAX_IDLE; nidle++) {
                char *end;
                idle[nidle] = strtol(p, &end, 10);
                if (end == p || idle[nidle] < 0)
                    break;
                p = *end == ',' ? end + 1 : end;
            }
            if (*p != '\0') {
                usage();
                shmem_finalize();
                return 2;
            }
        } else {
            usage();
            shmem_finalize();
            return 2;
        }
    }
    if (shmem_n_pes() != 2 || iters < 1 || reps < 1 || reps > MAX_REPS || warm_us < 0) {
        if (me == 0) {
            fprintf(stderr, "fabric_floor: needs 2 PEs (has %d), --iters of 1 or more, --reps "
                            "from 1 to %d and --warm-us of 0 or more\n", shmem_n_pes(), MAX_REPS);
            usage();
        }
        shmem_finalize();
        return 2;
    }

    struct fab f;
    memset(&f, 0, sizeof(f));
    open_fabric(&f);
    size_t len = ADDR_MAX;
    int rc = fi_getname(&f.ep->fid, addrs[me], &len);
    if (rc != 0)
        die("fi_getname", rc);
    shmem_barrier_all();
    shmem_putmem(addrs[me], addrs[me], ADDR_MAX, 1 - me);
    shmem_barrier_all();
    if (fi_av_insert(f.av, addrs[1 - me], 1, &f.peer, 0, NULL) != 1)
        die("fi_av_insert", -FI_EINVAL);
    post_recv(&f);
    shmem_barrier_all();

    if (me == 1) {
        answer_all(&f);
        shmem_barrier_all();
        close_fabric(&f);
        shmem_finalize();
        return 0;
    }
    for (long i = 0; i < 100; i++)
        round_trip(&f, 0);
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        round_trip(&f, 0);
    double back_to_back = (now_s() - t0) * 1e6 / (double)iters / 2;

    /* [k][w]: after idle[k], w = 0 quiet, 1 with warm_us trips meanwhile. */
    double after[MAX_IDLE][2][3];
    for (int k = 0; k < nidle; k++) {
        for (int w = 0; w < (warm_us > 0 ? 2 : 1); w++) {
            double one[MAX_REPS];
            for (long r = 0; r < reps; r++) {
                quiet_spell(&f, idle[k], w ? warm_us : 0);
                double s = now_s();
                round_trip(&f, 0);
                one[r] = (now_s() - s) * 1e6 / 2;
            }
            qsort(one, (size_t)reps, sizeof(double), cmp_double);
            after[k][w][0] = one[reps / 2];
            after[k][w][1] = one[0];
            after[k][w][2] = one[reps - 1];
        }
    }
    round_trip(&f, 1);
    shmem_barrier_all();
    printf("# fabric_floor: provider %s (%s), 8-byte messages, us one way (half a round trip)\n",
           f.info->fabric_attr->prov_name, f.info->domain_attr->name);
    printf("%-30s %10s %10s %10s\n", "when", "us", "lowest", "highest");
    printf("%-30s %10.2f %10s %10s\n", "back to back", back_to_back, "", "");
    for (int k = 0; k < nidle; k++) {
        for (int w = 0; w < (warm_us > 0 ? 2 : 1); w++) {
            char when[64];
            if (w)
                snprintf(when, sizeof(when), "after %ld us, warm %ld", idle[k], warm_us);
            else
                snprintf(when, sizeof(when), "after %ld us", idle[k]);
            printf("%-30s %10.2f %10.2f %10.2f\n", when, after[k][w][0], after[k][w][1],
                   after[k][w][2]);
        }
    }
    fflush(stdout);
    close_fabric(&f);
    shmem_finalize();
    return 0;
}
