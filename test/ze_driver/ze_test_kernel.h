/*
 * Kernel ABI of the ushmem Level Zero test driver.
 *
 * A "native binary" for this driver is a host ELF shared object (built for
 * the machine the tests run on). zeModuleCreate with ZE_MODULE_FORMAT_NATIVE
 * and the bytes of the .so loads it into the helper process, the driver's
 * stand-in for the GPU; zeKernelCreate looks the kernel name up with dlsym.
 *
 * A kernel is a function of type uzt_kernel_fn, exported with default
 * visibility under the kernel's name:
 *
 *     void my_kernel(const struct uzt_item *item, void *const *args);
 *
 * - item describes the calling work-item (all ids in three dimensions).
 * - args[i] points to a copy of the bytes given to zeKernelSetArgumentValue
 *   for argument i when the launch was appended (16-byte aligned); for a
 *   pointer argument, *(T **)args[i] is the pointer. pValue == NULL stands
 *   for a NULL pointer. Arguments never set point to zero bytes.
 *
 * Every work-item of a launch runs on its own thread of the helper, all of
 * them started before any runs, so work-items may wait for one another
 * (spin on a flag, count arrivals at a barrier). At most 1024 work-items per
 * launch. Device memory, imports and host allocations are plain pointers in
 * the helper; use C11 atomics on them for device-scope and system-scope
 * atomics (host allocations are shared with the application process).
 * Module globals (zeModuleGetGlobalPointer) live in the helper and are
 * reached from the application only through copies on a command list.
 *
 * uzt_item_current() returns the calling work-item's description from
 * anywhere in its call chain (thread-local; NULL outside a kernel). It is
 * exported by the helper executable, so a kernel module leaves it undefined
 * and links without -Wl,--no-undefined.
 */
#ifndef ZE_TEST_KERNEL_H
#define ZE_TEST_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uzt_item {
    uint32_t global_id[3];   /* group_id * group_size + local_id */
    uint32_t local_id[3];    /* within the group */
    uint32_t group_id[3];    /* which group */
    uint32_t group_size[3];  /* zeKernelSetGroupSize */
    uint32_t group_count[3]; /* ze_group_count_t of the launch */
};

typedef void (*uzt_kernel_fn)(const struct uzt_item *item, void *const *args);

const struct uzt_item *uzt_item_current(void);

#ifdef __cplusplus
}
#endif

#endif
