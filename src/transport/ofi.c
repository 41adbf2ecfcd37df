/* The ofi transport's setup and teardown: provider choice (fi_getinfo,
 * honouring FI_PROVIDER, which libfabric reads itself), fabric, domain,
 * completion queue, address vector, endpoint, the heap registration, the
 * exchange of {endpoint name, heap key, heap base} through the oob, and the
 * progress thread for providers whose data progress is manual. It owns every
 * libfabric object until fini, which releases them in reverse order. */
#include "ofi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/random.h"
#include "../common/threads.h"
#include "ofi_private.h"

/* The memory-registration modes this transport can honour; the provider
 * answers with the subset it needs. FI_MR_RAW is absent: keys are 64 bits. */
#define OFI_MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

/* Heap registration access: remote peers read and write it, and it is a
 * local source or destination of our own transfers. */
#define OFI_HEAP_ACCESS (FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE)

/* What each PE tells the others; the same layout on every PE. */
struct ofi_card {
    struct ofi_remote_seg seg[USHMEMI_SEG_COUNT];
    uint32_t ok; /* 0 when this PE failed to set up: everyone fails together */
    uint32_t heap_landing; /* its heap is reached through messages (ofi_am.c) */
    uint32_t chunked;      /* it wants the heap registered per chunk (ofi_private.h) */
    uint32_t namelen;
    uint8_t name[OFI_NAME_MAX];
};

static unsigned api_major(void)
{
    return FI_MAJOR(ushmemi_fi.version());
}

static unsigned api_minor(void)
{
    return FI_MINOR(ushmemi_fi.version());
}

static struct fi_info *make_hints(bool atomics, bool hmem, bool msg)
{
    struct fi_info *hints = ushmemi_fi.dupinfo(NULL);
    if (hints == NULL)
        return NULL;
    hints->caps = FI_RMA | (atomics ? FI_ATOMIC : 0) | (hmem ? FI_HMEM : 0) | (msg ? FI_MSG : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2; /* every operation carries a fi_context2 */
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = OFI_MR_MODES | (hmem ? FI_MR_HMEM : 0);
    hints->domain_attr->threading = FI_THREAD_SAFE; /* the progress thread and callers */
    hints->domain_attr->av_type = FI_AV_TABLE;
    return hints;
}

/* fi_getinfo for our needs; the raw code in *rc_p for the caller's message. */
static int query(bool atomics, bool hmem, bool msg, struct fi_info **info_p)
{
    struct fi_info *hints = make_hints(atomics, hmem, msg);
    if (hints == NULL)
        return -FI_ENOMEM;
    int rc = ushmemi_fi.getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints,
                        info_p);
    ushmemi_fi.freeinfo(hints);
    return rc;
}

static const char *provider_filter(void)
{
    const char *p = getenv("FI_PROVIDER");
    return p != NULL && p[0] != '\0' ? p : NULL;
}

/* Chooses the provider: RMA and atomics when offered, else RMA alone with
 * atomics recorded as unavailable; with messages too when landing. */
static ushmem_status_t choose_provider(struct ushmemi_transport *t, bool hmem, bool msg)
{
    const char *filter = provider_filter();
    int rc = query(true, hmem, msg, &t->info);
    if (rc == 0) {
        t->have_atomics = true;
    } else if (rc == -FI_ENODATA) {
        rc = query(false, hmem, msg, &t->info);
        if (rc == 0) {
            t->have_atomics = false;
            snprintf(t->no_atomic_why, sizeof(t->no_atomic_why),
                     "provider %s in libfabric %u.%u offers no FI_ATOMIC%s",
                     t->info->fabric_attr->prov_name, api_major(), api_minor(),
                     hmem ? " with FI_HMEM" : "");
        }
    }
    if (rc == 0) {
        t->prov_name = t->info->fabric_attr->prov_name;
        return USHMEM_OK;
    }
    if (hmem) {
        ushmemi_error("ofi init on PE %d: the fabric has no GPU-RMA for this memory: no "
                      "libfabric %u.%u provider%s%s offers FI_RMA with FI_HMEM (fi_getinfo: %s)",
                      t->rank, api_major(), api_minor(), filter != NULL ? " matching FI_PROVIDER=" : "",
                      filter != NULL ? filter : "", ushmemi_fi.strerror(-rc));
        return USHMEM_ERR_UNSUPPORTED;
    }
    ushmemi_error("ofi init on PE %d: no libfabric %u.%u provider%s%s offers FI_RMA%s on an "
                  "FI_EP_RDM endpoint (fi_getinfo: %s)", t->rank, api_major(), api_minor(),
                  filter != NULL ? " matching FI_PROVIDER=" : "", filter != NULL ? filter : "",
                  msg ? " and FI_MSG (for landing on the device heap)" : "", ushmemi_fi.strerror(-rc));
    return ushmemi_ofi_status(rc);
}

/* libfabric loads only the providers FI_PROVIDER names, so the ones that do
 * carry atomics cannot be listed from here; say where the list comes from. */
static void note_provider_filter(struct ushmemi_transport *t)
{
    const char *filter = provider_filter();
    size_t used = strlen(t->no_atomic_why);
    if (t->have_atomics || filter == NULL || used == 0)
        return;
    snprintf(t->no_atomic_why + used, sizeof(t->no_atomic_why) - used,
             "; FI_PROVIDER=%s hides the others, and `fi_info -c FI_ATOMIC` lists those with "
             "atomics", filter);
}

static ushmem_status_t failed(const struct ushmemi_transport *t, const char *call, int rc)
{
    ushmemi_error("ofi init on PE %d: %s with provider %s failed: %s", t->rank, call,
                  t->prov_name, ushmemi_fi.strerror(-rc));
    return ushmemi_ofi_status(rc);
}

