/* Stream-ordered calls (shmemx_*_on_stream): RMA, signals, barriers and
 * collectives queued on a stream of the program's through the device
 * backend's stream operations (a copy, a 64-bit write, a 64-bit wait), so
 * the GPU carries them out in the stream's order while the host returns.
 *
 * The barrier on a stream is a dissemination over stream_flags in every
 * PE's reserved heap area: in round k a PE writes the barrier's number into
 * flag k of PE me + 2^k and its stream waits until its own flag k has
 * reached that number. Each PE gets exactly one write per round and barrier,
 * from the same sender, with increasing numbers, so a write never needs to
 * add and ">=" is never satisfied early. Each PE counts the barriers it has
 * queued (ushmemi_g.stream_epoch); the numbers agree because every PE
 * queues the same collectives in the same order. */
#include <shmem.h>
#include <shmemx.h>

#include "internal.h"

/* The backend could not queue the operation: end the job, naming it. */
static void check(const char *call, ushmem_status_t status)
{
    if (status == USHMEM_ERR_UNSUPPORTED)
        ushmemi_fatal(call, "the %s backend cannot queue this operation on a stream (stream-"
                            "ordered calls need the cuda backend and a GPU with stream memory "
                            "operations)",
                      ushmemi_g.dev_ops->name);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "the device backend could not queue the operation on the stream: %s",
                      ushmemi_status_string(status));
}

/* The object [addr, addr+len) of pe as mapped here; fatal when the peer is
 * not mapped (another node, or USHMEM_IPC=0). */
static void *mapped(const char *call, const void *addr, size_t len, int pe)
{
    struct ushmemi_loc loc;

    ushmemi_locate(call, addr, len, pe, &loc);
    if (loc.mapped == NULL)
        ushmemi_fatal(call, "PE %d's memory is not mapped here (%s); stream-ordered calls reach "
                            "only mapped peers",
                      pe, ushmemi_g.peers[pe].map_why);
    return loc.mapped;
}

static void *stream_of(CUstream stream)
{
    return (void *)stream;
}

static void world_only(const char *call, shmem_team_t team)
{
    if (team != SHMEM_TEAM_WORLD)
        ushmemi_fatal(call, "team %p: stream-ordered collectives run on SHMEM_TEAM_WORLD only "
                            "in this version",
                      (void *)team);
}

static void barrier_on_stream(const char *call, CUstream stream)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe, round = 0;
    uint64_t epoch = ++ushmemi_g.stream_epoch;
    uint64_t *own = ushmemi_g.reserved->stream_flags;

    for (int dist = 1; dist < n; dist <<= 1, round++) {
        int to = (me + dist) % n;
        uint64_t *flag = mapped(call, &own[round], sizeof(uint64_t), to);

        check(call, ushmemi_g.dev_ops->stream_write64(ushmemi_g.dev, stream_of(stream), flag,
                                                     epoch));
        check(call, ushmemi_g.dev_ops->stream_wait64(ushmemi_g.dev, stream_of(stream),
                                                    &own[round], epoch, USHMEMI_STREAM_GEQ));
    }
}

USHMEMI_API void shmemx_putmem_on_stream(void *dest, const void *source, size_t nbytes, int pe,
                                         CUstream stream)
{
    const char *call = "shmemx_putmem_on_stream";

    ushmemi_check_init(call);
    if (nbytes == 0)
        return;
    check(call, ushmemi_g.dev_ops->stream_copy(ushmemi_g.dev, stream_of(stream),
                                              mapped(call, dest, nbytes, pe), source, nbytes));
}

USHMEMI_API void shmemx_getmem_on_stream(void *dest, const void *source, size_t nbytes, int pe,
                                         CUstream stream)
{
    const char *call = "shmemx_getmem_on_stream";

    ushmemi_check_init(call);
    if (nbytes == 0)
        return;
    check(call, ushmemi_g.dev_ops->stream_copy(ushmemi_g.dev, stream_of(stream), dest,
                                              mapped(call, source, nbytes, pe), nbytes));
}

USHMEMI_API void shmemx_putmem_signal_on_stream(void *dest, const void *source, size_t nbytes,
                                                uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                int pe, CUstream stream)
{
    const char *call = "shmemx_putmem_signal_on_stream";

    ushmemi_check_init(call);
    if (sig_op != SHMEM_SIGNAL_SET)
        ushmemi_fatal(call, "sig_op %d: only SHMEM_SIGNAL_SET (%d) can be queued on a stream, "
                            "which writes words but cannot add to them; use the device API's "
                            "ushmem_putmem_signal for SHMEM_SIGNAL_ADD",
                      sig_op, SHMEM_SIGNAL_SET);
    uint64_t *sig = mapped(call, sig_addr, sizeof(*sig_addr), pe);
    if (nbytes > 0)
        check(call, ushmemi_g.dev_ops->stream_copy(ushmemi_g.dev, stream_of(stream),
                                                  mapped(call, dest, nbytes, pe), source, nbytes));
    /* The write's memory barrier puts the copy before the signal. */
    check(call, ushmemi_g.dev_ops->stream_write64(ushmemi_g.dev, stream_of(stream), sig, signal));
}

