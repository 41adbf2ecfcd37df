/* The cuda backend's peer probe: whether this device can load, store and
 * natively do atomics on a peer PE's device memory, and over which link.
 * The link matters to the routes: only a PCIe pair has its AtomicOps path
 * checked in config space (routes.c), so an NVLink pair reported as PCIe
 * would wrongly lose its atomics, and a PCIe pair reported as NVLink would
 * skip the check. The link is read from NVML, loaded at run time like
 * libcuda; without NVML the pair is reported as PCIe, the safe side. */
#include "cuda_private.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

/* The few NVML declarations needed, written out because nvml.h is not part
 * of the toolkit headers on every machine. Names and values as in nvml.h:
 *   nvmlReturn_t: NVML_SUCCESS = 0
 *   nvmlGpuP2PCapsIndex_t: NVML_P2P_CAPS_INDEX_READ = 0, _WRITE = 1, _NVLINK = 2
 *   nvmlGpuP2PStatus_t: NVML_P2P_STATUS_OK = 0
 *   nvmlDevice_t: pointer to the opaque struct nvmlDevice_st
 *   nvmlReturn_t nvmlInit_v2(void);
 *   nvmlReturn_t nvmlShutdown(void);
 *   const char *nvmlErrorString(nvmlReturn_t result);
 *   nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
 *   nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
 *                                       nvmlGpuP2PCapsIndex_t p2pIndex,
 *                                       nvmlGpuP2PStatus_t *p2pStatus); */
typedef int nvml_return;
typedef struct nvmlDevice_st *nvml_device;
enum { NVML_OK = 0, NVML_CAPS_INDEX_NVLINK = 2, NVML_STATUS_OK = 0 };

struct cuda_nvml {
    void *lib;
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*handle_by_bus_id)(const char *, nvml_device *);
    nvml_return (*p2p_status)(nvml_device, nvml_device, int, int *);
};

static void *nvml_symbol(void *lib, const char *name)
{
    void *sym = dlsym(lib, name);
    if (sym == NULL)
        ushmemi_debug("cuda backend: libnvidia-ml.so.1 has no %s", name);
    return sym;
}

/* Loads NVML once per device; NULL (and a debug line) when it is absent or
 * does not start, which makes every link "not identified". */
static struct cuda_nvml *nvml_get(struct ushmemi_device *dev)
{
    if (dev->nvml_tried)
        return dev->nvml;
    dev->nvml_tried = true;

    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *err = dlerror();
        ushmemi_debug("cuda backend: NVML not loaded (%s)", err != NULL ? err : "no reason given");
        return NULL;
    }
    struct cuda_nvml *nvml = calloc(1, sizeof(*nvml));
    if (nvml == NULL)
        goto close_lib;
    nvml->lib = lib;
    void *syms[5] = {nvml_symbol(lib, "nvmlInit_v2"), nvml_symbol(lib, "nvmlShutdown"),
                     nvml_symbol(lib, "nvmlErrorString"),
                     nvml_symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2"),
                     nvml_symbol(lib, "nvmlDeviceGetP2PStatus")};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
        if (syms[i] == NULL)
            goto free_nvml;
    /* Object to function pointers bytewise, as POSIX's dlsym allows. */
    memcpy(&nvml->init, &syms[0], sizeof(syms[0]));
    memcpy(&nvml->shutdown, &syms[1], sizeof(syms[1]));
    memcpy(&nvml->error_string, &syms[2], sizeof(syms[2]));
    memcpy(&nvml->handle_by_bus_id, &syms[3], sizeof(syms[3]));
    memcpy(&nvml->p2p_status, &syms[4], sizeof(syms[4]));
    nvml_return rc = nvml->init();
    if (rc != NVML_OK) {
        ushmemi_debug("cuda backend: nvmlInit_v2() answered %d (%s)", rc, nvml->error_string(rc));
        goto free_nvml;
    }
    dev->nvml = nvml;
    return nvml;

free_nvml:
    free(nvml);
close_lib:
    dlclose(lib);
    return NULL;
}

/* nvmlDeviceGetComputeRunningProcesses in its newest form the library
 * has, and this device's handle, found once (ushmemi_cuda_nvml_prepare).
 * The list's entries: a 32-bit pid first, then 8 bytes of memory used, then
 * (_v2 and _v3) two 32-bit instance ids: 24 bytes, 16 without. With no room
 * for the list it answers NVML_ERROR_INSUFFICIENT_SIZE (7) and the count. */
enum { NVML_INSUFFICIENT_SIZE = 7 };
typedef nvml_return (*processes_fn)(nvml_device, unsigned *, void *);
struct cuda_nvml_procs {
    processes_fn fn;
    size_t entry;
    nvml_device handle;
};

