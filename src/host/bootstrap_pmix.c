/* The PMIx bootstrap: the only file that includes pmix.h. Works under
 * oshrun, Open MPI's mpirun, PRRTE and Slurm's srun --mpi=pmix. */
#include "bootstrap.h"

#include <pmix.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

static pmix_proc_t my_proc;
static bool pmix_up;
static unsigned exchange_count;

static const struct ushmemi_bootstrap_ops pmix_ops;

/* Variables that say a launcher started us: with any of them present, a
 * failing PMIx connection must not turn into a silent single-PE run. */
static const char *const launcher_vars[] = {
    "PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI2", "PMIX_SERVER_URI21", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK", "SLURM_STEP_ID", "SLURM_PROCID", "PMI_RANK", "PMI_SIZE",
    "PALS_RANKID", "MPI_LOCALRANKID",
};

static const char *find_launcher_var(void)
{
    for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(launcher_vars[0]); i++)
        if (getenv(launcher_vars[i]) != NULL)
            return launcher_vars[i];
    return NULL;
}

/* Reads an unsigned integer of whatever width PMIx returned (PMIX_LOCAL_RANK
 * is uint16 while sizes are uint32). */
static ushmem_status_t get_uint(const pmix_proc_t *proc, const char *key, unsigned *value_p)
{
    pmix_value_t *val = NULL;
    pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL) {
        ushmemi_debug("PMIx_Get(%s) failed: %s", key, PMIx_Error_string(rc));
        return USHMEM_ERR_BOOTSTRAP;
    }
    ushmem_status_t status = USHMEM_OK;
    switch (val->type) {
    case PMIX_UINT8: *value_p = val->data.uint8; break;
    case PMIX_UINT16: *value_p = val->data.uint16; break;
    case PMIX_UINT32: *value_p = val->data.uint32; break;
    case PMIX_UINT64: *value_p = (unsigned)val->data.uint64; break;
    case PMIX_INT: *value_p = (unsigned)val->data.integer; break;
    case PMIX_UINT: *value_p = val->data.uint; break;
    case PMIX_PROC_RANK: *value_p = val->data.rank; break;
    default:
        ushmemi_error("PMIx key %s has unexpected type %s", key, PMIx_Data_type_string(val->type));
        status = USHMEM_ERR_BOOTSTRAP;
    }
    PMIX_VALUE_RELEASE(val);
    return status;
}

static void set_job_id(struct ushmemi_bootstrap *bs, const char *nspace)
{
    /* Abstract socket names and logs want a short printable id. */
    size_t n = 0;
    for (const char *c = nspace; *c && n + 1 < sizeof(bs->job_id); c++) {
        char ch = *c;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_';
        bs->job_id[n++] = ok ? ch : '_';
    }
    bs->job_id[n] = '\0';
}

static void init_singleton(struct ushmemi_bootstrap *bs)
{
    memset(bs, 0, sizeof(*bs));
    bs->size = 1;
    bs->local_size = 1;
    bs->singleton = 1;
    bs->ops = &pmix_ops;
    snprintf(bs->job_id, sizeof(bs->job_id), "single.%ld", (long)getpid());
}

