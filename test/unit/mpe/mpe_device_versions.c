/* A module of device code compiled against another ushmem's
 * <ushmem/device.h> is refused at shmem_init in one sentence that names
 * the versions (include/ushmem/detail/device_state.h): its kernels would
 * read the state at other places, or send the proxy requests it does not
 * know. Here a module of the cpu backend registers as a CUDA translation
 * unit does. The argument says with what: "same" (this header's versions:
 * the state is written into the module), "state" (another device state
 * version), "ring" (another ring protocol), "old" (no versions, as modules
 * compiled before they were told register). */
#include <shmem.h>
#include <string.h>

#include <ushmem/device.h>

#include "mpe_check.h"

static int filled;

static const char *fill(const struct ushmem_device_state *state)
{
    filled = state->version == USHMEM_DEVICE_STATE_VERSION;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "same";

    if (strcmp(how, "old") == 0)
        ushmemi_device_register("cpu", fill);
    else
        ushmemi_device_register_versions(
            "cpu", fill, USHMEM_DEVICE_STATE_VERSION + (strcmp(how, "state") == 0 ? 1u : 0u),
            USHMEM_RING_VERSION - (strcmp(how, "ring") == 0 ? 1u : 0u));
    shmem_init();
    MPE_CHECK(filled, "the module's copy of the device state was not written");
    shmem_finalize();
    return 0;
}