USHMEMI_API void shmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp,
                                                    uint64_t cmp_value, CUstream stream)
{
    const char *call = "shmemx_signal_wait_until_on_stream";
    enum ushmemi_stream_cmp how;

    ushmemi_check_init(call);
    mapped(call, sig_addr, sizeof(*sig_addr), ushmemi_g.my_pe); /* checks it is symmetric */
    switch (cmp) {
    case SHMEM_CMP_EQ:
        how = USHMEMI_STREAM_EQ;
        break;
    case SHMEM_CMP_GE:
        how = USHMEMI_STREAM_GEQ;
        break;
    case SHMEM_CMP_GT:
        if (cmp_value == UINT64_MAX)
            ushmemi_fatal(call, "SHMEM_CMP_GT %llu can never be true",
                          (unsigned long long)cmp_value);
        how = USHMEMI_STREAM_GEQ;
        cmp_value++;
        break;
    default:
        ushmemi_fatal(call, "cmp %d: a stream can wait for SHMEM_CMP_EQ, SHMEM_CMP_GE or "
                            "SHMEM_CMP_GT only; wait in a kernel for the others",
                      cmp);
    }
    check(call, ushmemi_g.dev_ops->stream_wait64(ushmemi_g.dev, stream_of(stream), sig_addr,
                                                cmp_value, how));
}

/* Everything queued before on the stream completes in the stream's order:
 * nothing to add. */
USHMEMI_API void shmemx_quiet_on_stream(CUstream stream)
{
    (void)stream;
    ushmemi_check_init("shmemx_quiet_on_stream");
}

USHMEMI_API void shmemx_barrier_all_on_stream(CUstream stream)
{
    ushmemi_check_init("shmemx_barrier_all_on_stream");
    barrier_on_stream("shmemx_barrier_all_on_stream", stream);
}

USHMEMI_API void shmemx_sync_all_on_stream(CUstream stream)
{
    ushmemi_check_init("shmemx_sync_all_on_stream");
    barrier_on_stream("shmemx_sync_all_on_stream", stream);
}

/* Copies src to dest + offset on every PE, starting with the next one, then
 * a barrier: each PE's part is in place everywhere when the stream passes it. */
static void put_to_all(const char *call, void *dest, size_t offset, const void *src,
                       size_t nbytes, size_t src_stride, CUstream stream)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;

    for (int i = 1; i <= n && nbytes > 0; i++) {
        int pe = (me + i) % n;
        check(call, ushmemi_g.dev_ops->stream_copy(
                        ushmemi_g.dev, stream_of(stream),
                        mapped(call, (char *)dest + offset, nbytes, pe),
                        (const char *)src + (size_t)pe * src_stride, nbytes));
    }
}

USHMEMI_API int shmemx_alltoallmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nbytes, CUstream stream)
{
    const char *call = "shmemx_alltoallmem_on_stream";

    ushmemi_check_init(call);
    world_only(call, team);
    put_to_all(call, dest, (size_t)ushmemi_g.my_pe * nbytes, source, nbytes, nbytes, stream);
    barrier_on_stream(call, stream);
    return 0;
}

USHMEMI_API int shmemx_broadcastmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                              size_t nbytes, int pe_root, CUstream stream)
{
    const char *call = "shmemx_broadcastmem_on_stream";

    ushmemi_check_init(call);
    world_only(call, team);
    if (pe_root < 0 || pe_root >= ushmemi_g.n_pes)
        ushmemi_fatal(call, "root PE %d is not in SHMEM_TEAM_WORLD (0 to %d)", pe_root,
                      ushmemi_g.n_pes - 1);
    if (ushmemi_g.my_pe == pe_root)
        put_to_all(call, dest, 0, source, nbytes, 0, stream);
    barrier_on_stream(call, stream);
    return 0;
}

USHMEMI_API int shmemx_fcollectmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nbytes, CUstream stream)
{
    const char *call = "shmemx_fcollectmem_on_stream";

    ushmemi_check_init(call);
    world_only(call, team);
    put_to_all(call, dest, (size_t)ushmemi_g.my_pe * nbytes, source, nbytes, 0, stream);
    barrier_on_stream(call, stream);
    return 0;
}
