/* See cpus.h. */
#include "cpus.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* cpu.max holds "QUOTA PERIOD" or "max PERIOD". */
static int read_cpu_max(const char *path)
{
    FILE *f = fopen(path, "re");
    char quota[32];
    unsigned long long q, period;
    int cpus = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%31s %llu", quota, &period) == 2 && strcmp(quota, "max") != 0 &&
        sscanf(quota, "%llu", &q) == 1 && period > 0 && q > 0)
        cpus = (int)((q + period - 1) / period);
    fclose(f);
    return cpus;
}

int ushmemi_cgroup_quota(const char *root, const char *cgroup_line)
{
    char path[4096];
    int best = 0;

    if (strncmp(cgroup_line, "0::", 3) != 0)
        return 0;
    const char *rel = cgroup_line + 3;
    size_t n = strcspn(rel, "\n");
    if (snprintf(path, sizeof(path), "%s%.*s", root, (int)n, rel) >= (int)sizeof(path))
        return 0;
    /* From the process's own cgroup up to the root: the smallest quota. */
    size_t root_len = strlen(root);
    for (;;) {
        size_t len = strlen(path);
        if (len + sizeof("/cpu.max") > sizeof(path))
            return best;
        memcpy(path + len, "/cpu.max", sizeof("/cpu.max"));
        int q = read_cpu_max(path);
        path[len] = '\0';
        if (q > 0 && (best == 0 || q < best))
            best = q;
        char *slash = strrchr(path, '/');
        if (slash == NULL || (size_t)(slash - path) < root_len)
            break;
        *slash = '\0';
    }
    return best;
}

void ushmemi_cpus_probe(struct ushmemi_cpus *c)
{
    cpu_set_t own;
    char line[4096];

    c->affinity = 1;
    CPU_ZERO(&own);
    if (sched_getaffinity(0, sizeof(own), &own) == 0 && CPU_COUNT(&own) > 0)
        c->affinity = CPU_COUNT(&own);
    c->quota = 0;
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL)
            if (strncmp(line, "0::", 3) == 0) {
                c->quota = ushmemi_cgroup_quota("/sys/fs/cgroup", line);
                break;
            }
        fclose(f);
    }
    c->usable = c->quota > 0 && c->quota < c->affinity ? c->quota : c->affinity;
}
