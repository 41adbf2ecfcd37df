/*
 * Modules, build logs and kernels of the test driver. A module is a host
 * shared object that the helper dlopens from a memfd; a kernel is a symbol of
 * it (ABI in ze_test_kernel.h). The driver keeps each kernel's group size
 * and argument bytes and turns them into a launch payload at append time.
 */
#include "uzt_driver.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct uzt_module {
    uint32_t magic;
    uint32_t dev;
    uint64_t handle; /* the helper's dlopen handle */
};

struct uzt_build_log {
    uint32_t magic;
    char *text;
};

struct uzt_kernel {
    uint32_t magic;
    struct uzt_module *module;
    uint64_t fn;
    uint32_t group_size[3];
    uint32_t nargs; /* one past the highest index set */
    uint32_t arg_size[UZT_MAX_ARGS];
    unsigned char *arg[UZT_MAX_ARGS];
};

static ze_result_t make_log(const char *text, ze_module_build_log_handle_t *phLog)
{
    struct uzt_build_log *log;

    if (!phLog)
        return ZE_RESULT_SUCCESS;
    log = calloc(1, sizeof *log);
    if (!log || !(log->text = strdup(text))) {
        free(log);
        *phLog = NULL;
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    log->magic = UZT_MAGIC_BUILD_LOG;
    *phLog = (ze_module_build_log_handle_t)log;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t build_log_destroy(ze_module_build_log_handle_t hLog)
{
    struct uzt_build_log *log = uzt_cast(hLog, UZT_MAGIC_BUILD_LOG);

    if (!log)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    log->magic = 0;
    free(log->text);
    free(log);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t build_log_get_string(ze_module_build_log_handle_t hLog, size_t *pSize,
                                        char *pBuildLog)
{
    struct uzt_build_log *log = uzt_cast(hLog, UZT_MAGIC_BUILD_LOG);
    size_t need;

    if (!log)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    need = strlen(log->text) + 1;
    if (!pBuildLog) {
        *pSize = need;
        return ZE_RESULT_SUCCESS;
    }
    if (*pSize == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if (*pSize < need)
        need = *pSize;
    memcpy(pBuildLog, log->text, need - 1);
    pBuildLog[need - 1] = '\0';
    *pSize = need;
    return ZE_RESULT_SUCCESS;
}

/* Writes the module bytes into a memfd for the helper to dlopen. */
static int module_memfd(const uint8_t *bytes, size_t size)
{
    int fd = memfd_create(UZT_MEMFD_MODULE, MFD_CLOEXEC);

    if (fd < 0) {
        uzt_log("memfd_create for a module: %s", strerror(errno));
        return -1;
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, bytes + off, size - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            uzt_log("writing a module of %zu bytes: %s", size, strerror(errno));
            close(fd);
            return -1;
        }
        off += (size_t)n;
    }
    return fd;
}

static ze_result_t module_create(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                 const ze_module_desc_t *desc, ze_module_handle_t *phModule,
                                 ze_module_build_log_handle_t *phLog)
{
    struct uzt_device *dev = uzt_cast(hDevice, UZT_MAGIC_DEVICE);
    struct uzt_req req = {.op = UZT_OP_MODULE_LOAD};
    struct uzt_reply rep = {0};
    struct uzt_module *m;
    const char *why = NULL;
    ze_result_t r;
    int fd;

    if (phLog)
        *phLog = NULL;
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc->format != ZE_MODULE_FORMAT_NATIVE) {
        why = "only ZE_MODULE_FORMAT_NATIVE modules (host shared objects) are supported, "
              "not SPIR-V";
        r = ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    } else if (desc->inputSize < 4 || !desc->pInputModule ||
               memcmp(desc->pInputModule, "\177ELF", 4) != 0) {
        why = "the native module is not an ELF shared object";
        r = ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    if (why) {
        uzt_log("zeModuleCreate: %s", why);
        make_log(why, phLog);
        return r;
    }
    m = calloc(1, sizeof *m);
    if (!m)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    fd = module_memfd(desc->pInputModule, desc->inputSize);
    if (fd < 0) {
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto free_module;
    }
    r = uzt_rpc(&req, fd, &rep, NULL);
    close(fd);
    if (r != ZE_RESULT_SUCCESS)
        goto free_module;
    if (rep.err) {
        uzt_log("zeModuleCreate: the helper cannot load the module: %s", rep.text);
        make_log(rep.text, phLog);
        r = ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        goto free_module;
    }
    r = make_log("", phLog);
    if (r != ZE_RESULT_SUCCESS) {
        req = (struct uzt_req){.op = UZT_OP_MODULE_UNLOAD, .handle = rep.a};
        uzt_rpc(&req, -1, &rep, NULL);
        goto free_module;
    }
    m->magic = UZT_MAGIC_MODULE;
    m->dev = dev->index;
    m->handle = rep.a;
    *phModule = (ze_module_handle_t)m;
    return ZE_RESULT_SUCCESS;

free_module:
    free(m);
    return r;
}

static ze_result_t module_destroy(ze_module_handle_t hModule)
{
    struct uzt_module *m = uzt_cast(hModule, UZT_MAGIC_MODULE);
    struct uzt_req req = {.op = UZT_OP_MODULE_UNLOAD};
    struct uzt_reply rep;
    ze_result_t r;

    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uzt_mem_drop_globals(m);
    req.handle = m->handle;
    r = uzt_rpc(&req, -1, &rep, NULL);
    if (r == ZE_RESULT_SUCCESS && rep.err)
        uzt_log("zeModuleDestroy: %s", rep.text);
    m->magic = 0;
    free(m);
    return r;
}

/* Address and size of a symbol in the helper; ENOENT when there is none. */
static ze_result_t lookup(struct uzt_module *m, const char *name, ze_result_t missing,
                          uint64_t *addr_p, uint64_t *size_p)
{
    struct uzt_req req = {.op = UZT_OP_SYMBOL, .handle = m->handle};
    struct uzt_reply rep;
    ze_result_t r;

    if (strlen(name) >= sizeof req.name) {
        uzt_log("symbol name of %zu characters is too long", strlen(name));
        return missing;
    }
    strcpy(req.name, name);
    r = uzt_rpc(&req, -1, &rep, NULL);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    if (rep.err) {
        uzt_log("%s", rep.text);
        return rep.err == ENOENT ? missing : uzt_errno_result(rep.err);
    }
    *addr_p = rep.a;
    if (size_p)
        *size_p = rep.b;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_get_global_pointer(ze_module_handle_t hModule, const char *name,
                                             size_t *pSize, void **pptr)
{
    struct uzt_module *m = uzt_cast(hModule, UZT_MAGIC_MODULE);
    uint64_t addr, size;
    ze_result_t r;

    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = lookup(m, name, ZE_RESULT_ERROR_INVALID_GLOBAL_NAME, &addr, &size);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    /* Copies to and from it must go to the helper, as for device memory. */
    r = uzt_mem_add_global(m, m->dev, addr, size);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    if (pSize)
        *pSize = size;
    if (pptr)
        *pptr = (void *)(uintptr_t)addr;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_get_function_pointer(ze_module_handle_t hModule, const char *name,
                                               void **pfn)
{
    struct uzt_module *m = uzt_cast(hModule, UZT_MAGIC_MODULE);
    uint64_t addr;
    ze_result_t r;

    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = lookup(m, name, ZE_RESULT_ERROR_INVALID_FUNCTION_NAME, &addr, NULL);
    if (r == ZE_RESULT_SUCCESS)
        *pfn = (void *)(uintptr_t)addr;
    return r;
}

/* ---- kernels ----------------------------------------------------------- */

static ze_result_t kernel_create(ze_module_handle_t hModule, const ze_kernel_desc_t *desc,
                                 ze_kernel_handle_t *phKernel)
{
    struct uzt_module *m = uzt_cast(hModule, UZT_MAGIC_MODULE);
    struct uzt_kernel *k;
    uint64_t fn;
    ze_result_t r;

    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = lookup(m, desc->pKernelName, ZE_RESULT_ERROR_INVALID_KERNEL_NAME, &fn, NULL);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    k = calloc(1, sizeof *k);
    if (!k)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    *k = (struct uzt_kernel){
        .magic = UZT_MAGIC_KERNEL, .module = m, .fn = fn, .group_size = {1, 1, 1}};
    *phKernel = (ze_kernel_handle_t)k;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_destroy(ze_kernel_handle_t hKernel)
{
    struct uzt_kernel *k = uzt_cast(hKernel, UZT_MAGIC_KERNEL);

    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    for (uint32_t i = 0; i < UZT_MAX_ARGS; i++)
        free(k->arg[i]);
    k->magic = 0;
    free(k);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_set_group_size(ze_kernel_handle_t hKernel, uint32_t x, uint32_t y,
                                         uint32_t z)
{
    struct uzt_kernel *k = uzt_cast(hKernel, UZT_MAGIC_KERNEL);

    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!x || !y || !z || (uint64_t)x * y * z > UZT_MAX_ITEMS) {
        uzt_log("group size %ux%ux%u: each at least 1, at most %d work-items", x, y, z,
                UZT_MAX_ITEMS);
        return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    }
    k->group_size[0] = x;
    k->group_size[1] = y;
    k->group_size[2] = z;
    return ZE_RESULT_SUCCESS;
}

static uint32_t largest_divisor(uint32_t n, uint32_t cap)
{
    for (uint32_t d = cap < n ? cap : n; d > 1; d--) {
        if (n % d == 0)
            return d;
    }
    return 1;
}

static ze_result_t kernel_suggest_group_size(ze_kernel_handle_t hKernel, uint32_t gx, uint32_t gy,
                                             uint32_t gz, uint32_t *x, uint32_t *y, uint32_t *z)
{
    if (!uzt_cast(hKernel, UZT_MAGIC_KERNEL))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *x = largest_divisor(gx, 256);
    *y = largest_divisor(gy, 256 / *x);
    *z = largest_divisor(gz, 256 / (*x * *y));
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_set_argument_value(ze_kernel_handle_t hKernel, uint32_t index,
                                             size_t size, const void *pValue)
{
    struct uzt_kernel *k = uzt_cast(hKernel, UZT_MAGIC_KERNEL);
    unsigned char *bytes;

    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (index >= UZT_MAX_ARGS) {
        uzt_log("kernel argument %u: at most %d arguments", index, UZT_MAX_ARGS);
        return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    }
    if (size == 0 || size > UZT_MAX_ARGS_SIZE) {
        uzt_log("kernel argument %u of %zu bytes: from 1 to %d bytes", index, size,
                UZT_MAX_ARGS_SIZE);
        return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    }
    bytes = calloc(1, size);
    if (!bytes)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    if (pValue)
        memcpy(bytes, pValue, size);
    free(k->arg[index]);
    k->arg[index] = bytes;
    k->arg_size[index] = (uint32_t)size;
    if (index >= k->nargs)
        k->nargs = index + 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t uzt_kernel_payload(struct uzt_kernel *k, const ze_group_count_t *groups,
                               uint32_t ordinal, void **payload_p, uint32_t *size_p)
{
    struct uzt_launch d = {0};
    uint64_t items;
    uint32_t off = 0, zero;
    unsigned char *p;

    if (!uzt_cast(k, UZT_MAGIC_KERNEL))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ordinal != 0) {
        uzt_log("kernel launch on queue group ordinal %u, a copy engine: kernels run on "
                "ordinal 0",
                ordinal);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    items = (uint64_t)k->group_size[0] * k->group_size[1] * k->group_size[2] * groups->groupCountX *
            groups->groupCountY * groups->groupCountZ;
    if (items > UZT_MAX_ITEMS) {
        uzt_log("kernel launch of %" PRIu64 " work-items: this driver runs at most %d at once",
                items, UZT_MAX_ITEMS);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    d.fn = k->fn;
    memcpy(d.group_size, k->group_size, sizeof d.group_size);
    d.group_count[0] = groups->groupCountX;
    d.group_count[1] = groups->groupCountY;
    d.group_count[2] = groups->groupCountZ;
    d.nargs = k->nargs;
    for (uint32_t i = 0; i < k->nargs; i++) {
        if (k->arg[i]) {
            d.arg_offset[i] = off;
            off += (k->arg_size[i] + 15) & ~15u;
        }
    }
    zero = off; /* arguments never set point at 16 zero bytes */
    if (zero > UZT_MAX_ARGS_SIZE) {
        uzt_log("kernel arguments of %u bytes: at most %d", zero, UZT_MAX_ARGS_SIZE);
        return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    }
    for (uint32_t i = 0; i < k->nargs; i++) {
        if (!k->arg[i])
            d.arg_offset[i] = zero;
    }
    p = calloc(1, sizeof d + zero + 16);
    if (!p)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(p, &d, sizeof d);
    for (uint32_t i = 0; i < k->nargs; i++) {
        if (k->arg[i])
            memcpy(p + sizeof d + d.arg_offset[i], k->arg[i], k->arg_size[i]);
    }
    *payload_p = p;
    *size_p = (uint32_t)(sizeof d + zero + 16);
    return ZE_RESULT_SUCCESS;
}

void uzt_module_fill_tables(ze_module_dditable_t *module, ze_module_build_log_dditable_t *log,
                            ze_kernel_dditable_t *kernel)
{
    if (module) {
        module->pfnCreate = module_create;
        module->pfnDestroy = module_destroy;
        module->pfnGetGlobalPointer = module_get_global_pointer;
        module->pfnGetFunctionPointer = module_get_function_pointer;
    }
    if (log) {
        log->pfnDestroy = build_log_destroy;
        log->pfnGetString = build_log_get_string;
    }
    if (kernel) {
        kernel->pfnCreate = kernel_create;
        kernel->pfnDestroy = kernel_destroy;
        kernel->pfnSetGroupSize = kernel_set_group_size;
        kernel->pfnSuggestGroupSize = kernel_suggest_group_size;
        kernel->pfnSetArgumentValue = kernel_set_argument_value;
    }
}