/* Binds a fresh registration to the endpoint when the provider asks for
 * FI_MR_ENDPOINT; the caller closes mr on failure. */
static int enable_mr(struct ushmemi_transport *t, struct fid_mr *mr)
{
    if (!t->mr_endpoint)
        return 0;
    int rc = fi_mr_bind(mr, &t->ep->fid, 0);
    return rc != 0 ? rc : fi_mr_enable(mr);
}

/* The key to ask for in a registration: random, as wide as the provider's
 * keys (domain_attr->mr_key_size), so that another local user who reaches
 * this PE's endpoint (the tcp and sockets providers listen on a port anyone
 * can see) cannot guess it; peers learn it through the bootstrap (the
 * cards). Ignored under FI_MR_PROV_KEY, where the provider picks. Keys must
 * differ within the domain: the rare repeat is refused by the provider and
 * the registration asks again (register_with_fresh_key). */
static int fresh_key(struct ushmemi_transport *t, uint64_t *key_p)
{
    uint64_t key;
    size_t size = t->info->domain_attr->mr_key_size;
    int err = ushmemi_random_bytes(&key, sizeof(key));
    if (err != 0) {
        ushmemi_error("ofi: PE %d cannot draw a registration key: getrandom: %s", t->rank,
                      strerror(err));
        return -FI_EIO;
    }
    if (size > 0 && size < sizeof(key))
        key &= (UINT64_C(1) << (8 * size)) - 1;
    *key_p = key;
    return 0;
}

void ushmemi_ofi_registration_text(struct ushmemi_transport *t, char *buf, size_t len)
{
    const struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    const struct ofi_local_seg *data = &t->seg[USHMEMI_SEG_STATIC];
    char keys[64], globals[160];

    if (t->prov_key)
        snprintf(keys, sizeof(keys), "chosen by the provider (FI_MR_PROV_KEY)");
    else
        snprintf(keys, sizeof(keys), "random, %zu bits (getrandom)",
                 8 * (t->info->domain_attr->mr_key_size > 0 &&
                              t->info->domain_attr->mr_key_size < sizeof(uint64_t)
                          ? t->info->domain_attr->mr_key_size
                          : sizeof(uint64_t)));
    if (data->mr != NULL)
        snprintf(globals, sizeof(globals),
                 "%zu bytes of the data segment (.data, .bss), its first %zu bytes "
                 "(relocation targets) left out",
                 data->size - data->skip, data->skip);
    else
        snprintf(globals, sizeof(globals), "no globals");
    const char *heap_text = heap->mr == NULL ? "no heap (landed by messages)"
                            : t->chunked     ? "the heap, one registration per growth chunk"
                                             : "the heap";
    snprintf(buf, len, "keys %s; registered: %s, %s", keys, heap_text, globals);
}

/* Tries a registration with fresh keys until the provider takes one: a
 * random key that repeats one of the domain's is refused as busy. */
#define OFI_KEY_TRIES 8
static bool key_taken(int rc)
{
    return rc == -FI_ENOKEY || rc == -FI_EBUSY || rc == -EEXIST;
}

ushmem_status_t ushmemi_ofi_reg(struct ushmemi_transport *t, void *buf, size_t len,
                                uint64_t access, struct fid_mr **mr_p)
{
    struct fid_mr *mr;
    uint64_t key = 0;
    int rc = 0;
    for (int i = 0; i < OFI_KEY_TRIES; i++) {
        if (!t->prov_key && (rc = fresh_key(t, &key)) != 0)
            break;
        rc = fi_mr_reg(t->domain, buf, len, access, 0, key, 0, &mr, NULL);
        if (t->prov_key || !key_taken(rc))
            break;
    }
    if (rc != 0) {
        ushmemi_error("ofi: PE %d cannot register %zu bytes at %p with provider %s: %s", t->rank,
                      len, buf, t->prov_name, ushmemi_fi.strerror(-rc));
        return ushmemi_ofi_status(rc);
    }
    rc = enable_mr(t, mr);
    if (rc != 0) {
        ushmemi_error("ofi: PE %d cannot bind a registration to its endpoint (provider %s): %s",
                      t->rank, t->prov_name, ushmemi_fi.strerror(-rc));
        fi_close(&mr->fid);
        return ushmemi_ofi_status(rc);
    }
    *mr_p = mr;
    return USHMEM_OK;
}

/* Registers a host buffer that serves only as the local side of transfers
 * (bounce slots, atomic operands, message buffers). Without FI_MR_LOCAL the
 * provider wants no registration for it, and none is made (desc NULL): tcp
 * in libfabric 2.x gives every local-only registration the same key
 * (FI_KEY_NOTAVAIL) and ofi_rxm then refuses the second one (FI_ENOKEY). */
ushmem_status_t ushmemi_ofi_reg_local(struct ushmemi_transport *t, void *buf, size_t len,
                                      uint64_t access, struct fid_mr **mr_p, void **desc_p)
{
    *mr_p = NULL;
    *desc_p = NULL;
    if (!t->mr_local)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_ofi_reg(t, buf, len, access, mr_p);
    if (status == USHMEM_OK)
        *desc_p = fi_mr_desc(*mr_p);
    return status;
}

/* Registers device memory with its FI_HMEM interface (the test that
 * matters, since advertised FI_HMEM is no proof that a real device buffer
 * registers): the heap, each growth chunk of it, or a transfer's local
 * buffer outside it. */
