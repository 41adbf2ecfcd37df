/* Query routines: PE numbers, accessibility, shmem_ptr, library identity. */
#include <shmem.h>
#include <string.h>

#include "internal.h"

USHMEMI_API int shmem_my_pe(void)
{
    ushmemi_check_init("shmem_my_pe");
    return ushmemi_g.my_pe;
}

USHMEMI_API int shmem_n_pes(void)
{
    ushmemi_check_init("shmem_n_pes");
    return ushmemi_g.n_pes;
}

USHMEMI_API int _my_pe(void) { return shmem_my_pe(); }
USHMEMI_API int _num_pes(void) { return shmem_n_pes(); }
USHMEMI_API int shmem_num_pes(void) { return shmem_n_pes(); }

USHMEMI_API int shmem_pe_accessible(int pe)
{
    ushmemi_check_init("shmem_pe_accessible");
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        return 0;
    return ushmemi_g.peers[pe].route[USHMEMI_CLASS_RMA] != USHMEMI_ROUTE_NONE;
}

USHMEMI_API int shmem_addr_accessible(const void *addr, int pe)
{
    ushmemi_check_init("shmem_addr_accessible");
    return shmem_pe_accessible(pe) && (ushmemi_in_heap(addr, 1) || ushmemi_in_static(addr, 1));
}

USHMEMI_API void *shmem_ptr(const void *dest, int pe)
{
    ushmemi_check_init("shmem_ptr");
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        return NULL;
    const struct ushmemi_peer *peer;
    const char *local_base;
    if (ushmemi_in_heap(dest, 1) && ushmemi_g.heap_host_accessible) {
        peer = &ushmemi_g.peers[pe];
        local_base = ushmemi_g.heap_base;
    } else if (ushmemi_in_static(dest, 1)) {
        peer = &ushmemi_g.static_peers[pe];
        local_base = ushmemi_g.static_base;
    } else {
        return NULL;
    }
    if (peer->base == NULL)
        return NULL;
    return (char *)peer->base + ((const char *)dest - local_base);
}

USHMEMI_API void shmem_info_get_version(int *major, int *minor)
{
    if (major)
        *major = SHMEM_MAJOR_VERSION;
    if (minor)
        *minor = SHMEM_MINOR_VERSION;
}

USHMEMI_API void shmem_info_get_name(char *name)
{
    if (name)
        strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN);
}

static const struct ushmemi_team *team_of(const char *call, shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return NULL;
    if (team != &ushmemi_team_world && team != &ushmemi_team_shared)
        ushmemi_fatal(call, "team handle %p is not a valid team", (void *)team);
    return team;
}

USHMEMI_API int shmem_team_my_pe(shmem_team_t team)
{
    ushmemi_check_init("shmem_team_my_pe");
    const struct ushmemi_team *t = team_of("shmem_team_my_pe", team);
    return t ? (ushmemi_g.my_pe - t->start) / t->stride : -1;
}

USHMEMI_API int shmem_team_n_pes(shmem_team_t team)
{
    ushmemi_check_init("shmem_team_n_pes");
    const struct ushmemi_team *t = team_of("shmem_team_n_pes", team);
    return t ? t->size : -1;
}

USHMEMI_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    ushmemi_check_init("shmem_team_translate_pe");
    const struct ushmemi_team *src = team_of("shmem_team_translate_pe", src_team);
    const struct ushmemi_team *dst = team_of("shmem_team_translate_pe", dest_team);
    if (src == NULL || dst == NULL || src_pe < 0 || src_pe >= src->size)
        return -1;
    int world = src->start + src_pe * src->stride;
    int rel = world - dst->start;
    if (rel < 0 || rel % dst->stride != 0 || rel / dst->stride >= dst->size)
        return -1;
    return rel / dst->stride;
}

USHMEMI_API int shmem_team_get_config(shmem_team_t team, long config_mask,
                                      shmem_team_config_t *config)
{
    ushmemi_check_init("shmem_team_get_config");
    if (team_of("shmem_team_get_config", team) == NULL || config == NULL)
        return -1;
    /* Contexts are not created on teams in this version. */
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = 0;
    return 0;
}

USHMEMI_API void shmem_pcontrol(int level)
{
    /* Profiling levels are accepted; there is no profiling layer to drive. */
    (void)level;
}
