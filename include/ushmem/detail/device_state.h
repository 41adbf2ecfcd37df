/* The state that device-API code reads (include/ushmem/device.h): who this PE
 * is, where its heap starts, for every PE the mapped heap base and, per
 * operation class, whether the class goes there directly or through the proxy
 * ring. The host layer fills it at shmem_init (src/host/device_api.c) and
 * clears it at shmem_finalize; device code only reads it.
 *
 * Everything it points to is reachable by the device that runs the calls:
 * the peer table and the barrier's epoch live in this PE's symmetric heap
 * (device memory on a GPU, read through the GPU's caches), the ring in host
 * memory pinned and mapped for the device. A GPU module holds its own copy
 * of the struct itself, written by the host at init (see device.h).
 *
 * Addresses are kept as 64-bit integers and the layout is asserted, so that
 * the same bytes mean the same thing to C, C++, CUDA and SYCL compilers. */
#ifndef USHMEM_DETAIL_DEVICE_STATE_H
#define USHMEM_DETAIL_DEVICE_STATE_H

#if !defined(__OPENCL_C_VERSION__) /* OpenCL C has neither: ring.h defines the types */
#include <stddef.h>
#include <stdint.h>
#endif

#include <ushmem/detail/ring.h>

/* Bumped on any change to the layout below, or to what device code keeps
 * in the reserved heap words it names (9: the barrier's mark; 10: the
 * fault record). */
#define USHMEM_DEVICE_STATE_VERSION 10

/* Operation classes, numbered as the host's route table numbers them. */
enum ushmem_device_class {
    USHMEM_DEVICE_CLASS_RMA = 0,
    USHMEM_DEVICE_CLASS_AMO = 1,
    USHMEM_DEVICE_CLASS_SIGNAL = 2,
    USHMEM_DEVICE_CLASS_SYNC = 3, /* the device barrier */
    USHMEM_DEVICE_CLASS_COUNT = 4,
};

/* How device code reaches one PE. */
struct ushmem_device_peer {
    uint64_t heap_base; /* the PE's heap mapped into this process; 0 when not mapped */
    /* Per class: 1 when loads, stores and atomics on heap_base are the route
     * (direct, or this PE itself), 0 when requests go through the proxy. */
    uint8_t direct[USHMEM_DEVICE_CLASS_COUNT];
    uint8_t pad[4];
};

#define USHMEM_DEVICE_NEAR_PES 16

/* Teams by their ids (shmemx_team_id: 0 the world, 1 shared, 2 node,
 * USHMEMX_TEAM_ID_SPLIT and up the split ones), as this PE knows them:
 * the world PEs start + i * stride for i < size, this PE being member
 * my_index. A size of 0: no live team of that id on this PE. */
#define USHMEM_DEVICE_TEAMS 261
struct ushmem_device_team {
    int32_t start, stride, size, my_index;
};

/* Why device code ended a kernel: a caller's error that a device call can
 * neither return nor ignore (a collective on a team id that is not a team
 * of this PE, in the NVSHMEM headers) is written here, then the thread
 * traps. Every thread that faults writes it, without an atomic (a GPU's
 * atomic on host memory crosses PCIe, which may not carry it: a claim by
 * compare-and-swap left the record unwritten on two H200s); the threads of
 * one faulting call write the same bytes, and two different faults at
 * once may mix theirs. The record is host memory, pinned and mapped for
 * the device, so the host reads it after the trap has ended the context:
 * the library prints it where it ends the job itself (a fatal error), at
 * shmem_finalize, shmem_global_exit and exit (src/host/device_api.c); a
 * PE ended by a signal (abort, or the launcher after a peer failed) says
 * nothing.
 * Device code writes it instead of printing because a call to printf in
 * a kernel costs every kernel that may make it registers (a loop of six
 * collectives on a team argument: 74 to 86 with it, 64 without). */
enum ushmem_device_fault_what {
    USHMEM_DEVICE_FAULT_NONE = 0,
    USHMEM_DEVICE_FAULT_TEAM = 1, /* value: the team id */
};
#define USHMEM_DEVICE_FAULT_CALL 72
struct ushmem_device_fault {
    uint32_t ready; /* 1 once written (after a system-scope fence) */
    int32_t pe;
    int32_t what;   /* enum ushmem_device_fault_what */
    int32_t pad;
    int64_t value;
    char call[USHMEM_DEVICE_FAULT_CALL]; /* the call's name, cut to fit, NUL-terminated */
};

