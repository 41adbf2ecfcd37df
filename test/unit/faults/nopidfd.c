/* LD_PRELOAD helper for tests: makes pidfd_getfd fail with EPERM in the
 * process and everything it starts, as a container's seccomp profile does
 * for a process without CAP_SYS_PTRACE (Docker's default profile, for one).
 * Dropping the target's dumpable flag cannot do it here: dumpable is reset
 * on exec, and a root caller with CAP_SYS_PTRACE passes the ptrace check
 * regardless. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

__attribute__((constructor)) static void refuse_pidfd_getfd(void)
{
#ifdef THIS_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0)
        return;
#endif
    /* The test checks the route taken, so a filter that is not in place
     * shows up there; say why here. */
    perror("nopidfd: cannot install the seccomp filter");
}