ushmem_status_t ushmemi_ofi_reg_device(struct ushmemi_transport *t, const char *what, void *buf,
                                       size_t size, uint64_t access, struct fid_mr **mr)
{
    const char *backend = t->dev_ops != NULL ? t->dev_ops->name : "unknown";
    enum fi_hmem_iface iface;
    if (strcmp(backend, "ze") == 0) {
        iface = FI_HMEM_ZE;
    } else if (strcmp(backend, "cuda") == 0) {
        iface = FI_HMEM_CUDA;
    } else {
        ushmemi_error("ofi %s on PE %d: the fabric has no GPU-RMA for this memory: libfabric "
                      "has no FI_HMEM interface for device backend '%s'", what, t->rank, backend);
        return USHMEM_ERR_UNSUPPORTED;
    }
    int ordinal = 0;
    struct ushmemi_ptr_attr pattr;
    if (t->dev_ops->pointer_query(t->dev, buf, &pattr) == USHMEM_OK &&
        pattr.device_ordinal >= 0)
        ordinal = pattr.device_ordinal;

    struct iovec iov = {.iov_base = buf, .iov_len = size};
    struct fi_mr_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = access;
    attr.iface = iface;
    if (iface == FI_HMEM_ZE)
        attr.device.ze = ordinal;
    else
        attr.device.cuda = ordinal;
    int rc = 0;
    for (int i = 0; i < OFI_KEY_TRIES; i++) {
        if (!t->prov_key && (rc = fresh_key(t, &attr.requested_key)) != 0)
            break;
        rc = fi_mr_regattr(t->domain, &attr, 0, mr);
        if (t->prov_key || !key_taken(rc))
            break;
    }
    if (rc == 0) {
        rc = enable_mr(t, *mr);
        if (rc != 0) {
            fi_close(&(*mr)->fid);
            *mr = NULL;
        }
    }
    if (rc != 0) {
        ushmemi_error("ofi %s on PE %d: the fabric has no GPU-RMA for this memory: provider %s "
                      "in libfabric %u.%u cannot register %zu bytes of %s device memory at %p: "
                      "%s", what, t->rank, t->prov_name, api_major(), api_minor(), size,
                      backend, buf, ushmemi_fi.strerror(-rc));
        return rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP ? USHMEM_ERR_UNSUPPORTED
                                                        : ushmemi_ofi_status(rc);
    }
    return USHMEM_OK;
}

/* USHMEMI_OFI_CHUNK_REG=1 (test only, not in the variable list): a host
 * heap is registered per chunk too, as a device heap is, so that the chunk
 * tables and the splitting of transfers run without a GPU. */
static bool chunk_switch(void)
{
    const char *text = getenv("USHMEMI_OFI_CHUNK_REG"); /* test switch */
    return text != NULL && strcmp(text, "1") == 0;
}

/* Chunk tables that hold cap chunks of every PE; NULL when out of memory. */
static struct ofi_chunks *chunks_alloc(const struct ushmemi_transport *t, size_t cap)
{
    struct ofi_chunks *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->cap = cap;
    c->local = calloc(cap, sizeof(*c->local));
    c->remote = calloc(cap * (size_t)t->size, sizeof(*c->remote));
    if (c->local == NULL || c->remote == NULL) {
        free(c->local);
        free(c->remote);
        free(c);
        return NULL;
    }
    return c;
}

static void chunks_free(struct ofi_chunks *c)
{
    while (c != NULL) {
        struct ofi_chunks *retired = c->retired;
        free(c->local);
        free(c->remote);
        free(c);
        c = retired;
    }
}

/* Room in the tables for one more chunk: a full table is copied into one
 * twice as large, published whole, and kept (a reader may hold it). */
static ushmem_status_t chunks_make_room(struct ushmemi_transport *t)
{
    struct ofi_chunks *old = atomic_load_explicit(&t->chunks, memory_order_relaxed);
    size_t n = atomic_load_explicit(&t->nchunks, memory_order_relaxed);
    if (n < old->cap)
        return USHMEM_OK;
    struct ofi_chunks *c = chunks_alloc(t, 2 * old->cap);
    if (c == NULL)
        return USHMEM_ERR_NO_MEMORY;
    memcpy(c->local, old->local, n * sizeof(*c->local));
    for (size_t pe = 0; pe < (size_t)t->size; pe++)
        memcpy(c->remote + pe * c->cap, old->remote + pe * old->cap, n * sizeof(*c->remote));
    c->retired = old;
    atomic_store_explicit(&t->chunks, c, memory_order_release);
    return USHMEM_OK;
}

/* The tables with this PE's heap registration as its chunk 0 (the peers'
 * rows are filled once their cards are in). */
#define OFI_CHUNKS_START 8
static ushmem_status_t chunks_start(struct ushmemi_transport *t)
{
    const struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    struct ofi_chunks *c = chunks_alloc(t, OFI_CHUNKS_START);
    if (c == NULL) {
        ushmemi_error("ofi init on PE %d: out of memory for the heap's chunk tables of %d PEs",
                      t->rank, t->size);
        return USHMEM_ERR_NO_MEMORY;
    }
    c->local[0] = (struct ofi_local_chunk){.offset = 0, .size = heap->size, .mr = heap->mr,
                                           .desc = heap->desc};
    atomic_store_explicit(&t->chunks, c, memory_order_relaxed);
    return USHMEM_OK;
}