struct ushmem_device_state {
    uint32_t version; /* USHMEM_DEVICE_STATE_VERSION once filled; 0 before init */
    int32_t my_pe;
    int32_t n_pes;
    uint8_t force_proxy;  /* USHMEM_DEVICE_ROUTE=proxy: every call through the ring */
    uint8_t mixed_roads;  /* some PE takes different roads for different classes */
    /* 1 where a get's value of 1, 2, 4 or 8 bytes, in ring_values, may be
     * taken as it lands (ring.h's ushmem_ring_result_wait_on): the device
     * writes such a copy whole, once. 0: producers wait for the ticket. */
    uint8_t values_watched;
    uint8_t pad0[1];
    uint64_t heap_base;   /* this PE's heap */
    uint64_t heap_size;
    uint64_t device_flags_offset; /* of the barrier's flags from the heap's start */
    uint32_t device_flags_count;  /* 64-bit flags there */
    /* Of a copy of the ring's completed counter from the heap's start, in
     * this PE's own memory, which the proxy keeps (ring.h); 0 when there is
     * none and producers read the ring's counter. */
    uint32_t ring_done_offset;
    struct ushmem_device_peer *peers; /* n_pes entries, in this PE's heap */
    struct ushmem_ring_header *ring;  /* NULL when no proxy thread runs */
    /* Of this PE's count of device barriers from the heap's start: the
     * device barrier's own count, separate from the host barrier's. One
     * caller thread per PE at a time writes it; keeping it in the heap
     * rather than in a module's globals lets every module of a program
     * (each CUDA translation unit holds its own copy of this struct) share it.
     * The word after it is the barrier's mark (device.h). */
    uint64_t device_epoch_offset;
    /* The window: PEs window_first[cls] .. window_first[cls] +
     * window_count[cls] - 1 reach class cls directly, each heap at its
     * place in a regular layout, so that pe's copy of an address is the
     * address plus (pe - my_pe) * peer_stride (modulo 2^64). Device code
     * computes such a peer's address instead of loading it. The host counts
     * only PEs whose base it checked against the table; the others (a count
     * of 0: all of them) are looked up there. */
    uint64_t peer_stride;
    int32_t window_first[USHMEM_DEVICE_CLASS_COUNT];
    uint32_t window_count[USHMEM_DEVICE_CLASS_COUNT];
    /* Where this PE's producers take tickets and read fetched values
     * apart from the ring, in this PE's own memory (ring.h): a tail word on
     * a cache line of its own, and one 8-byte value per slot; 0 where they
     * are the ring's. */
    uint64_t ring_tail;
    uint64_t ring_values;
    /* PEs 0 .. USHMEM_DEVICE_NEAR_PES - 1 again, as in peers: a GPU reads
     * them from its constant cache instead of global memory. */
    struct ushmem_device_peer near[USHMEM_DEVICE_NEAR_PES];
    /* Of the team table (USHMEM_DEVICE_TEAMS entries, written by the host
     * when a team is made or destroyed) from the heap's start, and of the
     * team barriers' words: n_pes flags, flag s set by PE s to its count of
     * team-barrier signals sent here, then this PE's own counts of the
     * signals it sent to each PE and received from each. The counts go
     * by pair, not by team, so that a team's id need not be the same on its
     * members and a team owns no memory of its own (as the host's team
     * collectives, barrier.c). 0 before init. */
    uint64_t teams_offset;
    uint64_t team_sync_offset;
    /* The fault record (struct ushmem_device_fault, above): host memory
     * mapped for the device; 0 where there is none. */
    uint64_t fault;
};

/* A module of device code (a CUDA translation unit, say) holds its own copy
 * of the state and registers, before main, a function that writes it from
 * the host's copy; shmem_init calls the functions registered for its
 * backend, and a module registered after init is written at once. The
 * function returns NULL, or what failed. A module registers with the
 * versions of this header and of the ring's protocol it was compiled
 * against, and one compiled against another ushmem's is refused (its
 * kernels would read the state at other places, or send the proxy requests
 * it does not know); ushmemi_device_register, without them, is what
 * modules compiled before the versions were told call, and is refused the
 * same way. */
#if !defined(__OPENCL_C_VERSION__) /* host code; OpenCL C has no function pointers */
typedef const char *(*ushmem_device_fill_fn)(const struct ushmem_device_state *state);
#ifdef __cplusplus
extern "C" {
#endif
void ushmemi_device_register(const char *backend, ushmem_device_fill_fn fill);
void ushmemi_device_register_versions(const char *backend, ushmem_device_fill_fn fill,
                                      unsigned state_version, unsigned ring_version);
#ifdef __cplusplus
}
#endif
#endif

USHMEM_RING_STATIC_ASSERT(sizeof(void *) == 8, "the device state assumes 64-bit pointers");
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_device_peer) == 16, "device peer layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, heap_base) == 16,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, peers) == 48,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, device_epoch_offset) == 64,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, peer_stride) == 72,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, ring_tail) == 112,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, near) == 128,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_device_team) == 16, "device team layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, teams_offset) ==
                              128 + 16 * USHMEM_DEVICE_NEAR_PES,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_device_state, fault) ==
                              144 + 16 * USHMEM_DEVICE_NEAR_PES,
                          "device state layout");
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_device_state) == 152 + 16 * USHMEM_DEVICE_NEAR_PES,
                          "device state size");
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_device_fault) == 96, "device fault record size");

#endif
