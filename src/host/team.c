/* Teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, SHMEMX_TEAM_NODE, the teams
 * programs split from them (shmem_team_split_strided, shmem_team_split_2d),
 * their queries, shmem_team_destroy, and the small integers that name teams
 * where a program keeps them in an int (shmemx_team_id).
 *
 * Every team is a strided set of world PEs (start, stride, size): a strided
 * split of a strided set is one again, and so are both axes of a 2-D split,
 * so collectives, translation and contexts need nothing but the triplet.
 * Split teams live in a fixed table; a handle is valid when it points at a
 * live entry, which is checked by address before anything is read through
 * it, so a stale or foreign handle gives an error, never a wild read.
 *
 * Synchronisation memory: team collectives use per-sender counters in the
 * collective scratch of every heap (barrier.c), shared by all teams, so a
 * team owns nothing symmetric and creating or destroying one allocates or
 * leaks nothing but its table entry. Creation and destruction synchronise
 * the parent (or the team) with one barrier. */
#include <pthread.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <string.h>

#include <ushmem/detail/device_state.h>

#include "coll.h"
#include "device_api.h"
#include "internal.h"

/* Device code finds every team by its id in a table of this many. */
_Static_assert(USHMEMX_TEAM_ID_SPLIT + USHMEMI_TEAMS_MAX == USHMEM_DEVICE_TEAMS,
               "the device's team table holds every team id");

struct ushmemi_team ushmemi_team_world = {.name = "SHMEM_TEAM_WORLD", .stride = 1, .live = true};
struct ushmemi_team ushmemi_team_shared = {.name = "SHMEM_TEAM_SHARED", .stride = 1, .live = true};
struct ushmemi_team ushmemi_team_node = {.name = "SHMEMX_TEAM_NODE", .stride = 1, .live = true};

USHMEMI_API shmem_team_t SHMEM_TEAM_WORLD = &ushmemi_team_world;
USHMEMI_API shmem_team_t SHMEM_TEAM_SHARED = &ushmemi_team_shared;
USHMEMI_API shmem_team_t SHMEMX_TEAM_NODE = &ushmemi_team_node;

static struct ushmemi_team split_teams[USHMEMI_TEAMS_MAX];
static pthread_mutex_t split_lock = PTHREAD_MUTEX_INITIALIZER;

static bool in_table(const struct ushmemi_team *team)
{
    uintptr_t p = (uintptr_t)team, lo = (uintptr_t)split_teams;
    return p >= lo && p < lo + sizeof(split_teams) && (p - lo) % sizeof(*team) == 0;
}

const struct ushmemi_team *ushmemi_team_lookup(const char *call, const struct ushmemi_team *team)
{
    if (team == SHMEM_TEAM_INVALID)
        return NULL;
    if (team == &ushmemi_team_world || team == &ushmemi_team_shared ||
        team == &ushmemi_team_node || (in_table(team) && team->live))
        return team;
    ushmemi_fatal(call, "team handle %p is not a live team of this PE (destroyed, never "
                        "created, or not a team)",
                  (const void *)team);
}

int ushmemi_team_index_of(const struct ushmemi_team *team, int world_pe)
{
    int offset = world_pe - team->start;
    if (team->size == 1 || team->stride == 0)
        return offset == 0 ? 0 : -1;
    /* The stride may be negative (a split in reverse order). */
    if (offset % team->stride != 0)
        return -1;
    int index = offset / team->stride;
    return index >= 0 && index < team->size ? index : -1;
}

/* The PEs for which member(pe) holds, as a team named `name`, when they form
 * a strided set; otherwise this PE alone, which is still a correct (if
 * small) team of that kind. */
static void strided_team(struct ushmemi_team *team, const char *name, bool (*member)(int pe))
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    int first = -1, second = -1, count = 0;
    for (int pe = 0; pe < n; pe++) {
        if (!member(pe) && pe != me)
            continue;
        if (first < 0)
            first = pe;
        else if (second < 0)
            second = pe;
        count++;
    }
    int stride = second < 0 ? 1 : second - first;
    bool strided = true;
    for (int pe = first, i = 0; pe < n; pe++) {
        bool in = pe == me || member(pe);
        bool expected = (pe - first) % stride == 0 && i < count;
        if (in != expected) {
            strided = false;
            break;
        }
        if (in)
            i++;
    }
    *team = (struct ushmemi_team){.name = name, .live = true};
    if (strided) {
        team->start = first;
        team->stride = stride;
        team->size = count;
    } else {
        ushmemi_debug("%s: its PEs are not a strided set; the team holds PE %d alone", name, me);
        team->start = me;
        team->stride = 1;
        team->size = 1;
    }
    ushmemi_debug("%s: start %d, stride %d, size %d", name, team->start, team->stride,
                  team->size);
}