/* Fabric, domain, CQ, AV and an enabled endpoint. */
static ushmem_status_t open_endpoint(struct ushmemi_transport *t)
{
    struct fi_info *info = t->info;
    int rc = ushmemi_fi.fabric(info->fabric_attr, &t->fabric, NULL);
    if (rc != 0)
        return failed(t, "fi_fabric", rc);
    rc = fi_domain(t->fabric, info, &t->domain, NULL);
    if (rc != 0)
        return failed(t, "fi_domain", rc);

    struct fi_cq_attr cq_attr;
    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.size = info->tx_attr->size > 0 ? info->tx_attr->size : 1024;
    /* No wait object: in libfabric 1.17, fi_cq_sread spins forever on shm
     * (FI_WAIT_UNSPEC ignores the timeout) and stalls udp's retransmissions
     * (FI_WAIT_FD), and on tcp;ofi_rxm an fd wait measured no faster than
     * the naps below, so the progress thread polls. */
    cq_attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(t->domain, &cq_attr, &t->cq, NULL);
    if (rc != 0)
        return failed(t, "fi_cq_open", rc);

    struct fi_av_attr av_attr;
    memset(&av_attr, 0, sizeof(av_attr));
    av_attr.type = FI_AV_TABLE;
    av_attr.count = (size_t)t->size;
    rc = fi_av_open(t->domain, &av_attr, &t->av, NULL);
    if (rc != 0)
        return failed(t, "fi_av_open", rc);

    rc = fi_endpoint(t->domain, info, &t->ep, NULL);
    if (rc != 0)
        return failed(t, "fi_endpoint", rc);
    rc = fi_ep_bind(t->ep, &t->av->fid, 0);
    if (rc != 0)
        return failed(t, "fi_ep_bind(av)", rc);
    /* Some providers refuse an endpoint without a receive CQ, though no
     * receive is ever posted. */
    rc = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc != 0)
        return failed(t, "fi_ep_bind(cq)", rc);
    rc = fi_enable(t->ep);
    if (rc != 0)
        return failed(t, "fi_enable", rc);
    return USHMEM_OK;
}

/* Registers the heap, the data segment when it is symmetric, and the
 * scratch area (nbi bounce slots, atomic operands). */
static ushmem_status_t register_memory(struct ushmemi_transport *t,
                                       const struct ushmemi_transport_params *params)
{
    ushmem_status_t status;
    struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    struct ofi_local_seg *data = &t->seg[USHMEMI_SEG_STATIC];
    heap->base = params->heap;
    heap->size = params->heap_size;
    if (params->heap_landing) {
        /* Never registered: only this PE's device touches it (ofi_am.c).
         * Size 0 keeps it from serving as a local buffer of a transfer. */
        heap->size = 0;
        status = USHMEM_OK;
    } else if (params->heap_is_device) {
        void *saved = ushmemi_ofi_enter(t);
        status = ushmemi_ofi_reg_device(t, "init", heap->base, heap->size, OFI_HEAP_ACCESS,
                                        &heap->mr);
        ushmemi_ofi_leave(t, saved);
    } else {
        status = ushmemi_ofi_reg(t, heap->base, heap->size, OFI_HEAP_ACCESS, &heap->mr);
    }
    if (status != USHMEM_OK)
        return status;
    if (heap->mr != NULL)
        heap->desc = fi_mr_desc(heap->mr);
    if (params->static_base != NULL && params->static_size > params->static_skip) {
        /* Globals are host memory whatever the backend. Only the part that
         * holds symmetric objects (.data, .bss) is registered: never the
         * relocation targets before it (the GOT), which a write from the
         * fabric would turn into a jump. */
        status = ushmemi_ofi_reg(t, (char *)params->static_base + params->static_skip,
                                 params->static_size - params->static_skip, OFI_HEAP_ACCESS,
                                 &data->mr);
        if (status != USHMEM_OK)
            return status;
        data->base = params->static_base;
        data->size = params->static_size;
        data->skip = params->static_skip;
        data->desc = fi_mr_desc(data->mr);
    }

    t->scratch_size = (size_t)OFI_NBI_SLOTS * OFI_NBI_SLOT_SIZE + OFI_AMO_SCRATCH;
    if (posix_memalign((void **)&t->scratch, 4096, t->scratch_size) != 0) {
        t->scratch = NULL;
        ushmemi_error("ofi init on PE %d: out of memory for %zu bytes of bounce buffers", t->rank,
                      t->scratch_size);
        return USHMEM_ERR_NO_MEMORY;
    }
    status = ushmemi_ofi_reg_local(t, t->scratch, t->scratch_size, FI_READ | FI_WRITE,
                                   &t->scratch_mr, &t->scratch_desc);
    if (status != USHMEM_OK)
        return status;
    for (int i = 0; i < OFI_NBI_SLOTS; i++)
        t->free_slots[i] = i;
    t->nfree_slots = OFI_NBI_SLOTS;
    return USHMEM_OK;
}

/* Everything before the exchange; on failure the caller still joins the
 * exchange (with ok = 0) so that no peer waits forever for this PE. */
