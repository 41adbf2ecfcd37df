/* PCIe AtomicOps probe: reads PCI config space through sysfs and decides
 * whether 64-bit AtomicOps can travel from one device to another, naming the
 * device and the bit that decided it. It only reads files; it never touches
 * a device. */
#ifndef USHMEMI_PCIE_H
#define USHMEMI_PCIE_H

#include "../common/status.h"

enum ushmemi_tristate { USHMEMI_NO = 0, USHMEMI_YES = 1, USHMEMI_UNKNOWN = 2 };

struct ushmemi_pcie_atomics {
    enum ushmemi_tristate ok; /* 64-bit AtomicOps can go from src to dst */
    char why[256];            /* one sentence: the device and bit that decided, or why unknown */
};

/* root: the sysfs root ("/sys" normally; a fixture tree in tests); NULL means
 * "/sys". src_bdf, dst_bdf: full addresses such as "0000:3b:00.0".
 * A device or bridge whose config space cannot be read in full (64 bytes is
 * what an unprivileged reader gets) makes the answer UNKNOWN, never NO; a
 * definite NO anywhere on the path wins over an UNKNOWN elsewhere.
 * Returns USHMEM_ERR_INVALID_PARAM for a malformed address or missing
 * argument, USHMEM_ERR_NO_MEMORY; every sysfs problem is an UNKNOWN answer
 * with USHMEM_OK. */
ushmem_status_t ushmemi_pcie_atomics_path(const char *root, const char *src_bdf,
                                          const char *dst_bdf,
                                          struct ushmemi_pcie_atomics *result_p);

#endif
