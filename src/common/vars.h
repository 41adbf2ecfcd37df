/* The variable table: one list (name, type, default, help) generates the
 * settings struct, the parser and the listing printed by ushmem_info. */
#ifndef USHMEMI_VARS_H
#define USHMEMI_VARS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "status.h"

/* X(field, NAME, TYPE, default text, help). TYPE is SIZE, BOOL, INT, STRING.
 * The default is text so that the help, the listing and the parser share it. */
#define USHMEMI_VAR_LIST(X)                                                           \
    X(symmetric_size, "SHMEM_SYMMETRIC_SIZE", SIZE, "512M",                           \
      "Size of each PE's symmetric heap in bytes: an integer or decimal number with an optional K, M, G or T suffix (powers of 1024)") \
    X(heap_max, "USHMEM_HEAP_MAX", SIZE, "0",                                          \
      "Most bytes each PE's symmetric heap grows to: it starts at SHMEM_SYMMETRIC_SIZE " \
      "and grows in the allocation calls, on every PE at once, up to this; 0: what the " \
      "device holds (the GPU's memory on cuda, the machine's memory on cpu; ze keeps "  \
      "the start size)")                                                              \
    X(debug, "SHMEM_DEBUG", BOOL, "0",                                                \
      "Print debugging messages (same as USHMEM_LOG_LEVEL=debug)")                    \
    X(info, "SHMEM_INFO", BOOL, "0",                                                  \
      "Print the library version and every variable at shmem_init (PE 0)")            \
    X(version, "SHMEM_VERSION", BOOL, "0", "Print the library version at shmem_init (PE 0)") \
    X(log_level, "USHMEM_LOG_LEVEL", STRING, "warn",                                  \
      "Log level: error, warn, info, debug or trace")                                 \
    X(backend, "USHMEM_BACKEND", STRING, "auto",                                      \
      "Device backend for the symmetric heap: auto (a GPU if one answers: ze, then "  \
      "cuda; else cpu), ze, cuda or cpu")                                             \
    X(fd_passing, "USHMEM_FD_PASSING", STRING, "auto",                                \
      "How heap file descriptors move between local PEs: auto (pidfd, then socket), " \
      "pidfd (pidfd_getfd only) or socket (SCM_RIGHTS over an abstract Unix socket)") \
    X(bootstrap_timeout, "USHMEM_BOOTSTRAP_TIMEOUT", INT, "60",                       \
      "Seconds (1 to 1000000) a PE waits for its local peers while exchanging heap handles, and for " \
      "the job's PEs to meet at PE 0 in ushmemx_init_uniqueid")                         \
    X(hang_check, "USHMEM_HANG_CHECK", INT, "10",                                     \
      "Seconds (0 to 1000000) a PE waits in one barrier, wait or lock before it looks, " \
      "then once a second, for a PE of its node that will never come (its process "    \
      "gone, or past the last barrier of shmem_finalize, as a main that returns "      \
      "without calling it leaves it) and names it, in one line for the job; 0: never")  \
    X(bootstrap_uid_addr, "USHMEM_BOOTSTRAP_UID_ADDR", STRING, "auto",               \
      "Where ushmemx_get_uniqueid's process (PE 0) listens for the other PEs: an IP "  \
      "address or a network interface name; auto: the address the host name resolves " \
      "to, else 127.0.0.1 (set it for a job across hosts where the name resolves to a " \
      "loopback address)")                                                              \
    X(symmetric_data, "USHMEM_SYMMETRIC_DATA", BOOL, "1",                             \
      "Make global and static variables symmetric (remotely accessible) by sharing the " \
      "executable's data segment with the local PEs (cpu backend)")                    \
    X(ipc, "USHMEM_IPC", BOOL, "1",                                                   \
      "Map the heaps of PEs on this node (the direct route); 0 sends every peer over the " \
      "fabric (libfabric, chosen with FI_PROVIDER), as in a job across nodes")          \
    X(fabric_iface, "USHMEM_FABRIC_IFACE", STRING, "",                               \
      "Where the tcp, sockets and udp providers listen in a job across hosts: a network " \
      "interface name or an IPv4 address of this host; empty: the provider's default. " \
      "A job whose PEs are all on one host listens on 127.0.0.1 whatever this says, "   \
      "but a value that names nothing here is an error anywhere")                      \
    X(device_route, "USHMEM_DEVICE_ROUTE", STRING, "auto",                            \
      "Device-API calls: auto (direct where the peer's heap is mapped, else the proxy " \
      "thread) or proxy (every call through the proxy thread)")                         \
    X(proxy_ring_size, "USHMEM_PROXY_RING_SIZE", INT, "1024",                          \
      "Slots in the proxy's request ring (a power of two, at least 2)")                 \
    X(proxy_idle, "USHMEM_PROXY_IDLE", STRING, "auto",                               \
      "How the proxy and fabric progress threads wait while no request comes: spin "   \
      "(keep polling: a request after any quiet spell is taken at once, for one CPU " \
      "core per PE), sleep (poll, then sleep up to 1 ms: almost no CPU, but the "   \
      "first request after a quiet spell waits up to that long) or auto (spin where "   \
      "the heap is on a GPU and each PE's proxy has a CPU of its own: with the PE "    \
      "bound to one CPU (oshrun's default), CPUs that no PE is bound to, one for "     \
      "each of the node's PEs, and a cgroup quota, if any, of two CPUs a PE; else "    \
      "the CPUs this PE may use number at least twice the node's PEs; otherwise "      \
      "sleep. The fabric's progress thread spins too where there is room for two "    \
      "spinning helpers a PE: two such CPUs and a quota of three CPUs a PE, or three " \
      "usable CPUs a PE). A spinning progress thread, and the proxy, keep the "      \
      "fabric's path to landing peers warm: a header-only message every 0.5 ms to "   \
      "each peer with a landing request in the last 10 s (four peers at most every " \
      "0.5 ms, in turn)")                                                             \
    X(helper_cpus, "USHMEM_HELPER_CPUS", STRING, "",                                  \
      "The CPUs the library's helper threads may run on when the PE is bound to one "  \
      "(a CPU list such as 0-3,8): oshrun sets it to the CPUs it was given, so that "  \
      "a spinning proxy stays off the rest of the machine; empty: every online CPU")  \
    X(cores_shared, "USHMEM_CORES_SHARED", STRING, "auto",                           \
      "Whether this PE shares its CPUs with more PEs than they number, so that its "     \
      "waits in barriers and collectives block on the word (a futex, woken by the "     \
      "writer) and other waits nap instead of spinning or yielding, which would cost "  \
      "the PE it waits for a scheduler time slice: 1, 0, or auto (yes when the PEs of " \
      "this machine whose CPU masks meet this PE's outnumber the CPUs of those masks, " \
      "as lowered by a cgroup CPU quota)")                                            \
    X(fabric_staging, "USHMEM_FABRIC_STAGING", BOOL, "0",                             \
      "When the fabric cannot take device memory (no FI_HMEM), carry RMA through host " \
      "bounce buffers with the copy engine instead of failing at shmem_init")           \
    X(strict, "USHMEM_STRICT", BOOL, "1",                                             \
      "Treat a capability that cannot be verified (PCIe AtomicOps with an unreadable "  \
      "config space) as absent; 0 trusts it, with a warning")                            \
    X(sim_caps, "USHMEM_SIM_CAPS", STRING, "",                                        \
      "Testing: override probed capabilities of every pair, e.g. "                     \
      "p2p_atomics=0,fabric_hmem=0 (keys are the fields listed by ushmem_info --topology)") \
    X(sim_nodes, "USHMEM_SIM_NODES", INT, "1",                                       \
      "Testing: split the job's PEs into this many simulated nodes of consecutive ranks " \
      "(a job on one machine); PEs of different simulated nodes do not map each other's " \
      "memory and reach each other through libfabric, as across machines")             \
    X(sysfs_root, "USHMEM_SYSFS_ROOT", STRING, "/sys",                                \
      "Testing: where the PCIe probe reads sysfs (a fixture tree instead of /sys)")      \
    X(cpu_device_heap, "USHMEM_CPU_DEVICE_HEAP", BOOL, "0",                           \
      "Testing: the cpu backend reports its heap as device memory that the CPU must not " \
      "touch, so that the staging and device-memory checks run without a GPU")         \
    X(cpu_no_p2p, "USHMEM_CPU_NO_P2P", BOOL, "0",                                    \
      "Testing: 1 makes the cpu backend report no peer access between its PEs, as GPUs " \
      "without P2P, so that local peers are not mapped and go over the fabric")         \
    X(cuda_fabric_context, "USHMEM_CUDA_FABRIC_CONTEXT", STRING, "own",              \
      "cuda backend: the context libfabric's GPU support copies in: own (a second "     \
      "context of the PE's device, whose synchronous copies do not wait for the "       \
      "program's kernels on the default stream) or primary (the program's)")           \
    X(cuda_copy_streams, "USHMEM_CUDA_COPY_STREAMS", INT, "1",                        \
      "cuda backend: streams that copies of 1 MiB or more are dealt to round robin "     \
      "(1 to 8), so that the driver may run them on several copy engines")             \
    X(cuda_stream_barrier, "USHMEM_CUDA_STREAM_BARRIER", STRING, "auto",             \
      "cuda backend: how a stream-ordered barrier's round is queued: kernel (one "      \
      "small kernel writes the flags and waits), memops (stream memory operations), "   \
      "or auto (the kernel, which measured faster at 2 and 4 PEs; memops where a "     \
      "member shares this PE's GPU, on which a spinning kernel waits a time slice)")  \
    X(ze_kernels, "USHMEM_ZE_KERNELS", STRING, "",                                   \
      "A module of the ze backend's own kernels (the proxy's device atomic) in the "    \
      "driver's native format, for a Level Zero driver that takes no SPIR-V (the CPU "  \
      "test driver); empty: none, and the proxy road on a ze device heap is refused")   \
    X(cpu_pci_bdfs, "USHMEM_CPU_PCI_BDFS", STRING, "",                                \
      "Testing: comma-separated PCI addresses, one per local rank, that the cpu backend " \
      "reports as its device's; two PEs with addresses are linked by PCIe (one device " \
      "when the addresses are equal), so the PCIe AtomicOps probe runs on USHMEM_SYSFS_ROOT")