static ushmem_status_t setup_local(struct ushmemi_transport *t,
                                   const struct ushmemi_transport_params *params,
                                   struct ofi_card *card)
{
    bool landing = params->heap_landing != 0;
    const char *why = NULL;
    if (ushmemi_fi_load(&why) != USHMEM_OK) {
        ushmemi_error("ofi init on PE %d: %s; peers that cannot be mapped are unreachable",
                      t->rank, why);
        return USHMEM_ERR_TRANSPORT;
    }
    ushmem_status_t status = choose_provider(t, params->heap_is_device != 0, landing);
    if (status != USHMEM_OK)
        return status;
    status = ushmemi_ofi_addr_choose(t, params->fabric_iface);
    if (status != USHMEM_OK)
        return status;
    uint64_t mr_mode = (uint64_t)t->info->domain_attr->mr_mode;
    t->mr_local = (mr_mode & FI_MR_LOCAL) != 0;
    t->virt_addr = (mr_mode & FI_MR_VIRT_ADDR) != 0;
    t->prov_key = (mr_mode & FI_MR_PROV_KEY) != 0;
    t->mr_endpoint = (mr_mode & FI_MR_ENDPOINT) != 0;
    t->max_msg = t->info->ep_attr->max_msg_size > 0 ? t->info->ep_attr->max_msg_size : SIZE_MAX;
    ushmemi_debug("ofi: PE %d uses provider %s (fabric %s, domain %s), mr_mode 0x%llx, "
                  "tx op_flags 0x%llx, data progress %s", t->rank, t->prov_name,
                  t->info->fabric_attr->name, t->info->domain_attr->name,
                  (unsigned long long)mr_mode, (unsigned long long)t->info->tx_attr->op_flags,
                  t->info->domain_attr->data_progress == FI_PROGRESS_MANUAL ? "manual" : "auto");

    status = open_endpoint(t);
    if (status != USHMEM_OK)
        return status;
    status = register_memory(t, params);
    if (status != USHMEM_OK)
        return status;
    /* Always for GPU memory: one FI_HMEM registration spanning several
     * GPU allocations (the growths) crashed the shm provider. */
    if (!landing && (params->heap_is_device || chunk_switch())) {
        status = chunks_start(t);
        if (status != USHMEM_OK)
            return status;
        card->chunked = 1;
    }
    if (landing) {
        status = ushmemi_ofi_am_setup(t, params);
        if (status != USHMEM_OK)
            return status;
        card->heap_landing = 1;
        card->seg[USHMEMI_SEG_HEAP].base = (uint64_t)(uintptr_t)params->heap;
        card->seg[USHMEMI_SEG_HEAP].size = params->heap_size;
    }

    size_t namelen = sizeof(card->name);
    int rc = fi_getname(&t->ep->fid, card->name, &namelen);
    if (rc != 0)
        return failed(t, "fi_getname", rc);
    card->namelen = (uint32_t)namelen;
    for (int i = 0; i < USHMEMI_SEG_COUNT; i++) {
        if (t->seg[i].mr == NULL)
            continue;
        card->seg[i].key = fi_mr_key(t->seg[i].mr);
        card->seg[i].base = (uint64_t)(uintptr_t)t->seg[i].base;
        card->seg[i].size = t->seg[i].size;
        card->seg[i].skip = t->seg[i].skip;
    }
    card->ok = 1;
    return USHMEM_OK;
}

/* Every peer's heap registration, from its card, as its chunk 0. */
static ushmem_status_t chunks_connect(struct ushmemi_transport *t)
{
    if (atomic_load_explicit(&t->chunks, memory_order_relaxed) == NULL) {
        ushmem_status_t status = chunks_start(t); /* a peer asked for them, not this PE */
        if (status != USHMEM_OK)
            return status;
    }
    struct ofi_chunks *c = atomic_load_explicit(&t->chunks, memory_order_relaxed);
    for (int pe = 0; pe < t->size; pe++) {
        const struct ofi_remote_seg *seg = &t->peers[pe].seg[USHMEMI_SEG_HEAP];
        c->remote[(size_t)pe * c->cap] = (struct ofi_remote_chunk){
            .offset = 0, .size = seg->size, .key = seg->key, .base = seg->base};
    }
    atomic_store_explicit(&t->nchunks, 1, memory_order_release);
    return USHMEM_OK;
}

/* The AV in rank order, so that fi_addr_t of PE i is addrs[i]. */
static ushmem_status_t connect_peers(struct ushmemi_transport *t, const struct ofi_card *cards)
{
    for (int pe = 0; pe < t->size; pe++) {
        if (!cards[pe].ok) {
            ushmemi_error("ofi init on PE %d: PE %d could not set up its fabric endpoint (see its "
                          "message)", t->rank, pe);
            return USHMEM_ERR_TRANSPORT;
        }
        if ((cards[pe].heap_landing != 0) != (t->am != NULL)) {
            ushmemi_error("ofi init on PE %d: PE %d %s its heap through messages and this PE "
                          "%s; USHMEM_FABRIC_STAGING and the device backend must be the same on "
                          "every PE", t->rank, pe,
                          cards[pe].heap_landing ? "lands" : "does not land",
                          t->am != NULL ? "does" : "does not");
            return USHMEM_ERR_TRANSPORT;
        }
    }
    for (int pe = 0; pe < t->size; pe++) {
        int n = fi_av_insert(t->av, cards[pe].name, 1, &t->addrs[pe], 0, NULL);
        if (n != 1) {
            ushmemi_error("ofi init on PE %d: fi_av_insert of PE %d's address (provider %s) "
                          "failed: %s", t->rank, pe, t->prov_name,
                          n < 0 ? ushmemi_fi.strerror(-n) : "address not inserted");
            return n < 0 ? ushmemi_ofi_status(n) : USHMEM_ERR_TRANSPORT;
        }
        memcpy(t->peers[pe].seg, cards[pe].seg, sizeof(t->peers[pe].seg));
        t->peers[pe].heap_landing = cards[pe].heap_landing != 0;
        /* Per chunk on every PE if one PE asks: a peer's key must cover
         * what its chunk covers here. */
        t->chunked |= cards[pe].chunked != 0;
    }
    return t->chunked ? chunks_connect(t) : USHMEM_OK;
}

