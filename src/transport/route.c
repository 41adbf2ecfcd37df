/* Names of route kinds, as printed by ushmem_info --topology and logs. */
#include "transport.h"

const char *ushmemi_route_name(enum ushmemi_route_kind route)
{
    switch (route) {
    case USHMEMI_ROUTE_NONE:
        return "none";
    case USHMEMI_ROUTE_SELF:
        return "self";
    case USHMEMI_ROUTE_DIRECT:
        return "direct";
    }
    return "unknown";
}