enum ushmemi_var_type { USHMEMI_VAR_SIZE, USHMEMI_VAR_BOOL, USHMEMI_VAR_INT, USHMEMI_VAR_STRING };

#define USHMEMI_VAR_CTYPE_SIZE size_t
#define USHMEMI_VAR_CTYPE_BOOL bool
#define USHMEMI_VAR_CTYPE_INT long
#define USHMEMI_VAR_CTYPE_STRING const char *

#define USHMEMI_VAR_FIELD(field, name, type, def, help) USHMEMI_VAR_CTYPE_##type field;
struct ushmemi_settings {
    USHMEMI_VAR_LIST(USHMEMI_VAR_FIELD)
};
#undef USHMEMI_VAR_FIELD

extern struct ushmemi_settings ushmemi_settings;

/* Parses every variable from the environment into ushmemi_settings. A
 * malformed value is logged with the variable's name and returns
 * USHMEM_ERR_INVALID_VALUE; unknown SHMEM_* and USHMEM_* variables are
 * warned about, with the known name they nearly spell, if any. */
ushmem_status_t ushmemi_vars_load(void);

/* Value parsers, exposed for tests. Output argument set only on success. */
ushmem_status_t ushmemi_parse_size(const char *text, size_t *value_p);
ushmem_status_t ushmemi_parse_bool(const char *text, bool *value_p);
ushmem_status_t ushmemi_parse_long(const char *text, long *value_p);

/* Writes "NAME  default  current  help" for every variable. */
void ushmemi_vars_print(FILE *out);

/* Number of unknown SHMEM_* and USHMEM_* variables found by the last load. */
int ushmemi_vars_unknown_count(void);

#endif
