/* The bootstrap: who we are in the job and an out-of-band exchange, behind
 * one small ops table with two implementations: PMIx (bootstrap_pmix.c, the
 * only file that includes pmix.h), chosen by shmem_init, and the unique-id
 * bootstrap (bootstrap_uid.c: TCP to the PE that made the id), chosen by
 * ushmemx_init_uniqueid. */
#ifndef USHMEMI_BOOTSTRAP_H
#define USHMEMI_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "../common/status.h"

/* The largest USHMEM_BOOTSTRAP_TIMEOUT, in seconds (11.6 days): the waits
 * turn it into milliseconds in an int (fd passing), and 10^9 ms fits. */
#define USHMEMI_BOOTSTRAP_TIMEOUT_MAX 1000000

struct ushmemi_bootstrap;

struct ushmemi_bootstrap_ops {
    size_t size; /* sizeof(struct ushmemi_bootstrap_ops) */
    const char *name;
    void (*finalize)(struct ushmemi_bootstrap *bs);
    ushmem_status_t (*allgather)(struct ushmemi_bootstrap *bs, const void *mine, void *all,
                                 size_t len);
    ushmem_status_t (*barrier)(struct ushmemi_bootstrap *bs);
    /* Ends every PE of the job with `code`; may return only when it could
     * not reach the others, and then the caller exits. */
    void (*abort)(struct ushmemi_bootstrap *bs, int code, const char *msg);
};

struct ushmemi_bootstrap {
    const struct ushmemi_bootstrap_ops *ops; /* NULL: none up (abort just exits) */
    int rank, size;
    int local_rank, local_size;
    int node_id;
    char job_id[64]; /* printable, unique per job: the PMIx namespace, sanitised */
    int singleton;   /* no launcher: one PE */
};

/* Connects to the launcher's PMIx server. No server and no launcher variables
 * (PMIX_*, OMPI_COMM_WORLD_*, SLURM_*, PMI_*): one PE, logged at debug level.
 * Launcher variables but no server: ERR_BOOTSTRAP with a message naming them. */
ushmem_status_t ushmemi_bootstrap_init(struct ushmemi_bootstrap *bs);

/* The unique-id bootstrap (see bootstrap_uid.c and shmemx.h): rank and npes
 * as the program passed them, uid the 128 bytes of a ushmemx_uniqueid_t.
 * Errors are logged with `call` and this PE named. */
ushmem_status_t ushmemi_bootstrap_uid_init(struct ushmemi_bootstrap *bs, const char *call,
                                           int rank, int npes, const void *uid);
/* Checks rank and npes, and that uid is a unique id made by
 * ushmemx_get_uniqueid (not that it is still live); logs why not, naming
 * `call` and the PE. */
ushmem_status_t ushmemi_bootstrap_uid_check(const char *call, int rank, int npes,
                                            const void *uid);
/* Whether bs is up through the unique-id bootstrap from this very id. */
bool ushmemi_bootstrap_uid_same(const struct ushmemi_bootstrap *bs, const void *uid);

static inline void ushmemi_bootstrap_finalize(struct ushmemi_bootstrap *bs)
{
    if (bs->ops != NULL)
        bs->ops->finalize(bs);
    bs->ops = NULL;
}

/* Collective: every PE contributes len bytes, all receives size*len bytes in
 * rank order. Calls may repeat; each call uses a fresh key. */
static inline ushmem_status_t ushmemi_bootstrap_allgather(struct ushmemi_bootstrap *bs,
                                                          const void *mine, void *all, size_t len)
{
    if (bs->ops == NULL)
        return USHMEM_ERR_NOT_INITIALIZED;
    return bs->ops->allgather(bs, mine, all, len);
}

static inline ushmem_status_t ushmemi_bootstrap_barrier(struct ushmemi_bootstrap *bs)
{
    if (bs->ops == NULL)
        return USHMEM_ERR_NOT_INITIALIZED;
    return bs->ops->barrier(bs);
}

/* Ends the whole job: every PE stops, the launcher exits with `code`. */
_Noreturn static inline void ushmemi_bootstrap_abort(struct ushmemi_bootstrap *bs, int code,
                                                     const char *msg)
{
    if (bs->ops != NULL)
        bs->ops->abort(bs, code, msg);
    _exit(code);
}

#endif