static bool mapped_here(int pe)
{
    return ushmemi_g.peers[pe].base != NULL;
}

static bool on_this_node(int pe)
{
    return ushmemi_g.peers[pe].node_hash == ushmemi_g.peers[ushmemi_g.my_pe].node_hash;
}

/* SHMEM_TEAM_SHARED: the PEs whose heaps this PE maps (those shmem_ptr can
 * reach), as under oshrun and launchers that place ranks by node.
 * SHMEMX_TEAM_NODE: the PEs of this node (of this simulated node under
 * USHMEM_SIM_NODES), mapped or not (USHMEM_IPC=0), whose rank in it is the
 * local rank that chose this PE's device. */
void ushmemi_teams_init(void)
{
    ushmemi_team_world = (struct ushmemi_team){
        .name = "SHMEM_TEAM_WORLD", .start = 0, .stride = 1, .size = ushmemi_g.n_pes, .live = true};
    strided_team(&ushmemi_team_shared, "SHMEM_TEAM_SHARED", mapped_here);
    strided_team(&ushmemi_team_node, "SHMEMX_TEAM_NODE", on_this_node);
}

void ushmemi_teams_fini(void)
{
    pthread_mutex_lock(&split_lock);
    for (int i = 0; i < USHMEMI_TEAMS_MAX; i++)
        split_teams[i].live = false;
    pthread_mutex_unlock(&split_lock);
}

static struct ushmemi_team *team_new(const char *call, const struct ushmemi_team *shape,
                                     const shmem_team_config_t *config, long config_mask)
{
    struct ushmemi_team *team = NULL;
    pthread_mutex_lock(&split_lock);
    for (int i = 0; i < USHMEMI_TEAMS_MAX && team == NULL; i++)
        if (!split_teams[i].live)
            team = &split_teams[i];
    if (team != NULL) {
        *team = *shape;
        team->name = "a split team";
        team->num_contexts =
            (config_mask & SHMEM_TEAM_NUM_CONTEXTS) && config ? config->num_contexts : 0;
        team->live = true;
    }
    pthread_mutex_unlock(&split_lock);
    if (team == NULL)
        ushmemi_error("%s: PE %d already has %d teams besides SHMEM_TEAM_WORLD and "
                      "SHMEM_TEAM_SHARED; destroy one first",
                      call, ushmemi_g.my_pe, USHMEMI_TEAMS_MAX);
    return team;
}

/* The parent's set, for the barrier that makes a split collective. */
static void parent_barrier(const char *call, const struct ushmemi_team *parent)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, parent, &set) == USHMEM_OK)
        ushmemi_coll_barrier(call, &set);
}

static bool config_ok(const char *call, const shmem_team_config_t *config, long mask)
{
    if (mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
        ushmemi_error("%s: PE %d: config_mask %#lx has bits no configuration field names", call,
                      ushmemi_g.my_pe, mask);
        return false;
    }
    if ((mask & SHMEM_TEAM_NUM_CONTEXTS) && (config == NULL || config->num_contexts < 0)) {
        ushmemi_error("%s: PE %d: config_mask asks for num_contexts but config is %s", call,
                      ushmemi_g.my_pe, config == NULL ? "NULL" : "negative");
        return false;
    }
    return true;
}

