/*
 * libze_ushmem_test.so: a Level Zero driver for the CPU that behaves like a
 * discrete GPU, a test fixture for ushmem's ze backend. Debian's loader
 * (1.8.12, API 1.4) loads it through
 *
 *     ZE_ENABLE_ALT_DRIVERS=/abs/path/libze_ushmem_test.so
 *
 * also under ZE_ENABLE_VALIDATION_LAYER=1 ZE_ENABLE_PARAMETER_VALIDATION=1.
 *
 * Design
 * ------
 * zeInit reserves two 1 TiB PROT_NONE regions at fixed addresses, the device
 * region at 0x300000000000 and the host region at 0x310000000000, and spawns
 * ushmem-ze-helper (found next to this library, or at UZT_HELPER),
 * which forks once so that it is nobody's child to reap; it reserves the same
 * regions and plays the GPU. They talk over a SOCK_SEQPACKET socket
 * (uzt_proto.h); the helper leaves when the socket reaches end of file.
 *
 * - Device memory (zeMemAllocDevice) is a memfd "ushmem-ze-test:dev<i>" that
 *   only the helper maps; in the application the range stays PROT_NONE, so a
 *   CPU load or store faults (SIGSEGV) as it would on a discrete GPU.
 * - Host memory (zeMemAllocHost) is a memfd mapped at the same address in
 *   both processes. Shared memory (zeMemAllocShared) is refused.
 * - IPC handles carry a dup of the device memfd; every zeMemOpenIpcHandle
 *   maps a new range, released with zeMemCloseIpcHandle.
 * - An immediate command list is a FIFO with a thread in the helper; appends
 *   return once queued. Appends touching app-private (malloc) memory run in
 *   the driver after the list drains, staged through a 4 MiB bounce buffer.
 * - Events are words in the host region (futex waits), seen by both.
 * - Modules are host shared objects the helper dlopens; each work-item of a
 *   launch runs on a thread of its own (ze_test_kernel.h has the ABI).
 *
 * Files: ze_test_driver.c (this: table getters, driver, device, context),
 * uzt_init.c (zeInit, settings, the helper, the socket), uzt_mem.c (memory,
 * IPC), uzt_cmd.c (lists, queues), uzt_event.c (events), uzt_module.c
 * (modules, kernels), uzt_fabric.c (fabric vertices and edges), uzt_helper.c
 * (the helper), uzt_proto.h (their contract).
 *
 * Variables (read once, at the first zeInit)
 * ------------------------------------------
 * UZT_DEVICES=N             devices on the node, 1..16 (default 1); device i
 *                           is the same physical device in every process
 * ZE_AFFINITY_MASK=i,j,...  plain indices: the devices zeDeviceGet returns
 *                           (identities do not change; unknown indices are
 *                           ignored, other syntax fails zeInit)
 * UZT_LINK=xelink|pcie|pcie-atomics|none   (default xelink) between distinct
 *                           devices: P2P ACCESS|ATOMICS, ACCESS, ACCESS|ATOMICS
 *                           (claimed without AtomicOps), 0; xelink also gives
 *                           each pair a fabric edge of model "XeLink"
 *                           (zeFabricEdgeGetExp), the others none
 * UZT_PCI_BDFS=0000:3b:00.0,...  one PCI address per device
 *                           (default 0000:<0x10+i>:00.0)
 * UZT_HELPER=path           the helper executable
 * UZT_SHARED_LOG=path       each zeMemAllocShared call appends a line
 * UZT_IPC_CORRUPT=size|node  (read at each zeMemGetIpcHandle) handles claim a
 *                           page too many, or another node: importers' errors
 * A malformed value makes zeInit fail with ZE_RESULT_ERROR_UNINITIALIZED and a
 * line on stderr. Every message of the driver starts with "ze test driver:".
 *
 * Device identity: uuid = the node hash (FNV-1a 64 of the text of
 * /proc/sys/kernel/random/boot_id without its newline, little-endian), 'u'
 * 'z' 't', the device index, zeros; name "ushmem test GPU <i>", vendor
 * 0x8086, device 0x0bd5, discrete; PCI address as above.
 *
 * IPC handle (64 bytes): int32 fd at 0 (the importer writes its own), "UZT1"
 * at 4, uint64 allocation size at 8 (64 KiB multiple, the memfd's size),
 * uint32 device index at 16, uint64 node hash at 20, zeros after. The
 * exporter keeps one fd per allocation until zeMemFree; an importer may close
 * its fd once zeMemOpenIpcHandle returns (the helper holds its own copy).
 *
 * Limits: allocations up to 64 GiB (rounded up to 64 KiB), 1024 immediate
 * lists and queues at once, fill patterns of 1..128 bytes (powers of two),
 * 1024 work-items per launch, kernel arguments up to 4 KiB in all.
 */
