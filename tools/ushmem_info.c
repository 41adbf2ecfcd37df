/* ushmem_info: version, build features, backends, transports and every
 * variable with its default, current value and help; with --topology, run
 * under a launcher, the facts and routes of every pair of PEs. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ushmem_config.h"
#include "../src/common/cpus.h"
#include "../src/common/vars.h"
#include "../src/device/device.h"
#include "../src/host/topology.h"
#include "../src/transport/ofi.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ushmem_info [--help] [--version] [--variables] [--topology]\n"
                 "Prints the ushmem version, build features, device backends, transports and\n"
                 "every variable (name, type, default, current value, help).\n"
                 "--topology initialises the job (run it the way the program will run, e.g.\n"
                 "`oshrun -n 4 ushmem_info --topology`, with the same variables) and prints,\n"
                 "for every pair of PEs, the probed capabilities and the route each operation\n"
                 "class takes, with the reason. If some class has no route, shmem_init fails\n"
                 "with the message the program would get.\n");
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
        if (ops->describe != NULL) {
            char text[4096];
            ops->describe(text, sizeof(text));
            printf("%s", text);
        }
    }
}

/* What USHMEM_PROXY_IDLE's choices cost, and what auto takes here. */
static void print_idle(void)
{
    struct ushmemi_cpus c;
    ushmemi_cpus_probe(&c);
    printf("Helper threads when idle (the proxy, the fabric's progress thread; "
           "USHMEM_PROXY_IDLE=%s):\n", ushmemi_settings.proxy_idle);
    printf("  this process may use %d CPUs (%d in its affinity mask", c.usable, c.affinity);
    if (c.quota > 0)
        printf(", a cgroup quota of %d", c.quota);
    printf(")\n"
           "  spin   keeps polling: a device request after any quiet spell is taken at once;\n"
           "         costs one CPU core per PE while the job runs. Spinning helpers also\n"
           "         keep the fabric's path to landing peers warm (USHMEM_FABRIC_STAGING):\n"
           "         a header-only message every 0.5 ms to each peer with a landing\n"
           "         request in the last 10 s (four peers at most every 0.5 ms, in turn)\n"
           "  sleep  polls, then sleeps up to 1 ms: almost no CPU, but the first request\n"
           "         after a quiet spell waits for the sleep to end (up to about 1 ms)\n"
           "  auto   spin where the heap is on a GPU and each PE's proxy has a CPU of its\n"
           "         own, else sleep: a PE bound to one CPU (oshrun's default) has its\n"
           "         helpers on CPUs no PE is bound to, and needs one each for the node's\n"
           "         PEs and a cgroup quota, if any, of two CPUs a PE; an unbound one needs\n"
           "         twice the node's PEs in usable CPUs (here: up to %d PEs). The fabric's\n"
           "         progress thread spins too with room for two spinning helpers a PE\n"
           "         (two such CPUs and a quota of three a PE, or three usable a PE)\n"
           "  (ushmem_info --topology says what each PE of a job took, and why)\n",
           c.usable / 2);
}

/* Every PE writes its part; PE 0 gathers the parts and prints them in order. */
static int print_topology(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) {
        perror("ushmem_info: open_memstream");
        shmem_global_exit(1);
    }
    ushmemi_topology_write(f);
    fclose(f);

    long *lens = shmem_malloc(2 * sizeof(long));
    /* The heap may be device memory: only RMA calls touch it. */
    long mine = (long)len + 1, most = 0;
    shmem_putmem(&lens[0], &mine, sizeof(mine), me);
    shmem_long_max_reduce(SHMEM_TEAM_WORLD, &lens[1], &lens[0], 1);
    shmem_getmem(&most, &lens[1], sizeof(most), me);
    size_t slot = (size_t)most;
    char *part = shmem_malloc(slot);
    char *copy = malloc(slot);
    if (part == NULL || copy == NULL) {
        fprintf(stderr, "ushmem_info: no room for %zu bytes of topology text\n", slot);
        shmem_global_exit(1);
    }
    shmem_putmem(part, text, len + 1, me);
    shmem_barrier_all();
    if (me == 0) {
        printf("Topology of %d PEs (routes per operation class; facts as the route decision saw "
               "them):\n", npes);
        for (int pe = 0; pe < npes; pe++) {
            shmem_getmem(copy, part, slot, pe);
            copy[slot - 1] = '\0';
            fputs(copy, stdout);
        }
        fflush(stdout);
    }
    shmem_barrier_all();
    free(copy);
    free(text);
    shmem_free(part);
    shmem_free(lens);
    shmem_finalize();
    return 0;
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
        } else if (strcmp(argv[i], "--topology") == 0) {
            return print_topology();
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
               "(pidfd_getfd, or SCM_RIGHTS over an abstract socket)\n"
               "  ofi    libfabric RMA and atomics (%s; FI_PROVIDER picks the provider)\n",
               USHMEM_HAVE_OFI ? "built in" : "not built");
        char fabric[2048];
        ushmemi_ofi_describe(fabric, sizeof(fabric));
        fputs(fabric, stdout);
        print_idle();
        printf("Installed under %s\n", USHMEM_PREFIX);
        printf("Commands: oshcc, oshc++, oshcxx, oshnvcc and oshrun in %s, each naming ushmem in "
               "--version (Open MPI's OSHMEM has commands of the same names)\n", USHMEM_BINDIR);
    }
    printf("Variables:\n");
    ushmemi_vars_print(stdout);
    return status == USHMEM_OK ? 0 : 1;
}