USHMEMI_API int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                                         const shmem_team_config_t *config, long config_mask,
                                         shmem_team_t *new_team)
{
    static const char call[] = "shmem_team_split_strided";
    ushmemi_check_init(call);
    if (new_team == NULL)
        ushmemi_fatal(call, "new_team is NULL");
    *new_team = SHMEM_TEAM_INVALID;
    const struct ushmemi_team *parent = ushmemi_team_lookup(call, parent_team);
    if (parent == NULL) {
        /* Defined by the specification: no team, and a nonzero return,
         * which programs split from a team they are not in rely on. */
        ushmemi_debug("%s: the parent is SHMEM_TEAM_INVALID: no team", call);
        return -1;
    }
    if (ushmemi_team_index_of(parent, ushmemi_g.my_pe) < 0)
        ushmemi_fatal(call, "PE %d is not a member of the parent team", ushmemi_g.my_pe);
    /* Every PE of the parent passes the same triplet, so they all take the
     * same error return without meeting. A size of 0 is what programs get
     * from "every k-th PE" (npes / k) in a job of fewer than k PEs: no team,
     * as for any invalid triplet, and no error. */
    if (size == 0) {
        ushmemi_debug("%s: size 0: no team", call);
        return -1;
    }
    if (size < 0) {
        ushmemi_error("%s: PE %d: size %d is negative", call, ushmemi_g.my_pe, size);
        return -1;
    }
    long long last = (long long)start + (long long)(size - 1) * stride;
    if (start < 0 || start >= parent->size || (stride == 0 && size > 1) || last < 0 ||
        last >= parent->size) {
        ushmemi_error("%s: PE %d: start %d, stride %d, size %d does not lie in the parent team "
                      "of %d PEs (0 <= start + i * stride < %d for every i < size; stride 0 "
                      "only with size 1)",
                      call, ushmemi_g.my_pe, start, stride, size, parent->size, parent->size);
        return -1;
    }
    if (!config_ok(call, config, config_mask))
        return -1;

    /* Members in the order of the split: a negative stride reverses them. */
    struct ushmemi_team shape = {
        .start = parent->start + start * parent->stride,
        .stride = size > 1 ? parent->stride * stride : 1,
        .size = size,
    };
    int rc = 0;
    if (ushmemi_team_index_of(&shape, ushmemi_g.my_pe) >= 0) {
        struct ushmemi_team *team = team_new(call, &shape, config, config_mask);
        if (team == NULL)
            rc = -1;
        else
            ushmemi_device_api_team_set(call, USHMEMX_TEAM_ID_SPLIT + (int)(team - split_teams),
                                        team);
        *new_team = team;
    }
    parent_barrier(call, parent);
    return rc;
}

USHMEMI_API int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                                    const shmem_team_config_t *xaxis_config, long xaxis_mask,
                                    shmem_team_t *xaxis_team,
                                    const shmem_team_config_t *yaxis_config, long yaxis_mask,
                                    shmem_team_t *yaxis_team)
{
    static const char call[] = "shmem_team_split_2d";
    ushmemi_check_init(call);
    if (xaxis_team == NULL || yaxis_team == NULL)
        ushmemi_fatal(call, "xaxis_team (%p) and yaxis_team (%p) must not be NULL",
                      (void *)xaxis_team, (void *)yaxis_team);
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    const struct ushmemi_team *parent = ushmemi_team_lookup(call, parent_team);
    if (parent == NULL) {
        ushmemi_debug("%s: the parent is SHMEM_TEAM_INVALID: no teams", call);
        return -1;
    }
    int me = ushmemi_team_index_of(parent, ushmemi_g.my_pe);
    if (me < 0)
        ushmemi_fatal(call, "PE %d is not a member of the parent team", ushmemi_g.my_pe);
    if (xrange < 1) {
        ushmemi_error("%s: PE %d: xrange %d must be at least 1", call, ushmemi_g.my_pe, xrange);
        return -1;
    }
    if (!config_ok(call, xaxis_config, xaxis_mask) || !config_ok(call, yaxis_config, yaxis_mask))
        return -1;
    int n = parent->size;
    if (xrange > n)
        xrange = n; /* the specification's rule: one row of the whole parent */
    int x = me % xrange, y = me / xrange;
    /* Row y holds parent PEs y*xrange ... ; the last row may be short.
     * Column x holds x, x + xrange, ... */
    int row_size = n - y * xrange < xrange ? n - y * xrange : xrange;
    int col_size = (n - x + xrange - 1) / xrange;
    struct ushmemi_team row = {
        .start = parent->start + y * xrange * parent->stride,
        .stride = row_size > 1 ? parent->stride : 1,
        .size = row_size,
    };
    struct ushmemi_team col = {
        .start = parent->start + x * parent->stride,
        .stride = col_size > 1 ? parent->stride * xrange : 1,
        .size = col_size,
    };
    int rc = 0;
    struct ushmemi_team *xt = team_new(call, &row, xaxis_config, xaxis_mask);
    struct ushmemi_team *yt = xt == NULL ? NULL : team_new(call, &col, yaxis_config, yaxis_mask);
    if (yt == NULL) {
        if (xt != NULL)
            xt->live = false;
        rc = -1;
    } else {
        *xaxis_team = xt;
        *yaxis_team = yt;
        ushmemi_device_api_team_set(call, USHMEMX_TEAM_ID_SPLIT + (int)(xt - split_teams), xt);
        ushmemi_device_api_team_set(call, USHMEMX_TEAM_ID_SPLIT + (int)(yt - split_teams), yt);
    }
    parent_barrier(call, parent);
    return rc;
}

