/* Symmetric global and static variables: the executable's writable segment
 * (.data and .bss) is moved onto memory the device backend can export, then
 * mapped by every local peer like the heap. Peers run the same executable,
 * so an object's offset in the segment is the same everywhere even when
 * address randomisation puts the segment at different addresses. */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/pages.h"
#include "internal.h"

/* True while the segment is on shared memory (rather than only registered
 * with the fabric, when mapping is off). */
static bool shared;

struct segment {
    uintptr_t start, end;
    uintptr_t relro_end; /* 0 when the executable has no RELRO range */
    uintptr_t bias;      /* the executable's load address (PIE) */
};

static int find_writable(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct segment *seg = arg;
    /* The first object reported is the executable itself. */
    seg->bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && seg->start == seg->end) {
            seg->start = info->dlpi_addr + ph->p_vaddr;
            seg->end = seg->start + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_RELRO) {
            seg->relro_end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
    return 1;
}

/* Writable sections that hold no symmetric object: what the dynamic
 * linker and the C runtime jump through or call. */
static bool relocation_target(const char *name)
{
    static const char *const names[] = {".got",        ".got.plt",   ".plt",  ".dynamic",
                                        ".init_array", ".fini_array", ".preinit_array",
                                        ".ctors",      ".dtors",      ".data.rel.ro", ".jcr"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

static bool read_at(int fd, void *buf, size_t len, off_t off)
{
    return pread(fd, buf, len, off) == (ssize_t)len;
}

/* The bytes at the start of [first, last) (the part of the writable segment
 * made symmetric) that come before its first symmetric object: the end of
 * the last relocation target in it (under partial RELRO, .got.plt; without
 * RELRO, .got, .dynamic and the init arrays too), from the executable's
 * section headers. The fabric never registers them: a stranger who wrote
 * there would redirect the program. last - first when a relocation target
 * lies after a symmetric object or the headers cannot be read: nothing of
 * the segment is then offered over the fabric. */
static size_t relocation_bytes(const struct segment *seg, uintptr_t first, uintptr_t last)
{
    size_t all = (size_t)(last - first), skip = all;
    uintptr_t objects = last; /* the first symmetric object's address */
    ElfW(Ehdr) eh;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return all;
    char *names = NULL;
    ElfW(Shdr) *sh = NULL;
    if (!read_at(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum)
        goto out;
    sh = calloc(eh.e_shnum, sizeof(*sh));
    if (sh == NULL || !read_at(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff))
        goto out;
    const ElfW(Shdr) *strtab = &sh[eh.e_shstrndx];
    names = malloc(strtab->sh_size + 1);
    if (names == NULL || !read_at(fd, names, strtab->sh_size, (off_t)strtab->sh_offset))
        goto out;
    names[strtab->sh_size] = '\0';
    uintptr_t targets_end = first;
    for (int i = 0; i < eh.e_shnum; i++) {
        if (!(sh[i].sh_flags & SHF_ALLOC) || !(sh[i].sh_flags & SHF_WRITE) ||
            sh[i].sh_name >= strtab->sh_size)
            continue;
        uintptr_t lo = seg->bias + sh[i].sh_addr, hi = lo + sh[i].sh_size;
        if (hi <= first || lo >= last || sh[i].sh_size == 0)
            continue;
        if (relocation_target(names + sh[i].sh_name)) {
            if (hi > targets_end)
                targets_end = hi;
        } else if (lo < objects) {
            objects = lo;
        }
    }
    if (targets_end <= objects)
        skip = (size_t)(targets_end - first);
    else
        ushmemi_debug("the data segment has a relocation target after a symmetric object: "
                      "globals are not reachable over the fabric");
out:
    free(names);
    free(sh);
    close(fd);
    return skip;
}

/* A child forked after shmem_init gets the segment back as private memory:
 * otherwise parent and child would write each other's globals. */
static void make_private_in_child(void)
{
    if (ushmemi_g.static_base == NULL || !shared)
        return;
    shared = false;
    size_t len = ushmemi_g.static_size;
    void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED)
        return;
    ushmemi_copy_segment(copy, ushmemi_g.static_base, len);
    if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, ushmemi_g.static_base) == MAP_FAILED)
        munmap(copy, len);
    ushmemi_g.static_base = NULL;
    ushmemi_g.static_size = 0;
}

