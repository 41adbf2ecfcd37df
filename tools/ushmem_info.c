/* ushmem_info: version, build features, backends, transports and every
 * variable with its default, current value and help. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

#include "ushmem_config.h"
#include "../src/common/vars.h"
#include "../src/device/device.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ushmem_info [--help] [--version] [--variables]\n"
                 "Prints the ushmem version, build features, device backends, transports and\n"
                 "every variable (name, type, default, current value, help).\n");
}

static void print_backends(void)
{
    printf("Device backends (in order of preference):\n");
    for (int i = 0; ushmemi_device_backends[i] != NULL; i++) {
        const struct ushmemi_device_ops *ops = ushmemi_device_backends[i];
        struct ushmemi_device *dev;
        ushmem_status_t status = ops->open(0, 1, &dev);
        printf("  %-6s %s\n", ops->name,
               status == USHMEM_OK ? "available" : ushmemi_status_string(status));
        if (status == USHMEM_OK)
            ops->close(dev);
    }
}

int main(int argc, char **argv)
{
    int only_vars = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("ushmem %s\n", USHMEM_VERSION_STRING);
            return 0;
        } else if (strcmp(argv[i], "--variables") == 0) {
            only_vars = 1;
        } else {
            fprintf(stderr, "ushmem_info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    /* Malformed values are reported by the load and shown as their default. */
    ushmem_status_t status = ushmemi_vars_load();
    if (!only_vars) {
        printf("ushmem %s, OpenSHMEM %d.%d\n", USHMEM_VERSION_STRING, SHMEM_MAJOR_VERSION,
               SHMEM_MINOR_VERSION);
        printf("Build dependencies found: level-zero %s, cuda %s, libfabric %s\n",
               USHMEM_HAVE_ZE ? "yes" : "no", USHMEM_HAVE_CUDA ? "yes" : "no",
               USHMEM_HAVE_OFI ? "yes" : "no");
        print_backends();
        printf("Transports:\n"
               "  ipc    peers' heaps on this node mapped through file descriptors "
               "(pidfd_getfd, or SCM_RIGHTS over an abstract socket)\n");
        printf("Installed under %s\n", USHMEM_PREFIX);
    }
    printf("Variables:\n");
    ushmemi_vars_print(stdout);
    return status == USHMEM_OK ? 0 : 1;
}
