/*
 * Fabric topology of the test driver (the zeFabric*Exp extension): one
 * vertex per device, and between two distinct visible devices one edge of
 * model "XeLink" when UZT_LINK=xelink, none otherwise. That is
 * how Intel's driver shows Xe Link, and how a runtime tells it from PCIe
 * (where P2P atomics need AtomicOps on the path, which pcie-atomics claims
 * without checking).
 */
#include "uzt_driver.h"

#include <stdio.h>
#include <string.h>

struct uzt_vertex {
    uint32_t magic;
    struct uzt_device *dev;
};

struct uzt_edge {
    uint32_t magic;
    struct uzt_vertex *a, *b; /* a has the lower device index */
};

static struct uzt_vertex vertices[UZT_MAX_DEVICES];
static struct uzt_edge edges[UZT_MAX_DEVICES][UZT_MAX_DEVICES];

void uzt_fabric_init(void)
{
    for (uint32_t i = 0; i < uzt.ndev; i++)
        vertices[i] = (struct uzt_vertex){.magic = UZT_MAGIC_VERTEX, .dev = &uzt.dev[i]};
    for (uint32_t i = 0; i < uzt.ndev; i++) {
        for (uint32_t j = i + 1; j < uzt.ndev; j++)
            edges[i][j] =
                (struct uzt_edge){.magic = UZT_MAGIC_EDGE, .a = &vertices[i], .b = &vertices[j]};
    }
}

static struct uzt_vertex *vertex_of(const struct uzt_device *d)
{
    return &vertices[d->index];
}

static struct uzt_vertex *visible_vertex(ze_fabric_vertex_handle_t h)
{
    struct uzt_vertex *v = uzt_cast(h, UZT_MAGIC_VERTEX);

    return v && v->dev->visible ? v : NULL;
}

static ze_result_t device_get_fabric_vertex(ze_device_handle_t hDevice,
                                            ze_fabric_vertex_handle_t *phVertex)
{
    struct uzt_device *d = uzt_cast(hDevice, UZT_MAGIC_DEVICE);

    if (!d || !d->visible)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *phVertex = (ze_fabric_vertex_handle_t)vertex_of(d);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t vertex_get(ze_driver_handle_t hDriver, uint32_t *pCount,
                              ze_fabric_vertex_handle_t *phVertices)
{
    uint32_t n;

    if (!uzt_cast(hDriver, UZT_MAGIC_DRIVER))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (*pCount == 0 || !phVertices) {
        *pCount = uzt.nvisible;
        return ZE_RESULT_SUCCESS;
    }
    n = *pCount < uzt.nvisible ? *pCount : uzt.nvisible;
    for (uint32_t i = 0; i < n; i++)
        phVertices[i] = (ze_fabric_vertex_handle_t)vertex_of(uzt.visible[i]);
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t vertex_get_sub_vertices(ze_fabric_vertex_handle_t hVertex, uint32_t *pCount,
                                           ze_fabric_vertex_handle_t *phSubvertices)
{
    (void)phSubvertices;
    if (!visible_vertex(hVertex))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t vertex_get_properties(ze_fabric_vertex_handle_t hVertex,
                                         ze_fabric_vertex_exp_properties_t *p)
{
    struct uzt_vertex *v = visible_vertex(hVertex);

    if (!v)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uzt_device_uuid(v->dev, p->uuid.id);
    p->type = ZE_FABRIC_VERTEX_EXP_TYPE_DEVICE;
    p->remote = 0;
    p->address.domain = v->dev->pci.domain;
    p->address.bus = v->dev->pci.bus;
    p->address.device = v->dev->pci.device;
    p->address.function = v->dev->pci.function;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t vertex_get_device(ze_fabric_vertex_handle_t hVertex,
                                     ze_device_handle_t *phDevice)
{
    struct uzt_vertex *v = visible_vertex(hVertex);

    if (!v)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *phDevice = (ze_device_handle_t)v->dev;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t edge_get(ze_fabric_vertex_handle_t hVertexA, ze_fabric_vertex_handle_t hVertexB,
                            uint32_t *pCount, ze_fabric_edge_handle_t *phEdges)
{
    struct uzt_vertex *a = visible_vertex(hVertexA), *b = visible_vertex(hVertexB);
    uint32_t lo, hi;

    if (!a || !b)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (a == b || uzt.link != UZT_LINK_XELINK) {
        *pCount = 0;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount == 0 || !phEdges) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    lo = a->dev->index < b->dev->index ? a->dev->index : b->dev->index;
    hi = a->dev->index ^ b->dev->index ^ lo;
    phEdges[0] = (ze_fabric_edge_handle_t)&edges[lo][hi];
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t edge_get_vertices(ze_fabric_edge_handle_t hEdge,
                                     ze_fabric_vertex_handle_t *phVertexA,
                                     ze_fabric_vertex_handle_t *phVertexB)
{
    struct uzt_edge *e = uzt_cast(hEdge, UZT_MAGIC_EDGE);

    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *phVertexA = (ze_fabric_vertex_handle_t)e->a;
    *phVertexB = (ze_fabric_vertex_handle_t)e->b;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t edge_get_properties(ze_fabric_edge_handle_t hEdge,
                                       ze_fabric_edge_exp_properties_t *p)
{
    struct uzt_edge *e = uzt_cast(hEdge, UZT_MAGIC_EDGE);

    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* Like a device uuid, with 'e' and both indices. */
    memset(p->uuid.id, 0, sizeof p->uuid.id);
    memcpy(p->uuid.id, &uzt.node_hash, sizeof uzt.node_hash);
    p->uuid.id[8] = 'u';
    p->uuid.id[9] = 'z';
    p->uuid.id[10] = 'e';
    p->uuid.id[11] = (uint8_t)e->a->dev->index;
    p->uuid.id[12] = (uint8_t)e->b->dev->index;
    snprintf(p->model, sizeof p->model, "XeLink");
    p->bandwidth = 90; /* bytes per ns */
    p->bandwidthUnit = ZE_BANDWIDTH_UNIT_BYTES_PER_NANOSEC;
    p->latency = 1;
    p->latencyUnit = ZE_LATENCY_UNIT_HOP;
    p->duplexity = ZE_FABRIC_EDGE_EXP_DUPLEXITY_FULL_DUPLEX;
    return ZE_RESULT_SUCCESS;
}

void uzt_fabric_fill_tables(ze_device_exp_dditable_t *device,
                            ze_fabric_vertex_exp_dditable_t *vertex,
                            ze_fabric_edge_exp_dditable_t *edge)
{
    if (device)
        device->pfnGetFabricVertexExp = device_get_fabric_vertex;
    if (vertex) {
        vertex->pfnGetExp = vertex_get;
        vertex->pfnGetSubVerticesExp = vertex_get_sub_vertices;
        vertex->pfnGetPropertiesExp = vertex_get_properties;
        vertex->pfnGetDeviceExp = vertex_get_device;
    }
    if (edge) {
        edge->pfnGetExp = edge_get;
        edge->pfnGetVerticesExp = edge_get_vertices;
        edge->pfnGetPropertiesExp = edge_get_properties;
    }
}
