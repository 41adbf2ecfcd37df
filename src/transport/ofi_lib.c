/* Loading libfabric at run time (ofi_lib.h). */
#include "ofi_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ushmem_config.h"
#include "../common/log.h"
#include "../common/sigsave.h"

struct ushmemi_fi_api ushmemi_fi;

static struct {
    pthread_once_t once;
    ushmem_status_t status;
    char why[1024];
    char path[400];
    char restored[256]; /* "SIGSEGV SIGTERM ..." */
} lib = {.once = PTHREAD_ONCE_INIT, .status = USHMEM_ERR_UNSUPPORTED};

/* The entry points and where each goes in ushmemi_fi. */
static const struct {
    const char *name;
    size_t offset;
} entries[] = {
    {"fi_getinfo", offsetof(struct ushmemi_fi_api, getinfo)},
    {"fi_freeinfo", offsetof(struct ushmemi_fi_api, freeinfo)},
    {"fi_dupinfo", offsetof(struct ushmemi_fi_api, dupinfo)},
    {"fi_fabric", offsetof(struct ushmemi_fi_api, fabric)},
    {"fi_strerror", offsetof(struct ushmemi_fi_api, strerror)},
    {"fi_version", offsetof(struct ushmemi_fi_api, version)},
    {"fi_getparams", offsetof(struct ushmemi_fi_api, getparams)},
    {"fi_freeparams", offsetof(struct ushmemi_fi_api, freeparams)},
};

/* dlsym's object pointer holds a function's address (POSIX); it is copied
 * bytewise into the table rather than cast between the kinds. */
static bool resolve_all(void *handle)
{
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        void *sym = dlsym(handle, entries[i].name);
        if (sym == NULL) {
            snprintf(lib.why, sizeof(lib.why), "%s has no %s", lib.path, entries[i].name);
            memset(&ushmemi_fi, 0, sizeof(ushmemi_fi));
            return false;
        }
        memcpy((char *)&ushmemi_fi + entries[i].offset, &sym, sizeof(sym));
    }
    return true;
}

static void load(void)
{
    static const char *const candidates[] = {USHMEM_OFI_LIBRARY, "libfabric.so.1"};
    struct ushmemi_sigsave saved;
    void *handle = NULL;
    char errors[400] = "";

    ushmemi_sigsave(&saved);
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) && handle == NULL; i++) {
        if (candidates[i][0] == '\0')
            continue;
        handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (handle != NULL) {
            snprintf(lib.path, sizeof(lib.path), "%s", candidates[i]);
        } else {
            const char *err = dlerror();
            size_t used = strlen(errors);
            snprintf(errors + used, sizeof(errors) - used, "%s%s", used > 0 ? "; " : "",
                     err != NULL ? err : candidates[i]);
        }
    }
    ushmemi_sigrestore(&saved, lib.restored, sizeof(lib.restored));
    if (handle == NULL) {
        snprintf(lib.why, sizeof(lib.why), "libfabric cannot be loaded (%s)", errors);
        return;
    }
    if (!resolve_all(handle)) {
        dlclose(handle);
        return;
    }
    /* Built against newer headers than the library: its answers would not
     * fill the structures these headers describe. */
    uint32_t version = ushmemi_fi.version();
    if (FI_VERSION_LT(version, FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION))) {
        snprintf(lib.why, sizeof(lib.why), "%s is libfabric %u.%u, older than the %u.%u this "
                 "ushmem was built against", lib.path, FI_MAJOR(version), FI_MINOR(version),
                 FI_MAJOR_VERSION, FI_MINOR_VERSION);
        memset(&ushmemi_fi, 0, sizeof(ushmemi_fi));
        dlclose(handle);
        return;
    }
    /* The providers start with the first fi_getinfo, where some install
     * handlers of their own. */
    ushmemi_sigsave(&saved);
    struct fi_info *info = NULL;
    if (ushmemi_fi.getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, NULL,
                           &info) == 0)
        ushmemi_fi.freeinfo(info);
    ushmemi_sigrestore(&saved, lib.restored, sizeof(lib.restored));
    if (lib.restored[0] != '\0')
        ushmemi_debug("ofi: loading %s installed handlers for %s; the program's dispositions are "
                      "back", lib.path, lib.restored);
    lib.status = USHMEM_OK;
    /* The handle stays open: libfabric is never unloaded. */
}

ushmem_status_t ushmemi_fi_load(const char **why_p)
{
    pthread_once(&lib.once, load);
    if (lib.status != USHMEM_OK && why_p != NULL)
        *why_p = lib.why;
    return lib.status;
}

const char *ushmemi_fi_path(void) { return lib.path; }

const char *ushmemi_fi_restored_signals(void) { return lib.restored; }
