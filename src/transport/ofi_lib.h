/* libfabric, loaded when the ofi transport is first used rather than linked:
 * a program that never reaches a peer over a fabric never loads it, and one
 * that does keeps the signal dispositions it had. Some builds of libfabric
 * pull in libraries whose constructors install handlers for SIGSEGV,
 * SIGBUS, SIGILL, SIGABRT, SIGINT and SIGTERM (Debian's links
 * libpsm_infinipath): a crash would then print that library's backtrace
 * and exit 1 without a core, and SIGTERM would exit 1 instead of killing
 * the PE. The loader saves every disposition before it opens the library
 * and before the providers start (the first fi_getinfo), and puts back
 * whatever they changed. libfabric's calls that are not inline wrappers go
 * through the table below; the headers are the ones built against. */
#ifndef USHMEMI_TRANSPORT_OFI_LIB_H
#define USHMEMI_TRANSPORT_OFI_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "../common/status.h"

struct ushmemi_fi_api {
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
    uint32_t (*version)(void);
    int (*getparams)(struct fi_param **params, int *count);
    void (*freeparams)(struct fi_param *params);
};

/* Filled by ushmemi_fi_load; read-only afterwards. */
extern struct ushmemi_fi_api ushmemi_fi;

/* Loads libfabric once per process (the library found at build time, else
 * the system's libfabric.so.1), restoring the signal dispositions its
 * libraries change, and runs the providers' set-up (one fi_getinfo) under
 * the same guard. ERR_UNSUPPORTED when it cannot be loaded; *why_p then
 * says why (static storage). Safe to call from any thread. */
ushmem_status_t ushmemi_fi_load(const char **why_p);

/* What the load did, for ushmem_info: the library's path, and the signals
 * whose handlers its libraries had installed and the loader put back ("" when
 * none). Valid after a successful load. */
const char *ushmemi_fi_path(void);
const char *ushmemi_fi_restored_signals(void);

#endif
