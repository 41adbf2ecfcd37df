/* Names and messages of ushmem_status_t, generated from USHMEMI_STATUS_LIST. */
#include "status.h"

#include <stddef.h>

struct status_entry {
    int value;
    const char *name;
    const char *message;
};

#define STATUS_ENTRY(name, value, msg) {(value), "USHMEM_" #name, (msg)},
static const struct status_entry entries[] = {USHMEMI_STATUS_LIST(STATUS_ENTRY)};
#undef STATUS_ENTRY

static const struct status_entry *find(ushmem_status_t status)
{
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
        if (entries[i].value == (int)status)
            return &entries[i];
    return NULL;
}

const char *ushmemi_status_name(ushmem_status_t status)
{
    const struct status_entry *e = find(status);
    return e ? e->name : "USHMEM_ERR_UNKNOWN";
}

const char *ushmemi_status_string(ushmem_status_t status)
{
    const struct status_entry *e = find(status);
    return e ? e->message : "unknown status";
}
