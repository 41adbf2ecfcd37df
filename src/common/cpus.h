/* How many CPUs this process may run on: its affinity mask, lowered by a
 * cgroup v2 CPU quota (cpu.max of its cgroup and each one above it,
 * rounded up to whole CPUs). Launchers, containers and CI runners give a
 * job fewer CPUs than the machine has; a helper thread that spins on a
 * CPU the PEs need slows them down. */
#ifndef USHMEMI_CPUS_H
#define USHMEMI_CPUS_H

#include <stddef.h>

struct ushmemi_cpus {
    int affinity; /* CPUs in the affinity mask */
    int quota;    /* the cgroup quota in whole CPUs, rounded up; 0: none */
    int usable;   /* the smaller of the two (at least 1) */
};

void ushmemi_cpus_probe(struct ushmemi_cpus *c);

/* The same quota from a cgroup v2 tree (for tests): `cgroup_line` is the
 * "0::/path" line of /proc/self/cgroup, `root` the mount (/sys/fs/cgroup).
 * Returns whole CPUs rounded up, or 0 when no level has a quota. */
int ushmemi_cgroup_quota(const char *root, const char *cgroup_line);

#endif
