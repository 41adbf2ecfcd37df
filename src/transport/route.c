/* Names of routes and operation classes, as printed by ushmem_info
 * --topology, in messages, and by shmemx_route's users. */
#include "transport.h"

const char *ushmemi_route_name(enum ushmemi_route route)
{
    switch (route) {
    case USHMEMI_ROUTE_NONE:
        return "none";
    case USHMEMI_ROUTE_SELF:
        return "self";
    case USHMEMI_ROUTE_DIRECT:
        return "direct";
    case USHMEMI_ROUTE_PROXY_OFI:
        return "proxy/ofi";
    case USHMEMI_ROUTE_STAGED:
        return "staged";
    case USHMEMI_ROUTE_HOST_SYNC:
        return "host-sync";
    }
    return "unknown";
}

const char *ushmemi_op_class_name(enum ushmemi_op_class cls)
{
    switch (cls) {
    case USHMEMI_CLASS_RMA:
        return "RMA";
    case USHMEMI_CLASS_AMO:
        return "atomics";
    case USHMEMI_CLASS_SIGNAL:
        return "signals";
    case USHMEMI_CLASS_SYNC:
        return "synchronisation";
    case USHMEMI_CLASS_COUNT:
        break;
    }
    return "unknown";
}