void ushmemi_cuda_nvml_prepare(struct ushmemi_device *dev)
{
    static const struct {
        const char *name;
        size_t entry;
    } forms[] = {{"nvmlDeviceGetComputeRunningProcesses_v3", 24},
                 {"nvmlDeviceGetComputeRunningProcesses_v2", 24},
                 {"nvmlDeviceGetComputeRunningProcesses", 16}};
    struct cuda_nvml *nvml = dev->id.pci_bdf[0] != '\0' ? nvml_get(dev) : NULL;
    if (nvml == NULL || dev->nvml_procs != NULL)
        return;
    struct cuda_nvml_procs *procs = calloc(1, sizeof(*procs));
    if (procs == NULL)
        return;
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]) && procs->fn == NULL; i++) {
        void *sym = dlsym(nvml->lib, forms[i].name);
        memcpy(&procs->fn, &sym, sizeof(sym));
        procs->entry = forms[i].entry;
    }
    if (procs->fn == NULL || nvml->handle_by_bus_id(dev->id.pci_bdf, &procs->handle) != NVML_OK) {
        free(procs);
        return;
    }
    dev->nvml_procs = procs;
}

int ushmemi_cuda_compute_processes(struct ushmemi_device *dev)
{
    struct cuda_nvml_procs *procs = dev->nvml_procs;
    if (procs == NULL)
        return -1;
    unsigned count = 0;
    nvml_return rc = procs->fn(procs->handle, &count, NULL);
    if (rc == NVML_OK)
        return 0;
    if (rc != NVML_INSUFFICIENT_SIZE)
        return -1;
    /* Distinct processes: a process with two contexts on the device (its
     * own and one for libfabric's GPU support) may be listed twice. */
    unsigned room = count + 8;
    unsigned char *list = calloc(room, procs->entry);
    if (list == NULL)
        return (int)count;
    count = room;
    if (procs->fn(procs->handle, &count, list) != NVML_OK) {
        free(list);
        return -1;
    }
    int distinct = 0;
    for (unsigned i = 0; i < count; i++) {
        uint32_t pid, other;
        bool seen = false;
        memcpy(&pid, list + (size_t)i * procs->entry, sizeof(pid));
        for (unsigned j = 0; j < i && !seen; j++) {
            memcpy(&other, list + (size_t)j * procs->entry, sizeof(other));
            seen = other == pid;
        }
        distinct += !seen;
    }
    free(list);
    return distinct;
}

void ushmemi_cuda_nvml_close(struct ushmemi_device *dev)
{
    free(dev->nvml_procs);
    dev->nvml_procs = NULL;
    if (dev->nvml == NULL)
        return;
    dev->nvml->shutdown();
    dlclose(dev->nvml->lib);
    free(dev->nvml);
    dev->nvml = NULL;
}

/* NVLink or PCIe between two devices, by PCI address; *how_p says how it
 * was decided, for the debug line. */
static enum ushmemi_link_kind link_between(struct ushmemi_device *dev, const char *peer_bdf,
                                           const char **how_p)
{
    if (dev->id.pci_bdf[0] == '\0' || peer_bdf[0] == '\0') {
        *how_p = "not identified (a PCI address is unknown); assumed PCIe";
        return USHMEMI_LINK_PCIE;
    }
    struct cuda_nvml *nvml = nvml_get(dev);
    if (nvml == NULL) {
        *how_p = "not identified (NVML unavailable); assumed PCIe";
        return USHMEMI_LINK_PCIE;
    }
    nvml_device mine, theirs;
    nvml_return rc = nvml->handle_by_bus_id(dev->id.pci_bdf, &mine);
    if (rc == NVML_OK)
        rc = nvml->handle_by_bus_id(peer_bdf, &theirs);
    if (rc != NVML_OK) {
        ushmemi_debug("cuda backend: nvmlDeviceGetHandleByPciBusId_v2(%s or %s) answered %d (%s)",
                      dev->id.pci_bdf, peer_bdf, rc, nvml->error_string(rc));
        *how_p = "not identified (NVML does not know a device); assumed PCIe";
        return USHMEMI_LINK_PCIE;
    }
    int p2p = -1;
    rc = nvml->p2p_status(mine, theirs, NVML_CAPS_INDEX_NVLINK, &p2p);
    if (rc != NVML_OK) {
        ushmemi_debug("cuda backend: nvmlDeviceGetP2PStatus(%s, %s, NVLINK) answered %d (%s)",
                      dev->id.pci_bdf, peer_bdf, rc, nvml->error_string(rc));
        *how_p = "not identified (NVML P2P status unavailable); assumed PCIe";
        return USHMEMI_LINK_PCIE;
    }
    if (p2p == NVML_STATUS_OK) {
        *how_p = "NVML: NVLink P2P status OK";
        return USHMEMI_LINK_NVLINK;
    }
    *how_p = "NVML: no NVLink between the two";
    return USHMEMI_LINK_PCIE;
}