USHMEMI_API void shmem_team_destroy(shmem_team_t team)
{
    static const char call[] = "shmem_team_destroy";
    ushmemi_check_init(call);
    const struct ushmemi_team *t = ushmemi_team_lookup(call, team);
    if (t == NULL)
        return; /* destroying SHMEM_TEAM_INVALID does nothing */
    if (t == &ushmemi_team_world || t == &ushmemi_team_shared || t == &ushmemi_team_node)
        ushmemi_fatal(call, "%s cannot be destroyed", t->name);
    /* Contexts made on the team go with it, their operations completed. */
    ushmemi_ctx_destroy_team(call, t);
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, t, &set) == USHMEM_OK)
        ushmemi_coll_barrier(call, &set);
    ushmemi_device_api_team_set(call, USHMEMX_TEAM_ID_SPLIT + (int)(t - split_teams), NULL);
    pthread_mutex_lock(&split_lock);
    split_teams[t - split_teams].live = false;
    pthread_mutex_unlock(&split_lock);
}

USHMEMI_API int shmem_team_my_pe(shmem_team_t team)
{
    ushmemi_check_init("shmem_team_my_pe");
    const struct ushmemi_team *t = ushmemi_team_lookup("shmem_team_my_pe", team);
    return t ? ushmemi_team_index_of(t, ushmemi_g.my_pe) : -1;
}

USHMEMI_API int shmem_team_n_pes(shmem_team_t team)
{
    ushmemi_check_init("shmem_team_n_pes");
    const struct ushmemi_team *t = ushmemi_team_lookup("shmem_team_n_pes", team);
    return t ? t->size : -1;
}

USHMEMI_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    static const char call[] = "shmem_team_translate_pe";
    ushmemi_check_init(call);
    const struct ushmemi_team *src = ushmemi_team_lookup(call, src_team);
    const struct ushmemi_team *dst = ushmemi_team_lookup(call, dest_team);
    if (src == NULL || dst == NULL || src_pe < 0 || src_pe >= src->size)
        return -1;
    return ushmemi_team_index_of(dst, src->start + src_pe * src->stride);
}

USHMEMI_API int shmem_team_get_config(shmem_team_t team, long config_mask,
                                      shmem_team_config_t *config)
{
    static const char call[] = "shmem_team_get_config";
    ushmemi_check_init(call);
    const struct ushmemi_team *t = ushmemi_team_lookup(call, team);
    if (t == NULL)
        return -1;
    /* 1.6: a zero mask asks for nothing, and config may then be NULL. */
    if ((config_mask & ~SHMEM_TEAM_NUM_CONTEXTS) || (config_mask != 0 && config == NULL)) {
        ushmemi_error("%s: PE %d: config_mask %#lx with config %p", call, ushmemi_g.my_pe,
                      config_mask, (void *)config);
        return -1;
    }
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = t->num_contexts;
    return 0;
}

USHMEMI_API void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    static const char call[] = "shmem_team_ptr";
    ushmemi_check_init(call);
    const struct ushmemi_team *t = ushmemi_team_lookup(call, team);
    if (t == NULL || pe < 0 || pe >= t->size)
        return NULL;
    return shmem_ptr(dest, t->start + pe * t->stride);
}

/* Team ids: 0 world, 1 shared, 2 node (NVSHMEM's numbers for its
 * predefined teams), USHMEMX_TEAM_ID_SPLIT + i for split team i. */
USHMEMI_API int shmemx_team_id(shmem_team_t team)
{
    static const char call[] = "shmemx_team_id";
    ushmemi_check_init(call);
    const struct ushmemi_team *t = ushmemi_team_lookup(call, team);
    if (t == NULL)
        return -1;
    if (t == &ushmemi_team_world)
        return 0;
    if (t == &ushmemi_team_shared)
        return 1;
    if (t == &ushmemi_team_node)
        return 2;
    return USHMEMX_TEAM_ID_SPLIT + (int)(t - split_teams);
}

USHMEMI_API shmem_team_t shmemx_team_from_id(int id)
{
    if (!ushmemi_g.initialized)
        return SHMEM_TEAM_INVALID;
    switch (id) {
    case 0: return &ushmemi_team_world;
    case 1: return &ushmemi_team_shared;
    case 2: return &ushmemi_team_node;
    default: break;
    }
    if (id < USHMEMX_TEAM_ID_SPLIT || id - USHMEMX_TEAM_ID_SPLIT >= USHMEMI_TEAMS_MAX)
        return SHMEM_TEAM_INVALID;
    pthread_mutex_lock(&split_lock);
    struct ushmemi_team *t = &split_teams[id - USHMEMX_TEAM_ID_SPLIT];
    bool live = t->live;
    pthread_mutex_unlock(&split_lock);
    return live ? t : SHMEM_TEAM_INVALID;
}
