/* Communication contexts: SHMEM_CTX_DEFAULT, shmem_ctx_create,
 * shmem_team_create_ctx, shmem_ctx_destroy and shmem_ctx_get_team.
 *
 * A context is its team and its options. Its operations take the same
 * roads as the default context's (rma.c, amo.c, signal.c translate its PE
 * numbers through the team), so PRIVATE, SERIALIZED and NOSTORE are
 * accepted and recorded but change nothing: every road is already safe
 * from several threads, and quiet completes every context's operations.
 * Contexts live in a fixed table so that a handle is checked by address
 * before anything is read through it. */
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>

#include "internal.h"

struct ushmemi_ctx ushmemi_ctx_default = {.team = &ushmemi_team_world, .live = true};
USHMEMI_API shmem_ctx_t SHMEM_CTX_DEFAULT = &ushmemi_ctx_default;

static struct ushmemi_ctx contexts[USHMEMI_CTX_MAX];
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;

static bool in_table(const struct ushmemi_ctx *ctx)
{
    uintptr_t p = (uintptr_t)ctx, lo = (uintptr_t)contexts;
    return p >= lo && p < lo + sizeof(contexts) && (p - lo) % sizeof(*ctx) == 0;
}

static const char *ctx_name(const struct ushmemi_ctx *ctx)
{
    return ctx == SHMEM_CTX_INVALID ? "SHMEM_CTX_INVALID" : "context";
}

int ushmemi_ctx_pe_slow(const char *call, struct ushmemi_ctx *ctx, int pe)
{
    if (!in_table(ctx) || !ctx->live)
        ushmemi_fatal(call, "%s %p is not a live context of this PE (destroyed, never "
                            "created, or not a context)",
                      ctx_name(ctx), (void *)ctx);
    const struct ushmemi_team *team = ctx->team;
    if (team == &ushmemi_team_world)
        return pe;
    if (pe < 0 || pe >= team->size)
        ushmemi_fatal(call, "PE %d is out of range for the context's team of %d PEs (0 to %d)",
                      pe, team->size, team->size - 1);
    return team->start + pe * team->stride;
}

static int ctx_new(const char *call, const struct ushmemi_team *team, long options,
                   shmem_ctx_t *ctx_p)
{
    if (ctx_p == NULL)
        ushmemi_fatal(call, "ctx is NULL");
    *ctx_p = SHMEM_CTX_INVALID;
    long known = SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE;
    if (options & ~known) {
        ushmemi_error("%s: PE %d: options %#lx has bits that name no context option", call,
                      ushmemi_g.my_pe, options);
        return -1;
    }
    struct ushmemi_ctx *ctx = NULL;
    pthread_mutex_lock(&contexts_lock);
    for (int i = 0; i < USHMEMI_CTX_MAX && ctx == NULL; i++)
        if (!contexts[i].live)
            ctx = &contexts[i];
    if (ctx != NULL)
        *ctx = (struct ushmemi_ctx){.team = team, .options = options, .live = true};
    pthread_mutex_unlock(&contexts_lock);
    if (ctx == NULL) {
        ushmemi_error("%s: PE %d already has %d contexts besides SHMEM_CTX_DEFAULT; destroy one "
                      "first",
                      call, ushmemi_g.my_pe, USHMEMI_CTX_MAX);
        return -1;
    }
    *ctx_p = ctx;
    return 0;
}

USHMEMI_API int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    ushmemi_check_init("shmem_ctx_create");
    return ctx_new("shmem_ctx_create", &ushmemi_team_world, options, ctx);
}

USHMEMI_API int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    static const char call[] = "shmem_team_create_ctx";
    ushmemi_check_init(call);
    const struct ushmemi_team *t = ushmemi_team_lookup(call, team);
    if (t == NULL) {
        /* What the specification defines, not an error: a PE outside a
         * split team gets SHMEM_TEAM_INVALID and makes its contexts the same
         * way as the members do. */
        if (ctx != NULL)
            *ctx = SHMEM_CTX_INVALID;
        ushmemi_debug("%s: SHMEM_TEAM_INVALID: no context, SHMEM_CTX_INVALID", call);
        return -1;
    }
    if (ushmemi_team_index_of(t, ushmemi_g.my_pe) < 0)
        ushmemi_fatal(call, "PE %d is not a member of %s", ushmemi_g.my_pe, t->name);
    return ctx_new(call, t, options, ctx);
}

static void destroy(const char *call, struct ushmemi_ctx *ctx)
{
    ushmemi_road_quiet(call);
    pthread_mutex_lock(&contexts_lock);
    ctx->live = false;
    pthread_mutex_unlock(&contexts_lock);
}

USHMEMI_API void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    static const char call[] = "shmem_ctx_destroy";
    ushmemi_check_init(call);
    if (ctx == &ushmemi_ctx_default)
        ushmemi_fatal(call, "SHMEM_CTX_DEFAULT cannot be destroyed");
    if (ctx == SHMEM_CTX_INVALID)
        return; /* as for a failed create: nothing to destroy */
    ushmemi_ctx_pe_slow(call, ctx, 0); /* fatal unless live */
    destroy(call, ctx);
}

USHMEMI_API int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    static const char call[] = "shmem_ctx_get_team";
    ushmemi_check_init(call);
    if (team == NULL)
        ushmemi_fatal(call, "team is NULL");
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    if (ctx != &ushmemi_ctx_default)
        ushmemi_ctx_pe_slow(call, ctx, 0);
    *team = (shmem_team_t)ctx->team;
    return 0;
}

void ushmemi_ctx_destroy_team(const char *call, const struct ushmemi_team *team)
{
    for (int i = 0; i < USHMEMI_CTX_MAX; i++)
        if (contexts[i].live && contexts[i].team == team)
            destroy(call, &contexts[i]);
}

void ushmemi_ctx_fini(void)
{
    pthread_mutex_lock(&contexts_lock);
    for (int i = 0; i < USHMEMI_CTX_MAX; i++)
        contexts[i].live = false;
    pthread_mutex_unlock(&contexts_lock);
}

/* OpenSHMEM 1.6 sessions: hints that a batch of operations follows. They
 * never change what an operation does or when it completes; every road here
 * already issues each operation at once, so a session needs nothing, and the
 * calls only check their arguments. */
USHMEMI_API void shmem_ctx_session_start(shmem_ctx_t ctx, long options,
                                         const shmem_ctx_session_config_t *config,
                                         long config_mask)
{
    static const char call[] = "shmem_ctx_session_start";
    ushmemi_check_init(call);
    if (ctx == SHMEM_CTX_INVALID)
        return;
    if (ctx != &ushmemi_ctx_default)
        ushmemi_ctx_pe_slow(call, ctx, 0);
    if (options & ~SHMEM_CTX_SESSION_BATCH)
        ushmemi_fatal(call, "options %#lx has bits that name no session option", options);
    if (config_mask & ~SHMEM_CTX_SESSION_TOTAL_OPS)
        ushmemi_fatal(call, "config_mask %#lx has bits that name no session setting",
                      config_mask);
    if (config_mask != 0 && config == NULL)
        ushmemi_fatal(call, "config is NULL with config_mask %#lx", config_mask);
}

USHMEMI_API void shmem_ctx_session_stop(shmem_ctx_t ctx)
{
    static const char call[] = "shmem_ctx_session_stop";
    ushmemi_check_init(call);
    if (ctx != SHMEM_CTX_INVALID && ctx != &ushmemi_ctx_default)
        ushmemi_ctx_pe_slow(call, ctx, 0);
}