static void release(struct ushmemi_transport *t)
{
    if (t->progress_started) {
        atomic_store(&t->stop, true);
        pthread_join(t->progress_thread, NULL);
    }
    if (t->scratch_mr != NULL)
        fi_close(&t->scratch_mr->fid);
    void *saved = ushmemi_ofi_enter(t);
    struct ofi_chunks *chunks = atomic_load(&t->chunks);
    /* Chunk 0's registration is the heap segment's, closed below. */
    for (size_t i = atomic_load(&t->nchunks); chunks != NULL && i-- > 1;)
        fi_close(&chunks->local[i].mr->fid);
    for (int i = USHMEMI_SEG_COUNT - 1; i >= 0; i--)
        if (t->seg[i].mr != NULL)
            fi_close(&t->seg[i].mr->fid);
    for (size_t i = 0; i < t->nold_heap_mrs; i++)
        fi_close(&t->old_heap_mrs[i]->fid);
    ushmemi_ofi_leave(t, saved);
    free(t->old_heap_mrs);
    chunks_free(chunks);
    if (t->ep != NULL)
        fi_close(&t->ep->fid);
    ushmemi_ofi_am_release(t); /* its receives were cancelled with the endpoint */
    if (t->av != NULL)
        fi_close(&t->av->fid);
    if (t->cq != NULL)
        fi_close(&t->cq->fid);
    if (t->domain != NULL)
        fi_close(&t->domain->fid);
    if (t->fabric != NULL)
        fi_close(&t->fabric->fid);
    if (t->info != NULL)
        ushmemi_fi.freeinfo(t->info);
    free(t->scratch);
    free(t->peers);
    free(t->addrs);
    pthread_mutex_destroy(&t->slot_lock);
    pthread_mutex_destroy(&t->amo_lock);
    free(t);
}

static ushmem_status_t ofi_init(const struct ushmemi_transport_params *params,
                                struct ushmemi_transport **t_p)
{
    const struct ushmemi_oob *oob = params != NULL ? params->oob : NULL;
    if (oob == NULL || params->heap == NULL || params->heap_size == 0 || oob->size <= 0) {
        ushmemi_error("ofi init: missing oob or heap");
        return USHMEM_ERR_INVALID_PARAM;
    }

