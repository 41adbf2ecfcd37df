/* The route table's construction (routes.c), private to the host layer. */
#ifndef USHMEMI_HOST_ROUTES_H
#define USHMEMI_HOST_ROUTES_H

#include "../common/status.h"
#include "../transport/transport.h"

/* Fills ushmemi_g.peers[*].route/why for every peer and class, opening the
 * fabric when some pair needs it. The peers' heaps (and data segments) must
 * be mapped already where they will be. Collective. On failure every PE
 * returns an error, each having logged what it knows. */
ushmem_status_t ushmemi_routes_build(const struct ushmemi_oob *oob);

/* Closes the fabric and frees the table's facts. */
void ushmemi_routes_close(void);

#endif