ushmem_status_t ushmemi_bootstrap_init(struct ushmemi_bootstrap *bs)
{
    const char *var = find_launcher_var();
    if (var == NULL) {
        ushmemi_debug("no launcher variables and no PMIx server: running as a single PE");
        init_singleton(bs);
        return USHMEM_OK;
    }

    pmix_status_t rc = PMIx_Init(&my_proc, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        ushmemi_error("launcher variable %s is set but the PMIx server cannot be reached "
                      "(PMIx_Init: %s); start the program with oshrun, mpirun or srun --mpi=pmix, "
                      "or unset the launcher variables to run a single PE",
                      var, PMIx_Error_string(rc));
        return USHMEM_ERR_BOOTSTRAP;
    }
    pmix_up = true;

    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, my_proc.nspace, PMIX_RANK_WILDCARD);
    unsigned size = 0, local_size = 0, local_rank = 0, node_id = 0;
    if (get_uint(&wildcard, PMIX_JOB_SIZE, &size) != USHMEM_OK) {
        ushmemi_error("PMIx did not give the job size (PMIX_JOB_SIZE)");
        goto err_finalize;
    }
    if (get_uint(&my_proc, PMIX_LOCAL_RANK, &local_rank) != USHMEM_OK ||
        get_uint(&wildcard, PMIX_LOCAL_SIZE, &local_size) != USHMEM_OK) {
        ushmemi_error("PMIx did not give the local rank and size (PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE)");
        goto err_finalize;
    }
    if (get_uint(&my_proc, PMIX_NODEID, &node_id) != USHMEM_OK)
        node_id = 0;

    memset(bs, 0, sizeof(*bs));
    bs->ops = &pmix_ops;
    bs->rank = (int)my_proc.rank;
    bs->size = (int)size;
    bs->local_rank = (int)local_rank;
    bs->local_size = (int)local_size;
    bs->node_id = (int)node_id;
    set_job_id(bs, my_proc.nspace);
    if (bs->size < 1 || bs->rank >= bs->size || bs->local_rank >= bs->local_size) {
        ushmemi_error("PMIx gave an inconsistent job: rank %d of %d, local rank %d of %d",
                      bs->rank, bs->size, bs->local_rank, bs->local_size);
        goto err_finalize;
    }
    ushmemi_debug("PMIx: rank %d of %d, local rank %d of %d, node %d, namespace %s", bs->rank,
                  bs->size, bs->local_rank, bs->local_size, bs->node_id, my_proc.nspace);
    return USHMEM_OK;

err_finalize:
    bs->ops = NULL;
    PMIx_Finalize(NULL, 0);
    pmix_up = false;
    return USHMEM_ERR_BOOTSTRAP;
}

static void pmix_finalize(struct ushmemi_bootstrap *bs)
{
    (void)bs;
    if (pmix_up) {
        PMIx_Finalize(NULL, 0);
        pmix_up = false;
    }
}

static ushmem_status_t pmix_allgather(struct ushmemi_bootstrap *bs, const void *mine, void *all,
                                      size_t len)
{
    if (bs->singleton) {
        memcpy(all, mine, len);
        return USHMEM_OK;
    }

    char key[PMIX_MAX_KEYLEN + 1];
    snprintf(key, sizeof(key), "ushmem.ag.%u", exchange_count++);

    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = (char *)mine;
    value.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &value);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        ushmemi_error("PMIx_Put/Commit of %s failed: %s", key, PMIx_Error_string(rc));
        return USHMEM_ERR_BOOTSTRAP;
    }

    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence(NULL, 0, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        ushmemi_error("PMIx_Fence for %s failed: %s", key, PMIx_Error_string(rc));
        return USHMEM_ERR_BOOTSTRAP;
    }

    for (int r = 0; r < bs->size; r++) {
        pmix_proc_t peer;
        PMIX_LOAD_PROCID(&peer, my_proc.nspace, (pmix_rank_t)r);
        pmix_value_t *val = NULL;
        rc = PMIx_Get(&peer, key, NULL, 0, &val);
        if (rc != PMIX_SUCCESS || val == NULL || val->type != PMIX_BYTE_OBJECT ||
            val->data.bo.size != len) {
            ushmemi_error("PMIx_Get of %s from PE %d failed: %s", key, r, PMIx_Error_string(rc));
            if (val)
                PMIX_VALUE_RELEASE(val);
            return USHMEM_ERR_BOOTSTRAP;
        }
        memcpy((char *)all + (size_t)r * len, val->data.bo.bytes, len);
        PMIX_VALUE_RELEASE(val);
    }
    return USHMEM_OK;
}

static ushmem_status_t pmix_barrier(struct ushmemi_bootstrap *bs)
{
    if (bs->singleton)
        return USHMEM_OK;
    pmix_status_t rc = PMIx_Fence(NULL, 0, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        ushmemi_error("PMIx_Fence failed: %s", PMIx_Error_string(rc));
        return USHMEM_ERR_BOOTSTRAP;
    }
    return USHMEM_OK;
}

static void pmix_abort(struct ushmemi_bootstrap *bs, int code, const char *msg)
{
    (void)bs;
    if (pmix_up) {
        /* The launcher ends every PE; the caller's _exit covers a server
         * that returns instead. */
        PMIx_Abort(code, msg, NULL, 0);
    }
}

static const struct ushmemi_bootstrap_ops pmix_ops = {
    .size = sizeof(struct ushmemi_bootstrap_ops),
    .name = "pmix",
    .finalize = pmix_finalize,
    .allgather = pmix_allgather,
    .barrier = pmix_barrier,
    .abort = pmix_abort,
};