    struct ushmemi_transport *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        ushmemi_error("ofi init on PE %d: out of memory", oob->rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    t->rank = oob->rank;
    t->idle_spin = params->idle_spin != 0;
    t->cores_shared = params->cores_shared != 0;
    t->size = oob->size;
    t->oob = oob;
    t->heap_is_device = params->heap_is_device != 0;
    t->dev_ops = params->dev_ops;
    t->dev = params->dev;
    t->foreign = t->heap_is_device && params->dev_ops != NULL &&
                 params->dev_ops->foreign_enter != NULL && params->dev_ops->foreign_leave != NULL;
    pthread_mutex_init(&t->slot_lock, NULL);
    pthread_mutex_init(&t->amo_lock, NULL);

    ushmem_status_t status = USHMEM_ERR_NO_MEMORY;
    struct ofi_card *cards = calloc((size_t)t->size, sizeof(*cards));
    t->addrs = calloc((size_t)t->size, sizeof(*t->addrs));
    t->peers = calloc((size_t)t->size, sizeof(*t->peers));
    struct ofi_card mine;
    memset(&mine, 0, sizeof(mine));
    if (cards == NULL || t->addrs == NULL || t->peers == NULL)
        ushmemi_error("ofi init on PE %d: out of memory for %d peers", t->rank, t->size);
    else
        status = setup_local(t, params, &mine);

    /* Joined even after a local failure: the peers learn of it from ok = 0. */
    ushmem_status_t ex = oob->allgather(oob->ctx, &mine, cards, sizeof(mine));
    if (ex != USHMEM_OK) {
        ushmemi_error("ofi init on PE %d: address exchange failed: %s", t->rank,
                      ushmemi_status_string(ex));
        if (status == USHMEM_OK)
            status = ex;
    }
    if (status != USHMEM_OK)
        goto release_transport;
    status = connect_peers(t, cards);
    if (status != USHMEM_OK)
        goto release_transport;
    ushmemi_ofi_atomic_probe(t);
    note_provider_filter(t);
    if (t->am != NULL) {
        status = ushmemi_ofi_am_start(t);
        if (status != USHMEM_OK)
            goto release_transport;
    }

    /* Landing needs the thread whatever the provider: it lands the requests. */
    if (t->info->domain_attr->data_progress == FI_PROGRESS_MANUAL || t->am != NULL) {
        int err = ushmemi_helper_thread_start(&t->progress_thread, ushmemi_ofi_progress_main, t,
                                              "ushmem-ofi", oob->host_local_rank,
                                              oob->host_local_size);
        if (err != 0) {
            ushmemi_error("ofi init on PE %d: cannot start the progress thread: %s", t->rank,
                          strerror(err));
            status = USHMEM_ERR_TRANSPORT;
            goto release_transport;
        }
        t->progress_started = true;
    }
    /* Nobody targets a peer before every PE has its addresses in place. */
    status = oob->barrier(oob->ctx);
    if (status != USHMEM_OK) {
        ushmemi_error("ofi init on PE %d: closing barrier failed: %s", t->rank,
                      ushmemi_status_string(status));
        goto release_transport;
    }
    free(cards);
    *t_p = t;
    return USHMEM_OK;

release_transport:
    free(cards);
    release(t);
    return status;
}

static void ofi_fini(struct ushmemi_transport *t)
{
    if (t == NULL)
        return;
    /* Operations still in flight point into objects about to close. */
    ushmemi_ofi_quiet(t);
    release(t);
}

/* What each PE tells the others when the heaps grow. */
struct ofi_grow_card {
    uint64_t key;  /* the new registration's (0 when landing: none) */
    uint64_t base; /* its address: the new chunk's when the heap is registered per chunk */
    uint64_t size; /* the heap's new size */
    uint32_t ok;
    uint32_t reserved;
};

/* Takes peer pe's card of a growth: its new size, and the key of its new
 * registration (none when its heap lands through messages). A card that
 * does not agree, or the injected fault, is this PE's failure alone, which
 * the closing vote of ofi_heap_grow makes everyone's. */
static ushmem_status_t take_grow_card(const struct ushmemi_transport *t, int pe,
                                      const struct ofi_grow_card *card, size_t new_size,
                                      struct ushmemi_grow_step *step)
{
    if (card->size != new_size) {
        snprintf(step->why, sizeof(step->why), "the fabric (provider %s) heard PE %d's grown "
                 "heap is %llu bytes, not %zu", t->prov_name, pe,
                 (unsigned long long)card->size, new_size);
        return USHMEM_ERR_TRANSPORT;
    }
    if (pe == step->fail_peer) {
        snprintf(step->why, sizeof(step->why), "the fabric (provider %s) cannot take PE %d's "
                 "grown heap registration (key 0x%llx): the fault that "
                 "USHMEMI_FAULT_GROW_MAP injects", t->prov_name, pe,
                 (unsigned long long)card->key);
        return USHMEM_ERR_TRANSPORT;
    }
    return USHMEM_OK;
}

/* Room to keep what a growth registers: the old registration's place when
 * the heap is one registration, the new chunk's when it is per chunk. */
static ushmem_status_t make_room(struct ushmemi_transport *t)
{
    if (t->chunked)
        return chunks_make_room(t);
    struct fid_mr **old = realloc(t->old_heap_mrs, (t->nold_heap_mrs + 1) * sizeof(*old));
    if (old == NULL)
        return USHMEM_ERR_NO_MEMORY;
    t->old_heap_mrs = old;
    return USHMEM_OK;
}

/* Registers what a growth to new_size needs: the whole heap again, or only
 * the new bytes where the heap is registered per chunk. */
static ushmem_status_t register_growth(struct ushmemi_transport *t, size_t new_size,
                                       struct ofi_grow_card *card, struct fid_mr **mr_p)
{
    struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    size_t from = t->chunked ? heap->size : 0;
    char *start = heap->base + from;
    void *saved = ushmemi_ofi_enter(t);
    ushmem_status_t status =
        t->heap_is_device
            ? ushmemi_ofi_reg_device(t, "heap growth", start, new_size - from, OFI_HEAP_ACCESS,
                                     mr_p)
            : ushmemi_ofi_reg(t, start, new_size - from, OFI_HEAP_ACCESS, mr_p);
    ushmemi_ofi_leave(t, saved);
    if (status != USHMEM_OK)
        return status;
    card->key = fi_mr_key(*mr_p);
    card->base = (uint64_t)(uintptr_t)start;
    return USHMEM_OK;
}

/* The proxy thread may read these while they change: the key and size
 * of a peer go one word at a time, and until the allocation that grew
 * the heap returns nobody targets the new bytes, so either key finds
 * what any operation may target. */
static void take_whole(struct ushmemi_transport *t, size_t new_size, struct fid_mr *mr,
                       const struct ofi_grow_card *cards)
{
    struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    for (int pe = 0; pe < t->size; pe++) {
        struct ofi_remote_seg *seg = &t->peers[pe].seg[USHMEMI_SEG_HEAP];
        if (!t->peers[pe].heap_landing)
            __atomic_store_n(&seg->key, cards[pe].key, __ATOMIC_RELAXED);
        __atomic_store_n(&seg->size, cards[pe].size, __ATOMIC_RELAXED);
    }
    if (mr != NULL) {
        if (heap->mr != NULL)
            t->old_heap_mrs[t->nold_heap_mrs++] = heap->mr;
        __atomic_store_n(&heap->desc, fi_mr_desc(mr), __ATOMIC_RELAXED);
        __atomic_store_n(&heap->mr, mr, __ATOMIC_RELAXED);
        __atomic_store_n(&heap->size, new_size, __ATOMIC_RELAXED);
    }
}

/* The new chunk [heap size, new_size) of every PE goes into the tables
 * (make_room left a place): the entries first, then the count with a
 * release store, so that the proxy thread, which may read the tables
 * meanwhile, sees either chunk count with whole entries; the sizes last.
 * Nobody targets the new bytes before the growing allocation returns. */
static void take_chunk(struct ushmemi_transport *t, size_t new_size, struct fid_mr *mr,
                       const struct ofi_grow_card *cards)
{
    struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    struct ofi_chunks *c = atomic_load_explicit(&t->chunks, memory_order_relaxed);
    size_t n = atomic_load_explicit(&t->nchunks, memory_order_relaxed);
    uint64_t from = heap->size, size = new_size - heap->size;
    c->local[n] = (struct ofi_local_chunk){.offset = from, .size = size, .mr = mr,
                                           .desc = fi_mr_desc(mr)};
    for (int pe = 0; pe < t->size; pe++)
        c->remote[(size_t)pe * c->cap + n] = (struct ofi_remote_chunk){
            .offset = from, .size = size, .key = cards[pe].key, .base = cards[pe].base};
    atomic_store_explicit(&t->nchunks, n + 1, memory_order_release);
    for (int pe = 0; pe < t->size; pe++)
        __atomic_store_n(&t->peers[pe].seg[USHMEMI_SEG_HEAP].size, cards[pe].size,
                         __ATOMIC_RELAXED);
    __atomic_store_n(&heap->size, new_size, __ATOMIC_RELAXED);
}

/* The heap grew to new_size. Where it is one registration, one covering
 * all of it is made before the old one is let go, so that an operation in
 * flight under the old key still finds it (the old registrations are
 * closed with the transport); registering the whole reserve at init would
 * take address space no provider that pins memory accepts. Where it is
 * registered per chunk (GPU memory, see struct ofi_remote_chunk), only the
 * new bytes are registered, as the next chunk, and a transfer that spans
 * two chunks becomes two (ofi_rma.c). Two exchanges: the cards, then
 * whether every PE took every card, so that the peers' keys change on all
 * PEs or on none. */
static ushmem_status_t ofi_heap_grow(struct ushmemi_transport *t, size_t new_size,
                                     struct ushmemi_grow_step *step)
{
    struct ofi_grow_card mine = {.size = new_size}, *cards = calloc((size_t)t->size,
                                                                    sizeof(*cards));
    uint32_t *oks = calloc((size_t)t->size, sizeof(*oks));
    struct fid_mr *mr = NULL;
    ushmem_status_t status = USHMEM_OK;

