/* The node identity shared by the device backends (node_id.h): one place
 * computes node_hash, so two backends can never disagree on what a node is. */
#include "node_id.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* FNV-1a: stable across processes and builds, which node_hash must be. */
static uint64_t fnv1a(uint64_t hash, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        hash ^= *p;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

void ushmemi_node_boot_id(char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f == NULL)
        return;
    if (fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

static int simulated_node = -1;

void ushmemi_node_simulate(int node) { simulated_node = node; }

uint64_t ushmemi_node_hash(void)
{
    char boot_id[64];
    char host[256] = "";

    ushmemi_node_boot_id(boot_id, sizeof(boot_id));
    if (boot_id[0] == '\0')
        ushmemi_debug("node identity: /proc/sys/kernel/random/boot_id unreadable; it rests on "
                      "the host name alone");
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    /* The boot id alone is shared by containers of one kernel that may not
     * see each other's processes; the host name tells them apart. */
    uint64_t hash = fnv1a(0xcbf29ce484222325ULL, boot_id);
    hash = fnv1a(hash, "/");
    hash = fnv1a(hash, host);
    if (simulated_node >= 0) {
        char sim[32];
        snprintf(sim, sizeof(sim), "/simulated node %d", simulated_node);
        hash = fnv1a(hash, sim);
    }
    return hash;
}
