/* The device backend registry: which backends this build holds, in order of
 * preference, and how one is chosen by name. Backend #ifdefs live here and in
 * meson only; core code sees nothing but the ops table. */
#include "device.h"

#include <stdio.h>
#include <string.h>

#include "ushmem_config.h"
#include "../common/log.h"

/* GPU backends go first when they exist (USHMEM_HAVE_ZE, USHMEM_HAVE_CUDA), so
 * that "auto" prefers a GPU and falls back to host memory. */
#if USHMEM_HAVE_ZE
extern const struct ushmemi_device_ops ushmemi_device_ze_ops; /* ze.c */
#endif
#if USHMEM_HAVE_CUDA
extern const struct ushmemi_device_ops ushmemi_device_cuda_ops; /* cuda*.c */
#endif

const struct ushmemi_device_ops *const ushmemi_device_backends[] = {
#if USHMEM_HAVE_ZE
    &ushmemi_device_ze_ops,
#endif
#if USHMEM_HAVE_CUDA
    &ushmemi_device_cuda_ops,
#endif
    &ushmemi_device_cpu_ops,
    NULL,
};

static void list_backends(char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; ushmemi_device_backends[i] != NULL; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                         ushmemi_device_backends[i]->name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

static ushmem_status_t open_auto(int local_rank, int local_size,
                                 const struct ushmemi_device_ops **ops_p,
                                 struct ushmemi_device **dev_p)
{
    for (int i = 0; ushmemi_device_backends[i] != NULL; i++) {
        const struct ushmemi_device_ops *ops = ushmemi_device_backends[i];
        struct ushmemi_device *dev;
        ushmem_status_t status = ops->open(local_rank, local_size, &dev);

        if (status == USHMEM_OK) {
            ushmemi_debug("device backend '%s' opened for local rank %d", ops->name, local_rank);
            *ops_p = ops;
            *dev_p = dev;
            return USHMEM_OK;
        }
        /* A backend without driver or device is expected on most machines;
         * anything else is a real failure the user must see. */
        if (status != USHMEM_ERR_NO_DEVICE)
            return status;
        ushmemi_debug("device backend '%s' has no device here; trying the next", ops->name);
    }

    char names[128];
    list_backends(names, sizeof(names));
    ushmemi_error("ushmemi_device_open: no device backend could open a device for local rank %d "
                  "(compiled backends: %s)", local_rank, names);
    return USHMEM_ERR_NO_DEVICE;
}

ushmem_status_t ushmemi_device_open(const char *name, int local_rank, int local_size,
                                    const struct ushmemi_device_ops **ops_p,
                                    struct ushmemi_device **dev_p)
{
    if (name == NULL || name[0] == '\0' || strcmp(name, "auto") == 0)
        return open_auto(local_rank, local_size, ops_p, dev_p);

    for (int i = 0; ushmemi_device_backends[i] != NULL; i++) {
        const struct ushmemi_device_ops *ops = ushmemi_device_backends[i];
        if (strcmp(ops->name, name) != 0)
            continue;

        struct ushmemi_device *dev;
        ushmem_status_t status = ops->open(local_rank, local_size, &dev);
        if (status != USHMEM_OK) {
            ushmemi_error("ushmemi_device_open: backend '%s' failed to open for local rank %d: %s",
                          name, local_rank, ushmemi_status_string(status));
            return status;
        }
        *ops_p = ops;
        *dev_p = dev;
        return USHMEM_OK;
    }

    char names[128];
    list_backends(names, sizeof(names));
    ushmemi_error("ushmemi_device_open: unknown device backend '%s' (USHMEM_BACKEND); "
                  "this build has: auto, %s", name, names);
    return USHMEM_ERR_INVALID_PARAM;
}

const char *ushmemi_link_name(enum ushmemi_link_kind link)
{
    switch (link) {
    case USHMEMI_LINK_NONE:
        return "none";
    case USHMEMI_LINK_SAME_DEVICE:
        return "same-device";
    case USHMEMI_LINK_HOST_MEMORY:
        return "host-memory";
    case USHMEMI_LINK_PCIE:
        return "pcie";
    case USHMEMI_LINK_XELINK:
        return "xelink";
    case USHMEMI_LINK_NVLINK:
        return "nvlink";
    }
    return "unknown";
}

const char *ushmemi_reduce_op_name(enum ushmemi_reduce_op op)
{
    static const char *const names[USHMEMI_REDUCE_OPS] = {
        [USHMEMI_REDUCE_SUM] = "sum", [USHMEMI_REDUCE_PROD] = "prod", [USHMEMI_REDUCE_MIN] = "min",
        [USHMEMI_REDUCE_MAX] = "max", [USHMEMI_REDUCE_AND] = "and",   [USHMEMI_REDUCE_OR] = "or",
        [USHMEMI_REDUCE_XOR] = "xor",
    };
    return (unsigned)op < USHMEMI_REDUCE_OPS ? names[op] : "unknown";
}

const char *ushmemi_reduce_kind_name(enum ushmemi_reduce_kind kind)
{
    static const char *const names[USHMEMI_REDUCE_KINDS] = {
        [USHMEMI_REDUCE_I8] = "i8",   [USHMEMI_REDUCE_I16] = "i16", [USHMEMI_REDUCE_I32] = "i32",
        [USHMEMI_REDUCE_I64] = "i64", [USHMEMI_REDUCE_U8] = "u8",   [USHMEMI_REDUCE_U16] = "u16",
        [USHMEMI_REDUCE_U32] = "u32", [USHMEMI_REDUCE_U64] = "u64", [USHMEMI_REDUCE_F32] = "f32",
        [USHMEMI_REDUCE_F64] = "f64", [USHMEMI_REDUCE_C32] = "c32", [USHMEMI_REDUCE_C64] = "c64",
    };
    return (unsigned)kind < USHMEMI_REDUCE_KINDS ? names[kind] : "unknown";
}

/* The stream operations of a backend without streams (cpu, ze). */
ushmem_status_t ushmemi_no_stream_copy(struct ushmemi_device *dev, void *stream, void *dst,
                                       const void *src, size_t len)
{
    (void)dev, (void)stream, (void)dst, (void)src, (void)len;
    return USHMEM_ERR_UNSUPPORTED;
}

ushmem_status_t ushmemi_no_stream_write64(struct ushmemi_device *dev, void *stream,
                                          uint64_t *addr, uint64_t value)
{
    (void)dev, (void)stream, (void)addr, (void)value;
    return USHMEM_ERR_UNSUPPORTED;
}

ushmem_status_t ushmemi_no_stream_wait64(struct ushmemi_device *dev, void *stream,
                                         const uint64_t *addr, uint64_t value,
                                         enum ushmemi_stream_cmp cmp)
{
    (void)dev, (void)stream, (void)addr, (void)value, (void)cmp;
    return USHMEM_ERR_UNSUPPORTED;
}

ushmem_status_t ushmemi_no_stream_reduce(struct ushmemi_device *dev, void *stream, void *dst,
                                         const void *const *srcs, int nsrc,
                                         enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                                         size_t count)
{
    (void)dev, (void)stream, (void)dst, (void)srcs, (void)nsrc, (void)op, (void)kind, (void)count;
    return USHMEM_ERR_UNSUPPORTED;
}

ushmem_status_t ushmemi_no_stream_alloc(struct ushmemi_device *dev, void *stream, size_t size,
                                        void **ptr_p)
{
    (void)dev, (void)stream, (void)size, (void)ptr_p;
    return USHMEM_ERR_UNSUPPORTED;
}

ushmem_status_t ushmemi_no_stream_free(struct ushmemi_device *dev, void *stream, void *ptr)
{
    (void)dev, (void)stream, (void)ptr;
    return USHMEM_ERR_UNSUPPORTED;
}

/* Nothing is queued on such a backend's streams, so nothing is captured:
 * the stream call itself then says the backend cannot queue it. */
ushmem_status_t ushmemi_no_stream_capturing(struct ushmemi_device *dev, void *stream,
                                            bool *capturing_p)
{
    (void)dev, (void)stream;
    *capturing_p = false;
    return USHMEM_OK;
}
