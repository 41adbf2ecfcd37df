/* NVSHMEM's <nvshmemx.h> under ushmem: its extensions are declared with the
 * rest by <nvshmem.h> (this folder), which this header brings. */
#ifndef USHMEM_NVSHMEMX_H
#define USHMEM_NVSHMEMX_H

#include "nvshmem.h"

#endif /* USHMEM_NVSHMEMX_H */
