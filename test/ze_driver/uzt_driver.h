/*
 * Private header of the Level Zero test driver (the part loaded into the
 * application): its objects, the driver-wide state, and the functions each
 * file offers the others. ze_test_driver.c describes the design.
 */
#ifndef UZT_DRIVER_H
#define UZT_DRIVER_H

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uzt_proto.h"

#define UZT_MAX_DEVICES 16
#define UZT_MAX_ALLOC_SIZE ((uint64_t)64 << 30)
#define UZT_BOUNCE_SIZE ((size_t)4 << 20)
#define UZT_WAIT_SLICE_NS 100000000u /* how often a sleeping waiter checks on the helper */

/* Queue groups: ordinal 0 computes and copies, ordinal 1 is a copy engine. */
#define UZT_NUM_ORDINALS 2
static const uint32_t uzt_queues_per_ordinal[UZT_NUM_ORDINALS] = {1, 2};

void uzt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Every handle this driver gives out starts with one of these. */
enum uzt_magic {
    UZT_MAGIC_DRIVER = 0x757a7401,
    UZT_MAGIC_DEVICE,
    UZT_MAGIC_CONTEXT,
    UZT_MAGIC_LIST,
    UZT_MAGIC_QUEUE,
    UZT_MAGIC_POOL,
    UZT_MAGIC_EVENT,
    UZT_MAGIC_MODULE,
    UZT_MAGIC_KERNEL,
    UZT_MAGIC_BUILD_LOG,
    UZT_MAGIC_VERTEX,
    UZT_MAGIC_EDGE,
};

enum uzt_link { UZT_LINK_XELINK, UZT_LINK_PCIE, UZT_LINK_PCIE_ATOMICS, UZT_LINK_NONE };

struct uzt_device {
    uint32_t magic;
    uint32_t index;
    ze_pci_address_ext_t pci;
    bool visible;
};

struct uzt_context {
    uint32_t magic;
};

struct uzt_event {
    uint32_t magic;
    struct uzt_pool *pool;
    _Atomic uint32_t *word;
};

struct uzt_driver {
    uint32_t magic;
    uint32_t ndev;
    enum uzt_link link;
    uint64_t node_hash;
    struct uzt_device dev[UZT_MAX_DEVICES];
    uint32_t nvisible;
    struct uzt_device *visible[UZT_MAX_DEVICES];

    int sock; /* to the helper */
    pthread_mutex_t sock_lock;
    bool lost;

    struct uzt_list_ctl *ctl; /* UZT_MAX_LISTS slots, internal host memory */
    void *bounce;             /* staging for app-private memory */
    pthread_mutex_t bounce_lock;
};

extern struct uzt_driver uzt;

/* Handle checks: NULL when the handle is not of the expected kind. */
static inline void *uzt_cast(const void *handle, uint32_t magic)
{
    return handle && *(const uint32_t *)handle == magic ? (void *)handle : NULL;
}

static inline uint64_t uzt_round_up(uint64_t v, uint64_t align)
{
    return (v + align - 1) & ~(align - 1);
}

/* ze_test_driver.c: the 16-byte uuid of a device (node hash, "uzt", index). */
void uzt_device_uuid(const struct uzt_device *d, uint8_t uuid[16]);

/* uzt_fabric.c: fabric vertices and edges (Xe Link between devices). */
void uzt_fabric_init(void);
void uzt_fabric_fill_tables(ze_device_exp_dditable_t *device,
                            ze_fabric_vertex_exp_dditable_t *vertex,
                            ze_fabric_edge_exp_dditable_t *edge);

/* uzt_init.c: settings, regions, the helper and the socket to it. */
ze_result_t uzt_init(ze_init_flags_t flags);
ze_result_t uzt_rpc(const struct uzt_req *req, int fd_in, struct uzt_reply *rep, int *fd_out);
ze_result_t uzt_post(const void *msg, size_t len);
bool uzt_helper_alive(void);
ze_result_t uzt_errno_result(int err);
uint64_t uzt_now_ns(void);
uint64_t uzt_deadline(uint64_t timeout_ns); /* UINT64_MAX: never */

/* uzt_mem.c: the allocation tables and every zeMem call. */
enum uzt_where {
    UZT_WHERE_HELPER, /* device memory, imports, module globals */
    UZT_WHERE_BOTH,   /* host allocations */
    UZT_WHERE_APP,    /* app-private (pageable) memory */
    UZT_WHERE_BAD,    /* in a region but not inside one allocation */
};
enum uzt_where uzt_mem_where(const void *ptr, size_t size);
ze_result_t uzt_mem_internal_alloc(size_t size, void **ptr_p);
void uzt_mem_internal_free(void *ptr);
ze_result_t uzt_mem_add_global(const void *owner, uint32_t dev, uint64_t addr, uint64_t size);
void uzt_mem_drop_globals(const void *owner);
void uzt_mem_reserve(uint64_t addr, uint64_t size);
ze_result_t uzt_mem_alloc_shared(ze_context_handle_t, const ze_device_mem_alloc_desc_t *,
                                 const ze_host_mem_alloc_desc_t *, size_t, size_t,
                                 ze_device_handle_t, void **);
ze_result_t uzt_mem_alloc_device(ze_context_handle_t, const ze_device_mem_alloc_desc_t *, size_t,
                                 size_t, ze_device_handle_t, void **);
ze_result_t uzt_mem_alloc_host(ze_context_handle_t, const ze_host_mem_alloc_desc_t *, size_t,
                               size_t, void **);
ze_result_t uzt_mem_free(ze_context_handle_t, void *);
ze_result_t uzt_mem_get_alloc_properties(ze_context_handle_t, const void *,
                                         ze_memory_allocation_properties_t *, ze_device_handle_t *);
ze_result_t uzt_mem_get_address_range(ze_context_handle_t, const void *, void **, size_t *);
ze_result_t uzt_mem_get_ipc_handle(ze_context_handle_t, const void *, ze_ipc_mem_handle_t *);
ze_result_t uzt_mem_open_ipc_handle(ze_context_handle_t, ze_device_handle_t, ze_ipc_mem_handle_t,
                                    ze_ipc_memory_flags_t, void **);
ze_result_t uzt_mem_close_ipc_handle(ze_context_handle_t, const void *);

/* uzt_cmd.c: command lists and command queues. */
void uzt_cmd_fill_tables(ze_command_queue_dditable_t *queue, ze_command_list_dditable_t *list);
struct uzt_kernel;
/* Builds the launch payload from the kernel's current settings (uzt_module.c). */
ze_result_t uzt_kernel_payload(struct uzt_kernel *k, const ze_group_count_t *groups,
                               uint32_t ordinal, void **payload_p, uint32_t *size_p);

/* uzt_event.c: event pools and events. */
void uzt_event_fill_tables(ze_event_pool_dditable_t *pool, ze_event_dditable_t *event);
ze_result_t uzt_event_wait_host(struct uzt_event *e, uint64_t timeout_ns);

/* uzt_module.c: modules, build logs and kernels. */
void uzt_module_fill_tables(ze_module_dditable_t *module, ze_module_build_log_dditable_t *log,
                            ze_kernel_dditable_t *kernel);

#endif
