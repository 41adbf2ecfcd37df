/* The device state's fault record (include/ushmem/detail/device_state.h):
 * the host half, on the cpu backend. A device call that must end a kernel
 * for the caller's error (an NVSHMEM collective on a team id that is not a
 * team of the PE) writes why into the record and traps; the record is host
 * memory, and the library prints it once at its next call that ends the
 * job, at shmem_finalize, shmem_global_exit or exit. The last PE writes the
 * record here as device code writes it (ushmemi_dev_fault in
 * detail/device_cuda.h: the fields, a fence, ready), then every PE leaves
 * as argv[1] says:
 *
 *   exit         the last PE exit(3)s without shmem_finalize (the others
 *                wait: the launcher ends them, and a PE ended by a signal
 *                says nothing)
 *   finalize     shmem_finalize, then init again: a fresh record, which
 *                the last PE writes again, and it is said again at the
 *                second finalize; exit 0
 *   global-exit  shmem_global_exit(4) from the last PE
 *   fatal        a call with a PE out of range (the library ends the job)
 *   none         no record written: shmem_finalize, exit 0, nothing said
 *
 * device_fault.sh checks what was printed. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ushmem/device.h>

#include "mpe_check.h"

#define TEAM 77
#define CALL "nvshmemx_int_sum_reduce_block"

static int target; /* symmetric */

/* The record after init: there, and empty. */
static void check_fresh(void)
{
    const struct ushmem_device_fault *f =
        (const struct ushmem_device_fault *)(uintptr_t)ushmem_device_state.fault;
    MPE_CHECK(f != NULL, "no fault record in the device state (version %u)",
              ushmem_device_state.version);
    MPE_CHECK(f->ready == 0 && f->what == 0 && f->value == 0 && f->call[0] == '\0',
              "a fresh fault record holds ready %u what %d value %lld", f->ready, f->what,
              (long long)f->value);
}

/* As a device thread does on a team id that is not a team of this PE. */
static void write_fault(void)
{
    struct ushmem_device_fault *f =
        (struct ushmem_device_fault *)(uintptr_t)ushmem_device_state.fault;
    f->pe = ushmem_device_state.my_pe;
    f->what = USHMEM_DEVICE_FAULT_TEAM;
    f->value = TEAM;
    snprintf(f->call, sizeof(f->call), "%s", CALL);
    __atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "none";
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    check_fresh();
    shmem_barrier_all();
    if (me == npes - 1 && strcmp(mode, "none") != 0)
        write_fault();
    shmem_barrier_all();
    fflush(stdout);

    if (strcmp(mode, "exit") == 0) {
        if (me == npes - 1)
            exit(3);
        for (;;) /* the launcher ends this PE with the job */
            pause();
    }
    if (strcmp(mode, "global-exit") == 0) {
        if (me == npes - 1)
            shmem_global_exit(4);
        for (;;) /* the launcher ends this PE with the job */
            shmem_barrier_all();
    }
    if (strcmp(mode, "fatal") == 0 && me == npes - 1)
        shmem_putmem(&target, &me, sizeof(me), npes + 5);
    shmem_finalize();
    if (strcmp(mode, "finalize") == 0) {
        shmem_init();
        check_fresh();
        shmem_barrier_all();
        if (me == npes - 1)
            write_fault();
        shmem_finalize();
    }
    if (me == 0)
        printf("device_fault %s: done\n", mode);
    return 0;
}
