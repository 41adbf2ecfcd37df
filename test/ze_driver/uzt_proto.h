/*
 * The contract between the test driver (inside the application) and its
 * helper process (the "device"): the fixed address regions both reserve, the
 * messages on their SOCK_SEQPACKET socket, and the futex-backed words in the
 * host region through which the helper reports progress and events.
 */
#ifndef UZT_PROTO_H
#define UZT_PROTO_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Both processes reserve these ranges at the same addresses. */
#define UZT_DEVICE_BASE 0x300000000000ULL
#define UZT_HOST_BASE 0x310000000000ULL
#define UZT_REGION_SIZE (1ULL << 40)
#define UZT_PAGE ((uint64_t)64 << 10)

#define UZT_MEMFD_DEVICE_PREFIX "ushmem-ze-test:dev"
#define UZT_MEMFD_HOST "ushmem-ze-test:host"
#define UZT_MEMFD_MODULE "ushmem-ze-test:module"

#define UZT_MAX_LISTS 1024 /* one 64-byte control slot each in a 64 KiB page */
#define UZT_MAX_WAITS 64   /* per message; more become extra barrier commands */
#define UZT_MAX_ARGS 32
#define UZT_MAX_ARGS_SIZE 4096
#define UZT_MAX_ITEMS 1024 /* work-items per launch, one helper thread each */
#define UZT_MAX_PATTERN 128
#define UZT_MSG_MAX 16384
#define UZT_NAME_MAX 256
#define UZT_TEXT_MAX 512

/* Requests from the driver. Every op but UZT_OP_COMMAND gets one reply. */
enum uzt_op {
    UZT_OP_MAP_DEVICE = 1, /* addr, size, dev: the helper creates the memfd and maps it */
    UZT_OP_MAP_FD,         /* addr, size + an fd: a host allocation or an import */
    UZT_OP_UNMAP,          /* addr, size: back to a PROT_NONE reservation */
    UZT_OP_EXPORT_FD,      /* addr of a device allocation: its memfd comes back */
    UZT_OP_LIST_CREATE,    /* handle = list slot, addr = its control slot */
    UZT_OP_LIST_DESTROY,   /* handle = list slot */
    UZT_OP_MODULE_LOAD,    /* + an fd holding a shared object: handle comes back */
    UZT_OP_MODULE_UNLOAD,  /* handle */
    UZT_OP_SYMBOL,         /* handle, name: address and size come back */
    UZT_OP_COMMAND,        /* struct uzt_cmd: queued on a list, no reply */
};

struct uzt_req {
    uint32_t op;
    uint32_t dev;
    uint64_t addr;
    uint64_t size;
    uint64_t handle;
    char name[UZT_NAME_MAX];
};

/* err is 0 or an errno value; text says what failed, for the driver's log. */
struct uzt_reply {
    int32_t err;
    uint32_t reserved;
    uint64_t a;
    uint64_t b;
    char text[UZT_TEXT_MAX];
};

enum uzt_cmd_kind {
    UZT_CMD_COPY = 1, /* memmove(dst, src, size) */
    UZT_CMD_FILL,     /* pattern (pattern_size bytes) repeated over dst..dst+size */
    UZT_CMD_BARRIER,  /* only the waits and the signal */
    UZT_CMD_RESET,    /* reset the event word at dst */
    UZT_CMD_LAUNCH,   /* struct uzt_launch and the argument bytes */
};

/*
 * A command: this header, nwait event-word addresses (uint64_t), then
 * payload_size bytes (the fill pattern, or a launch). The helper waits for
 * every wait event, runs the command, sets the signal event word if any, then
 * bumps the list's done counter.
 */
struct uzt_cmd {
    uint32_t op; /* UZT_OP_COMMAND */
    uint32_t kind;
    uint32_t list;
    uint32_t nwait;
    uint64_t signal;
    uint64_t dst;
    uint64_t src;
    uint64_t size;
    uint32_t pattern_size;
    uint32_t payload_size;
};

struct uzt_launch {
    uint64_t fn;
    uint32_t group_size[3];
    uint32_t group_count[3];
    uint32_t nargs;
    uint32_t arg_offset[UZT_MAX_ARGS]; /* into the bytes after this struct */
};

/* Per immediate list, in the host region: the helper counts finished commands. */
struct uzt_list_ctl {
    _Atomic uint32_t done;
    _Atomic uint32_t waiters;
    _Atomic uint32_t failed;
    uint32_t reserved[13];
};

/*
 * Event words, also in the host region: 0 reset, 1 signalled, 2 reset with a
 * sleeper in futex_wait (so the signaller knows to wake). A reset leaves 2 as
 * it is so that no sleeper is ever forgotten.
 */
enum { UZT_EV_RESET = 0, UZT_EV_SIGNALLED = 1, UZT_EV_SLEEPERS = 2 };

static inline long uzt_futex(_Atomic uint32_t *word, int op, uint32_t val,
                             const struct timespec *rel)
{
    /* Not FUTEX_PRIVATE_FLAG: the word is shared by two processes. */
    return syscall(SYS_futex, (uint32_t *)word, op, val, rel, NULL, 0);
}

static inline void uzt_futex_wake_all(_Atomic uint32_t *word)
{
    uzt_futex(word, FUTEX_WAKE, INT_MAX, NULL);
}

static inline void uzt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline bool uzt_event_is_set(_Atomic uint32_t *word)
{
    return atomic_load_explicit(word, memory_order_acquire) == UZT_EV_SIGNALLED;
}

static inline void uzt_event_set(_Atomic uint32_t *word)
{
    if (atomic_exchange(word, UZT_EV_SIGNALLED) == UZT_EV_SLEEPERS)
        uzt_futex_wake_all(word);
}

static inline void uzt_event_reset(_Atomic uint32_t *word)
{
    uint32_t expected = UZT_EV_SIGNALLED;

    atomic_compare_exchange_strong(word, &expected, UZT_EV_RESET);
}

/*
 * Sleeps at most slice_ns (0: no limit) until the event is set; returns true
 * once it is. Callers loop to apply their own deadline and checks.
 */
static inline bool uzt_event_sleep(_Atomic uint32_t *word, uint64_t slice_ns)
{
    struct timespec ts = {(time_t)(slice_ns / 1000000000u), (long)(slice_ns % 1000000000u)};
    uint32_t v = atomic_load(word);

    if (v == UZT_EV_SIGNALLED)
        return true;
    if (v == UZT_EV_RESET) {
        if (!atomic_compare_exchange_strong(word, &v, UZT_EV_SLEEPERS))
            return v == UZT_EV_SIGNALLED;
    }
    uzt_futex(word, FUTEX_WAIT, UZT_EV_SLEEPERS, slice_ns ? &ts : NULL);
    return uzt_event_is_set(word);
}

/* True once done has reached target (modulo 2^32). */
static inline bool uzt_seq_reached(uint32_t done, uint32_t target)
{
    return (int32_t)(done - target) >= 0;
}

/* Sends one message on sock, with fd attached (SCM_RIGHTS) when fd >= 0;
 * returns what sendmsg returned, retried on EINTR. */
static inline ssize_t uzt_send_with_fd(int sock, const void *buf, size_t len, int fd)
{
    struct iovec iov = {(void *)buf, len};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t n;

    if (fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        msg.msg_control = ctl.space;
        msg.msg_controllen = sizeof ctl.space;
        ctl.h.cmsg_level = SOL_SOCKET;
        ctl.h.cmsg_type = SCM_RIGHTS;
        ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(&ctl.h), &fd, sizeof fd);
    }
    while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return n;
}

#endif
