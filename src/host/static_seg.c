/* Symmetric global and static variables: the executable's writable segment
 * (.data and .bss) is moved onto memory the device backend can export, then
 * mapped by every local peer like the heap. Peers run the same executable,
 * so an object's offset in the segment is the same everywhere even when
 * address randomisation puts the segment at different addresses. */
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct segment {
    uintptr_t start, end;
};

static int find_writable(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct segment *seg = arg;
    /* The first object reported is the executable itself. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            seg->start = info->dlpi_addr + ph->p_vaddr;
            seg->end = seg->start + ph->p_memsz;
            break;
        }
    }
    return 1;
}

ushmem_status_t ushmemi_static_share(const struct ushmemi_oob *oob,
                                     const struct ushmemi_ipc_config *config)
{
    struct segment seg = {0, 0};
    dl_iterate_phdr(find_writable, &seg);
    if (seg.start == seg.end) {
        ushmemi_debug("the executable has no writable segment: no symmetric globals");
        return USHMEM_OK;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    char *start = (char *)(seg.start & ~(page - 1));
    size_t len = ((seg.end + page - 1) & ~(page - 1)) - (uintptr_t)start;

    ushmem_status_t status = ushmemi_g.dev_ops->share_static(ushmemi_g.dev, start, len);
    if (status == USHMEM_ERR_UNSUPPORTED) {
        ushmemi_debug("backend %s cannot share the data segment: globals are not remotely "
                      "accessible", ushmemi_g.dev_ops->name);
        return USHMEM_OK;
    }
    if (status != USHMEM_OK)
        return status;

    ushmemi_g.static_peers = calloc((size_t)ushmemi_g.n_pes, sizeof(*ushmemi_g.static_peers));
    if (ushmemi_g.static_peers == NULL) {
        status = USHMEM_ERR_NO_MEMORY;
        goto unshare;
    }
    struct ushmemi_ipc_config seg_config = *config;
    seg_config.segment = "data segment (globals and statics)";
    status = ushmemi_ipc_connect(oob, ushmemi_g.dev_ops, ushmemi_g.dev, start, len, &seg_config,
                                 ushmemi_g.static_peers);
    if (status != USHMEM_OK)
        goto free_peers;
    ushmemi_g.static_base = start;
    ushmemi_g.static_size = len;
    ushmemi_debug("data segment [%p, %p) is symmetric", (void *)start, (void *)(start + len));
    return USHMEM_OK;

free_peers:
    free(ushmemi_g.static_peers);
    ushmemi_g.static_peers = NULL;
unshare:
    ushmemi_g.dev_ops->unshare_static(ushmemi_g.dev, start, len);
    return status;
}

void ushmemi_static_unshare(void)
{
    if (ushmemi_g.static_peers == NULL)
        return;
    ushmemi_ipc_disconnect(ushmemi_g.dev_ops, ushmemi_g.dev, ushmemi_g.static_peers,
                           ushmemi_g.n_pes, ushmemi_g.my_pe, ushmemi_g.static_size);
    ushmemi_g.dev_ops->unshare_static(ushmemi_g.dev, ushmemi_g.static_base, ushmemi_g.static_size);
    free(ushmemi_g.static_peers);
    ushmemi_g.static_peers = NULL;
    ushmemi_g.static_base = NULL;
    ushmemi_g.static_size = 0;
}
