/* The bootstrap: who we are in the job and an out-of-band exchange. All PMIx
 * code lives in bootstrap_pmix.c. */
#ifndef USHMEMI_BOOTSTRAP_H
#define USHMEMI_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "../common/status.h"

struct ushmemi_bootstrap {
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
void ushmemi_bootstrap_finalize(struct ushmemi_bootstrap *bs);

/* Collective: every PE contributes len bytes, all receives size*len bytes in
 * rank order. Calls may repeat; each call uses a fresh key. */
ushmem_status_t ushmemi_bootstrap_allgather(struct ushmemi_bootstrap *bs, const void *mine,
                                            void *all, size_t len);
ushmem_status_t ushmemi_bootstrap_barrier(struct ushmemi_bootstrap *bs);
/* Ends the whole job: every PE stops, the launcher exits with `code`. */
_Noreturn void ushmemi_bootstrap_abort(struct ushmemi_bootstrap *bs, int code, const char *msg);

#endif
