/* The text of `ushmem_info --topology` (topology.c). */
#ifndef USHMEMI_HOST_TOPOLOGY_H
#define USHMEMI_HOST_TOPOLOGY_H

#include <stdio.h>

/* Writes this PE's facts and routes for every peer. After shmem_init. */
void ushmemi_topology_write(FILE *out);

#endif
