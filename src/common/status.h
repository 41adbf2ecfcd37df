/* One status type for the whole library: errors negative, success zero.
 * The list below is the single source of names and messages. */
#ifndef USHMEMI_STATUS_H
#define USHMEMI_STATUS_H

#define USHMEMI_STATUS_LIST(X)                                                \
    X(OK, 0, "success")                                                       \
    X(ERR_NO_MEMORY, -1, "out of memory")                                     \
    X(ERR_INVALID_PARAM, -2, "invalid parameter")                             \
    X(ERR_INVALID_VALUE, -3, "malformed variable value")                      \
    X(ERR_UNSUPPORTED, -4, "operation not supported")                         \
    X(ERR_IO, -5, "input/output error")                                       \
    X(ERR_BOOTSTRAP, -6, "bootstrap (PMIx) failure")                          \
    X(ERR_NO_DEVICE, -7, "no usable device")                                  \
    X(ERR_DEVICE, -8, "device backend failure")                               \
    X(ERR_TRANSPORT, -9, "transport failure")                                 \
    X(ERR_FD_PASSING, -10, "file descriptor passing failed")                  \
    X(ERR_PERMISSION, -11, "permission denied")                               \
    X(ERR_TIMEOUT, -12, "timed out")                                          \
    X(ERR_NOT_INITIALIZED, -13, "ushmem is not initialized")                  \
    X(ERR_OUT_OF_RANGE, -14, "value out of range")                            \
    X(ERR_NO_ROUTE, -15, "no route to peer")                                  \
    X(ERR_BUSY, -16, "resource busy")

#define USHMEMI_STATUS_ENUM(name, value, msg) USHMEM_##name = (value),
typedef enum { USHMEMI_STATUS_LIST(USHMEMI_STATUS_ENUM) } ushmem_status_t;
#undef USHMEMI_STATUS_ENUM

/* "USHMEM_ERR_NO_MEMORY" */
const char *ushmemi_status_name(ushmem_status_t status);
/* "out of memory" */
const char *ushmemi_status_string(ushmem_status_t status);

#endif