    step->why[0] = '\0';
    if (cards == NULL || oks == NULL) {
        /* No room to receive the cards: the peers wait in the exchange
         * until the bootstrap gives up. */
        ushmemi_error("ofi: PE %d cannot allocate the growth tables of %d PEs", t->rank, t->size);
        status = USHMEM_ERR_NO_MEMORY;
        goto free_tables;
    }
    bool landing = t->peers[t->rank].heap_landing; /* this PE's own card */
    status = make_room(t);
    if (status != USHMEM_OK)
        snprintf(step->why, sizeof(step->why), "the fabric (provider %s) has no memory to "
                 "record a heap registration of %d PEs", t->prov_name, t->size);
    if (status == USHMEM_OK && !landing) {
        status = register_growth(t, new_size, &mine, &mr);
        if (status != USHMEM_OK)
            snprintf(step->why, sizeof(step->why), "the fabric (provider %s) cannot register "
                     "the grown heap of %zu bytes: %s", t->prov_name, new_size,
                     ushmemi_status_string(status));
    }
    mine.ok = status == USHMEM_OK;
    ushmem_status_t ex = t->oob->allgather(t->oob->ctx, &mine, cards, sizeof(mine));
    if (ex != USHMEM_OK) {
        ushmemi_error("ofi: PE %d: the exchange of grown registrations failed: %s", t->rank,
                      ushmemi_status_string(ex));
        status = ex;
        goto close_mr;
    }
    for (int pe = 0; status == USHMEM_OK && pe < t->size; pe++)
        if (!cards[pe].ok)
            status = USHMEM_ERR_TRANSPORT; /* that PE said why */
    for (int pe = 0; status == USHMEM_OK && pe < t->size; pe++)
        if (pe != t->rank)
            status = take_grow_card(t, pe, &cards[pe], new_size, step);
    /* Every PE took every card, or none changes a key. */
    uint32_t ok = status == USHMEM_OK;
    ex = t->oob->allgather(t->oob->ctx, &ok, oks, sizeof(ok));
    if (ex != USHMEM_OK) {
        ushmemi_error("ofi: PE %d: the closing vote of a heap growth failed: %s", t->rank,
                      ushmemi_status_string(ex));
        status = ex;
    }
    for (int pe = 0; ex == USHMEM_OK && pe < t->size; pe++)
        if (!oks[pe] && status == USHMEM_OK)
            status = USHMEM_ERR_TRANSPORT; /* that PE said why */
    if (status != USHMEM_OK)
        goto close_mr;
    if (t->chunked)
        take_chunk(t, new_size, mr, cards);
    else
        take_whole(t, new_size, mr, cards);
    if (landing)
        ushmemi_ofi_am_heap_grown(t, new_size);
    free(oks);
    free(cards);
    return USHMEM_OK;

close_mr:
    if (mr != NULL) {
        void *saved = ushmemi_ofi_enter(t);
        fi_close(&mr->fid);
        ushmemi_ofi_leave(t, saved);
    }
free_tables:
    free(oks);
    free(cards);
    return status;
}

static int ofi_can_atomic(struct ushmemi_transport *t, int pe, const char **why_p)
{
    if (pe < 0 || pe >= t->size) {
        *why_p = "no such PE";
        return 0;
    }
    if (!t->have_atomics) {
        *why_p = t->no_atomic_why;
        return 0;
    }
    return 1;
}

static void ofi_keep_warm(struct ushmemi_transport *t)
{
    ushmemi_ofi_am_keep_warm(t, USHMEMI_OFI_WARM_PROXY);
}

static int ofi_progress(struct ushmemi_transport *t)
{
    if (t->info->domain_attr->data_progress != FI_PROGRESS_MANUAL)
        return 0;
    return ushmemi_ofi_progress(t);
}

const struct ushmemi_transport_ops ushmemi_transport_ofi_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "ofi",
    .init = ofi_init,
    .fini = ofi_fini,
    .can_atomic = ofi_can_atomic,
    .put = ushmemi_ofi_put,
    .get = ushmemi_ofi_get,
    .put_nbi = ushmemi_ofi_put_nbi,
    .get_nbi = ushmemi_ofi_get_nbi,
    .atomic = ushmemi_ofi_atomic,
    .fence = ushmemi_ofi_fence,
    .quiet = ushmemi_ofi_quiet,
    .progress = ofi_progress,
    .heap_grow = ofi_heap_grow,
    .keep_warm = ofi_keep_warm,
};