ushmem_status_t ushmemi_static_share(const struct ushmemi_oob *oob,
                                     const struct ushmemi_ipc_config *config, bool map)
{
    struct segment seg = {0, 0, 0, 0};
    dl_iterate_phdr(find_writable, &seg);
    if (seg.start == seg.end) {
        ushmemi_debug("the executable has no writable segment: no symmetric globals");
        return USHMEM_OK;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t first = seg.start & ~(page - 1);
    /* The RELRO part (GOT, .dynamic, .init_array) stays private and
     * read-only: no peer may write into it. */
    if (seg.relro_end > first)
        first = (seg.relro_end + page - 1) & ~(page - 1);
    uintptr_t last = (seg.end + page - 1) & ~(page - 1);
    if (first >= last) {
        ushmemi_debug("the executable's writable segment is all RELRO: no symmetric globals");
        return USHMEM_OK;
    }
    char *start = (char *)first;
    size_t len = (size_t)(last - first);
    ushmemi_g.static_skip = relocation_bytes(&seg, first, last);
    ushmemi_debug("data segment [%p, %p): its first %zu bytes (relocation targets) are never "
                  "offered to the fabric", (void *)start, (void *)(start + len),
                  ushmemi_g.static_skip);

    if (!map) {
        /* Peers reach it over the fabric, which registers it where it is. */
        ushmemi_g.static_peers = calloc((size_t)ushmemi_g.n_pes, sizeof(*ushmemi_g.static_peers));
        if (ushmemi_g.static_peers == NULL)
            return USHMEM_ERR_NO_MEMORY;
        ushmemi_g.static_peers[ushmemi_g.my_pe].base = start;
        ushmemi_g.static_base = start;
        ushmemi_g.static_size = len;
        return USHMEM_OK;
    }
    ushmem_status_t status = ushmemi_g.dev_ops->share_static(ushmemi_g.dev, start, len);
    if (status == USHMEM_ERR_UNSUPPORTED) {
        ushmemi_debug("backend %s cannot share the data segment: globals are not remotely "
                      "accessible", ushmemi_g.dev_ops->name);
        return USHMEM_OK;
    }
    if (status != USHMEM_OK)
        return status;

    ushmemi_g.static_peers = calloc((size_t)ushmemi_g.n_pes, sizeof(*ushmemi_g.static_peers));
    if (ushmemi_g.static_peers == NULL) {
        status = USHMEM_ERR_NO_MEMORY;
        goto unshare;
    }
    struct ushmemi_ipc_config seg_config = *config;
    seg_config.segment = "data segment (globals and statics)";
    status = ushmemi_ipc_connect(oob, ushmemi_g.dev_ops, ushmemi_g.dev, start, len, &seg_config,
                                 ushmemi_g.static_peers);
    if (status != USHMEM_OK)
        goto free_peers;
    ushmemi_g.static_base = start;
    ushmemi_g.static_size = len;
    shared = true;
    static bool atfork_done;
    if (!atfork_done && pthread_atfork(NULL, NULL, make_private_in_child) == 0)
        atfork_done = true;
    ushmemi_debug("data segment [%p, %p) is symmetric", (void *)start, (void *)(start + len));
    return USHMEM_OK;

free_peers:
    free(ushmemi_g.static_peers);
    ushmemi_g.static_peers = NULL;
unshare:
    ushmemi_g.dev_ops->unshare_static(ushmemi_g.dev, start, len);
    return status;
}

void ushmemi_static_unshare(void)
{
    if (ushmemi_g.static_peers == NULL)
        return;
    if (!shared) {
        free(ushmemi_g.static_peers);
        ushmemi_g.static_peers = NULL;
        ushmemi_g.static_base = NULL;
        ushmemi_g.static_size = 0;
        return;
    }
    shared = false;
    ushmemi_ipc_disconnect(ushmemi_g.dev_ops, ushmemi_g.dev, ushmemi_g.static_peers,
                           ushmemi_g.n_pes, ushmemi_g.my_pe, ushmemi_g.static_size);
    ushmemi_g.dev_ops->unshare_static(ushmemi_g.dev, ushmemi_g.static_base, ushmemi_g.static_size);
    free(ushmemi_g.static_peers);
    ushmemi_g.static_peers = NULL;
    ushmemi_g.static_base = NULL;
    ushmemi_g.static_size = 0;
}
