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
    return shmem_pe_accessible(pe) &&
           (ushmemi_in_user_heap(addr, 1) || ushmemi_in_static(addr, 1));
}

USHMEMI_API void *shmem_ptr(const void *dest, int pe)
{
    ushmemi_check_init("shmem_ptr");
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        return NULL;
    const struct ushmemi_peer *peer;
    const char *local_base;
    if (ushmemi_in_user_heap(dest, 1) && ushmemi_g.heap_host_accessible) {
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

USHMEMI_API void shmem_pcontrol(int level, ...)
{
    /* Profiling levels are accepted; there is no profiling layer to drive. */
    (void)level;
}
