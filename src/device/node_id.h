/* The node's identity as every device backend reports it: the kernel's boot
 * id and a hash of boot id and host name that is equal on all processes of
 * one node and differs between nodes, whichever backend computed it. */
#ifndef USHMEMI_NODE_ID_H
#define USHMEMI_NODE_ID_H

#include <stddef.h>
#include <stdint.h>

/* The kernel's boot id as text (a UUID with dashes); "" when unreadable. */
void ushmemi_node_boot_id(char *buf, size_t len);

/* FNV-1a of "<boot id>/<host name>": the device_id.node_hash of every
 * backend, so that PEs on one node agree on it whatever backend they run.
 * With a simulated node set, its number is hashed in too. */
uint64_t ushmemi_node_hash(void);

/* Makes this process a PE of simulated node `node` (USHMEM_SIM_NODES):
 * from then on node_hash differs from that of the other simulated nodes of
 * the machine, so every layer that asks "same node?" sees the split. A
 * negative node turns the simulation off. Set before the device opens. */
void ushmemi_node_simulate(int node);

#endif