/* The visible device with this UUID; false when the peer's GPU is not
 * visible to this process (CUDA_VISIBLE_DEVICES differs between PEs). */
static ushmem_status_t find_device(struct ushmemi_device *dev, const uint8_t uuid[16],
                                   CUdevice *cu_dev_p, bool *found_p)
{
    *found_p = false;
    for (int i = 0; i < dev->count; i++) {
        CUdevice d;
        CUuuid u;
        CUresult r = ushmemi_cu.cuDeviceGet(&d, i);
        if (r != CUDA_SUCCESS)
            return ushmemi_cuda_fail("cuDeviceGet", r, "ordinal %d of %d", i, dev->count);
        r = ushmemi_cu.cuDeviceGetUuid(&u, d);
        if (r != CUDA_SUCCESS)
            return ushmemi_cuda_fail("cuDeviceGetUuid_v2", r, "device %d", i);
        if (memcmp(u.bytes, uuid, 16) == 0) {
            *cu_dev_p = d;
            *found_p = true;
            return USHMEM_OK;
        }
    }
    return USHMEM_OK;
}

static ushmem_status_t p2p_attribute(struct ushmemi_device *dev, CUdevice peer,
                                     CUdevice_P2PAttribute attr, const char *name, int *value_p)
{
    CUresult r = ushmemi_cu.cuDeviceGetP2PAttribute(value_p, attr, dev->cu_dev, peer);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuDeviceGetP2PAttribute", r, "%s, device %d -> device %d", name,
                                 (int)dev->cu_dev, (int)peer);
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_p2p_probe(struct ushmemi_device *dev,
                                       const struct ushmemi_device_id *peer,
                                       struct ushmemi_p2p_caps *caps_p)
{
    struct ushmemi_p2p_caps caps = {false, false, false, USHMEMI_LINK_NONE};
    char peer_text[48];

    if (strncmp(peer->backend, "cuda", sizeof(peer->backend)) != 0 ||
        peer->node_hash != dev->id.node_hash) {
        *caps_p = caps;
        return USHMEM_OK;
    }
    if (memcmp(peer->uuid, dev->id.uuid, sizeof(peer->uuid)) == 0) {
        caps = (struct ushmemi_p2p_caps){true, true, true, USHMEMI_LINK_SAME_DEVICE};
        *caps_p = caps;
        return USHMEM_OK;
    }
    ushmemi_cuda_uuid_text(peer->uuid, peer_text, sizeof(peer_text));
    ushmem_status_t status = ushmemi_cuda_current(dev, "p2p_probe");
    if (status != USHMEM_OK)
        return status;

    CUdevice other;
    bool visible;
    status = find_device(dev, peer->uuid, &other, &visible);
    if (status != USHMEM_OK)
        return status;
    if (!visible) {
        const char *mask = getenv("CUDA_VISIBLE_DEVICES");
        ushmemi_debug("cuda backend: peer device %s (PCI %s) is not visible to this process "
                      "(CUDA_VISIBLE_DEVICES=%s): no peer access",
                      peer_text, peer->pci_bdf[0] ? peer->pci_bdf : "unknown",
                      mask != NULL ? mask : "unset");
        *caps_p = caps;
        return USHMEM_OK;
    }

    int can = 0, access = 0, atomics = 0;
    CUresult r = ushmemi_cu.cuDeviceCanAccessPeer(&can, dev->cu_dev, other);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuDeviceCanAccessPeer", r, "device %d -> device %d",
                                 (int)dev->cu_dev, (int)other);
    status = p2p_attribute(dev, other, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
                           "CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED", &access);
    if (status == USHMEM_OK)
        status = p2p_attribute(dev, other, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                               "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED", &atomics);
    if (status != USHMEM_OK)
        return status;

    const char *how;
    caps.access = can && access;
    caps.native_atomics = caps.access && atomics;
    caps.link = link_between(dev, peer->pci_bdf, &how);
    ushmemi_debug("cuda backend: device %d (PCI %s) -> %s (PCI %s): can access peer %d, access "
                  "supported %d, native atomics %d; link %s, %s",
                  dev->ordinal, dev->id.pci_bdf[0] ? dev->id.pci_bdf : "unknown", peer_text,
                  peer->pci_bdf[0] ? peer->pci_bdf : "unknown", can, access, atomics,
                  ushmemi_link_name(caps.link), how);
    *caps_p = caps;
    return USHMEM_OK;
}