#include "uzt_driver.h"

#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ze_result_t check_version(ze_api_version_t version)
{
    /* Tables only grow within a major version: fill what this header knows. */
    return ZE_MAJOR_VERSION(version) == ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT)
               ? ZE_RESULT_SUCCESS
               : ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
}

static struct uzt_device *visible_device(ze_device_handle_t h)
{
    struct uzt_device *d = uzt_cast(h, UZT_MAGIC_DEVICE);

    return d && d->visible ? d : NULL;
}

/* ---- driver ------------------------------------------------------------ */

static ze_result_t driver_get(uint32_t *pCount, ze_driver_handle_t *phDrivers)
{
    if (*pCount == 0 || !phDrivers) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    phDrivers[0] = (ze_driver_handle_t)&uzt;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get_api_version(ze_driver_handle_t hDriver, ze_api_version_t *version)
{
    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *version = ZE_API_VERSION_CURRENT;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get_properties(ze_driver_handle_t hDriver, ze_driver_properties_t *props)
{
    static const uint8_t uuid[ZE_MAX_DRIVER_UUID_SIZE] = "ushmem-ze-test1";

    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    memcpy(props->uuid.id, uuid, sizeof uuid);
    props->driverVersion = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get_ipc_properties(ze_driver_handle_t hDriver,
                                             ze_driver_ipc_properties_t *props)
{
    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    props->flags = ZE_IPC_PROPERTY_FLAG_MEMORY;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get_extension_properties(ze_driver_handle_t hDriver, uint32_t *pCount,
                                                   ze_driver_extension_properties_t *props)
{
    (void)props;
    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

/* ---- device ------------------------------------------------------------ */

static ze_result_t device_get(ze_driver_handle_t hDriver, uint32_t *pCount,
                              ze_device_handle_t *phDevices)
{
    uint32_t n;

    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (*pCount == 0 || !phDevices) {
        *pCount = uzt.nvisible;
        return ZE_RESULT_SUCCESS;
    }
    n = *pCount < uzt.nvisible ? *pCount : uzt.nvisible;
    for (uint32_t i = 0; i < n; i++)
        phDevices[i] = (ze_device_handle_t)uzt.visible[i];
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_sub_devices(ze_device_handle_t hDevice, uint32_t *pCount,
                                          ze_device_handle_t *phSubdevices)
{
    (void)phSubdevices;
    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

void uzt_device_uuid(const struct uzt_device *d, uint8_t uuid[16])
{
    memset(uuid, 0, 16);
    memcpy(uuid, &uzt.node_hash, sizeof uzt.node_hash);
    uuid[8] = 'u';
    uuid[9] = 'z';
    uuid[10] = 't';
    uuid[11] = (uint8_t)d->index;
}

static ze_result_t device_get_properties(ze_device_handle_t hDevice, ze_device_properties_t *p)
{
    struct uzt_device *d = visible_device(hDevice);

    if (!d)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->type = ZE_DEVICE_TYPE_GPU;
    p->vendorId = 0x8086;
    p->deviceId = 0x0bd5;
    p->flags = 0; /* discrete: no ZE_DEVICE_PROPERTY_FLAG_INTEGRATED */
    p->subdeviceId = 0;
    p->coreClockRate = 1600;
    p->maxMemAllocSize = UZT_MAX_ALLOC_SIZE;
    p->maxHardwareContexts = 64;
    p->maxCommandQueuePriority = 0;
    p->numThreadsPerEU = 8;
    p->physicalEUSimdWidth = 16;
    p->numEUsPerSubslice = 8;
    p->numSubslicesPerSlice = 8;
    p->numSlices = 1;
    p->timerResolution = 1;
    p->timestampValidBits = 64;
    p->kernelTimestampValidBits = 32;
    uzt_device_uuid(d, p->uuid.id);
    snprintf(p->name, sizeof p->name, "ushmem test GPU %u", d->index);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_compute_properties(ze_device_handle_t hDevice,
                                                 ze_device_compute_properties_t *p)
{
    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->maxTotalGroupSize = UZT_MAX_ITEMS;
    p->maxGroupSizeX = UZT_MAX_ITEMS;
    p->maxGroupSizeY = UZT_MAX_ITEMS;
    p->maxGroupSizeZ = UZT_MAX_ITEMS;
    p->maxGroupCountX = UZT_MAX_ITEMS;
    p->maxGroupCountY = UZT_MAX_ITEMS;
    p->maxGroupCountZ = UZT_MAX_ITEMS;
    p->maxSharedLocalMemory = 64 << 10;
    p->numSubGroupSizes = 3;
    memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
    p->subGroupSizes[0] = 8;
    p->subGroupSizes[1] = 16;
    p->subGroupSizes[2] = 32;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_module_properties(ze_device_handle_t hDevice,
                                                ze_device_module_properties_t *p)
{
    static const uint8_t native[ZE_MAX_NATIVE_KERNEL_UUID_SIZE] = "uzt host ELF so";
    const ze_device_fp_flags_t fp = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN |
                                    ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_FMA;

    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->spirvVersionSupported = 0;
    p->flags = ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
    p->fp16flags = 0;
    p->fp32flags = fp;
    p->fp64flags = fp;
    p->maxArgumentsSize = UZT_MAX_ARGS_SIZE;
    p->printfBufferSize = 1 << 20;
    memcpy(p->nativeKernelSupported.id, native, sizeof native);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_queue_groups(ze_device_handle_t hDevice, uint32_t *pCount,
                                           ze_command_queue_group_properties_t *p)
{
    const ze_command_queue_group_property_flags_t flags[UZT_NUM_ORDINALS] = {
        ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY,
        ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY};
    uint32_t n;

    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (*pCount == 0 || !p) {
        *pCount = UZT_NUM_ORDINALS;
        return ZE_RESULT_SUCCESS;
    }
    n = *pCount < UZT_NUM_ORDINALS ? *pCount : UZT_NUM_ORDINALS;
    for (uint32_t i = 0; i < n; i++) {
        p[i].flags = flags[i];
        p[i].maxMemoryFillPatternSize = UZT_MAX_PATTERN;
        p[i].numQueues = uzt_queues_per_ordinal[i];
    }
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_memory_properties(ze_device_handle_t hDevice, uint32_t *pCount,
                                                ze_device_memory_properties_t *p)
{
    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (*pCount == 0 || !p) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    p->flags = 0;
    p->maxClockRate = 1600;
    p->maxBusWidth = 4096;
    p->totalSize = UZT_MAX_ALLOC_SIZE;
    snprintf(p->name, sizeof p->name, "HBM");
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_memory_access_properties(ze_device_handle_t hDevice,
                                                       ze_device_memory_access_properties_t *p)
{
    const ze_memory_access_cap_flags_t rw =
        ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC |
        ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;

    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->hostAllocCapabilities = rw;
    p->deviceAllocCapabilities = rw;
    p->sharedSingleDeviceAllocCapabilities = 0;
    p->sharedCrossDeviceAllocCapabilities = 0;
    p->sharedSystemAllocCapabilities = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_device_p2p_property_flags_t p2p_flags(const struct uzt_device *a,
                                                const struct uzt_device *b)
{
    const ze_device_p2p_property_flags_t both =
        ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS;

    if (a == b)
        return both;
    switch (uzt.link) {
    case UZT_LINK_XELINK:
    case UZT_LINK_PCIE_ATOMICS: /* like a driver that never checks AtomicOps */
        return both;
    case UZT_LINK_PCIE:
        return ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS;
    case UZT_LINK_NONE:
        break;
    }
    return 0;
}

static ze_result_t device_get_p2p_properties(ze_device_handle_t hDevice, ze_device_handle_t hPeer,
                                             ze_device_p2p_properties_t *p)
{
    struct uzt_device *a = visible_device(hDevice), *b = visible_device(hPeer);

    if (!a || !b)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->flags = p2p_flags(a, b);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_can_access_peer(ze_device_handle_t hDevice, ze_device_handle_t hPeer,
                                          ze_bool_t *value)
{
    struct uzt_device *a = visible_device(hDevice), *b = visible_device(hPeer);

    if (!a || !b)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *value = (p2p_flags(a, b) & ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS) != 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_status(ze_device_handle_t hDevice)
{
    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return uzt_helper_alive() ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_DEVICE_LOST;
}

static ze_result_t device_get_global_timestamps(ze_device_handle_t hDevice, uint64_t *host,
                                                uint64_t *device)
{
    if (!visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *host = uzt_now_ns();
    *device = *host;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_pci_get_properties(ze_device_handle_t hDevice, ze_pci_ext_properties_t *p)
{
    struct uzt_device *d = visible_device(hDevice);

    if (!d)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->address = d->pci;
    p->maxSpeed.genVersion = 4;
    p->maxSpeed.width = 16;
    p->maxSpeed.maxBandwidth = 32000000000;
    return ZE_RESULT_SUCCESS;
}

/* ---- context ----------------------------------------------------------- */

static ze_result_t context_create(ze_driver_handle_t hDriver, const ze_context_desc_t *desc,
                                  ze_context_handle_t *phContext)
{
    struct uzt_context *c;

    (void)desc;
    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    c = calloc(1, sizeof *c);
    if (!c)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    c->magic = UZT_MAGIC_CONTEXT;
    *phContext = (ze_context_handle_t)c;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_destroy(ze_context_handle_t hContext)
{
    struct uzt_context *c = uzt_cast(hContext, UZT_MAGIC_CONTEXT);

    if (!c)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    c->magic = 0;
    free(c);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_get_status(ze_context_handle_t hContext)
{
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return uzt_helper_alive() ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_DEVICE_LOST;
}

static ze_result_t context_make_memory_resident(ze_context_handle_t hContext,
                                                ze_device_handle_t hDevice, void *ptr, size_t size)
{
    (void)ptr, (void)size;
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT) || !visible_device(hDevice))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return ZE_RESULT_SUCCESS;
}

/* ---- the tables the loader asks for ------------------------------------ */

#define UZT_EXPORT ZE_DLLEXPORT ze_result_t ZE_APICALL

UZT_EXPORT zeGetGlobalProcAddrTable(ze_api_version_t version, ze_global_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    t->pfnInit = uzt_init;
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    t->pfnGet = driver_get;
    t->pfnGetApiVersion = driver_get_api_version;
    t->pfnGetProperties = driver_get_properties;
    t->pfnGetIpcProperties = driver_get_ipc_properties;
    t->pfnGetExtensionProperties = driver_get_extension_properties;
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    t->pfnGet = device_get;
    t->pfnGetSubDevices = device_get_sub_devices;
    t->pfnGetProperties = device_get_properties;
    t->pfnGetComputeProperties = device_get_compute_properties;
    t->pfnGetModuleProperties = device_get_module_properties;
    t->pfnGetCommandQueueGroupProperties = device_get_queue_groups;
    t->pfnGetMemoryProperties = device_get_memory_properties;
    t->pfnGetMemoryAccessProperties = device_get_memory_access_properties;
    t->pfnGetP2PProperties = device_get_p2p_properties;
    t->pfnCanAccessPeer = device_can_access_peer;
    t->pfnGetStatus = device_get_status;
    t->pfnGetGlobalTimestamps = device_get_global_timestamps;
    t->pfnPciGetPropertiesExt = device_pci_get_properties;
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetContextProcAddrTable(ze_api_version_t version, ze_context_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    t->pfnCreate = context_create;
    t->pfnDestroy = context_destroy;
    t->pfnGetStatus = context_get_status;
    t->pfnMakeMemoryResident = context_make_memory_resident;
    t->pfnEvictMemory = context_make_memory_resident;
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetCommandQueueProcAddrTable(ze_api_version_t version, ze_command_queue_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_cmd_fill_tables(t, NULL);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetCommandListProcAddrTable(ze_api_version_t version, ze_command_list_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_cmd_fill_tables(NULL, t);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetEventPoolProcAddrTable(ze_api_version_t version, ze_event_pool_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_event_fill_tables(t, NULL);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_event_fill_tables(NULL, t);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetMemProcAddrTable(ze_api_version_t version, ze_mem_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    t->pfnAllocShared = uzt_mem_alloc_shared;
    t->pfnAllocDevice = uzt_mem_alloc_device;
    t->pfnAllocHost = uzt_mem_alloc_host;
    t->pfnFree = uzt_mem_free;
    t->pfnGetAllocProperties = uzt_mem_get_alloc_properties;
    t->pfnGetAddressRange = uzt_mem_get_address_range;
    t->pfnGetIpcHandle = uzt_mem_get_ipc_handle;
    t->pfnOpenIpcHandle = uzt_mem_open_ipc_handle;
    t->pfnCloseIpcHandle = uzt_mem_close_ipc_handle;
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetModuleProcAddrTable(ze_api_version_t version, ze_module_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_module_fill_tables(t, NULL, NULL);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetModuleBuildLogProcAddrTable(ze_api_version_t version,
                                            ze_module_build_log_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_module_fill_tables(NULL, t, NULL);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetKernelProcAddrTable(ze_api_version_t version, ze_kernel_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_module_fill_tables(NULL, NULL, t);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetDeviceExpProcAddrTable(ze_api_version_t version, ze_device_exp_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_fabric_fill_tables(t, NULL, NULL);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetFabricVertexExpProcAddrTable(ze_api_version_t version,
                                             ze_fabric_vertex_exp_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_fabric_fill_tables(NULL, t, NULL);
    return ZE_RESULT_SUCCESS;
}

UZT_EXPORT zeGetFabricEdgeExpProcAddrTable(ze_api_version_t version,
                                           ze_fabric_edge_exp_dditable_t *t)
{
    ze_result_t r = check_version(version);

    if (r != ZE_RESULT_SUCCESS || !t)
        return t ? r : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(t, 0, sizeof *t);
    uzt_fabric_fill_tables(NULL, NULL, t);
    return ZE_RESULT_SUCCESS;
}

/*
 * Tables with nothing implemented: the loader requires the getters; every
 * entry left NULL answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE. The ze tables
 * are cleared, the tools (zet) and sysman (zes) ones left as the loader gave
 * them.
 */
#define UZT_EMPTY_ZE_TABLES(X)                                   \
    X(zeGetFenceProcAddrTable, ze_fence_dditable_t)              \
    X(zeGetImageProcAddrTable, ze_image_dditable_t)              \
    X(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t) \
    X(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)          \
    X(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)   \
    X(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)       \
    X(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)       \
    X(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)

#define UZT_TOOL_TABLES(X)                                                     \
    X(zetGetDeviceProcAddrTable, zet_device_dditable_t)                        \
    X(zetGetContextProcAddrTable, zet_context_dditable_t)                      \
    X(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)             \
    X(zetGetKernelProcAddrTable, zet_kernel_dditable_t)                        \
    X(zetGetModuleProcAddrTable, zet_module_dditable_t)                        \
    X(zetGetDebugProcAddrTable, zet_debug_dditable_t)                          \
    X(zetGetMetricProcAddrTable, zet_metric_dditable_t)                        \
    X(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)             \
    X(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)      \
    X(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)             \
    X(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)    \
    X(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)       \
    X(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)                 \
    X(zesGetDeviceProcAddrTable, zes_device_dditable_t)                        \
    X(zesGetDriverProcAddrTable, zes_driver_dditable_t)                        \
    X(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)              \
    X(zesGetEngineProcAddrTable, zes_engine_dditable_t)                        \
    X(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)               \
    X(zesGetFanProcAddrTable, zes_fan_dditable_t)                              \
    X(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)                    \
    X(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)                  \
    X(zesGetLedProcAddrTable, zes_led_dditable_t)                              \
    X(zesGetMemoryProcAddrTable, zes_memory_dditable_t)                        \
    X(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t) \
    X(zesGetPowerProcAddrTable, zes_power_dditable_t)                          \
    X(zesGetPsuProcAddrTable, zes_psu_dditable_t)                              \
    X(zesGetRasProcAddrTable, zes_ras_dditable_t)                              \
    X(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)                  \
    X(zesGetStandbyProcAddrTable, zes_standby_dditable_t)                      \
    X(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)

#define UZT_DEFINE_EMPTY_ZE(name, type)                  \
    UZT_EXPORT name(ze_api_version_t version, type *t)   \
    {                                                    \
        if (!t)                                          \
            return ZE_RESULT_ERROR_INVALID_NULL_POINTER; \
        memset(t, 0, sizeof *t);                         \
        return check_version(version);                   \
    }
#define UZT_DEFINE_TOOL(name, type)                    \
    UZT_EXPORT name(ze_api_version_t version, type *t) \
    {                                                  \
        (void)t;                                       \
        return check_version(version);                 \
    }

UZT_EMPTY_ZE_TABLES(UZT_DEFINE_EMPTY_ZE)
UZT_TOOL_TABLES(UZT_DEFINE_TOOL)
