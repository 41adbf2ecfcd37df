/* Variable parsing and listing, generated from USHMEMI_VAR_LIST. */
#include "vars.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "names.h"

extern char **environ;

struct ushmemi_settings ushmemi_settings;
static int unknown_count;

ushmem_status_t ushmemi_parse_size(const char *text, size_t *value_p)
{
    char *end;
    if (text == NULL || !isdigit((unsigned char)text[0]))
        return USHMEM_ERR_INVALID_VALUE;
    /* OpenSHMEM allows an integer or a floating point value ("1.5G"). */
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0)
        return USHMEM_ERR_INVALID_VALUE;
    double fraction = 0;
    if (*end == '.') {
        end++;
        if (!isdigit((unsigned char)*end))
            return USHMEM_ERR_INVALID_VALUE;
        for (double scale = 0.1; isdigit((unsigned char)*end); end++, scale /= 10)
            fraction += (*end - '0') * scale;
    }
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return USHMEM_ERR_INVALID_VALUE;
    }
    if ((*end == 'b' || *end == 'B') && shift != 0)
        end++;
    if (*end != '\0')
        return USHMEM_ERR_INVALID_VALUE;
    if (v > (SIZE_MAX >> shift) - 1)
        return USHMEM_ERR_INVALID_VALUE;
    /* Round a fractional byte count up. */
    size_t extra = (size_t)(fraction * (double)((size_t)1 << shift) + 0.999999);
    *value_p = (size_t)(v << shift) + extra;
    return USHMEM_OK;
}

ushmem_status_t ushmemi_parse_bool(const char *text, bool *value_p)
{
    static const char *const yes[] = {"1", "y", "yes", "true", "on"};
    static const char *const no[] = {"0", "n", "no", "false", "off"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *value_p = true;
            return USHMEM_OK;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *value_p = false;
            return USHMEM_OK;
        }
    }
    return USHMEM_ERR_INVALID_VALUE;
}

ushmem_status_t ushmemi_parse_long(const char *text, long *value_p)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0')
        return USHMEM_ERR_INVALID_VALUE;
    *value_p = v;
    return USHMEM_OK;
}

static ushmem_status_t parse_SIZE(const char *t, size_t *v) { return ushmemi_parse_size(t, v); }
static ushmem_status_t parse_BOOL(const char *t, bool *v) { return ushmemi_parse_bool(t, v); }
static ushmem_status_t parse_INT(const char *t, long *v) { return ushmemi_parse_long(t, v); }
static ushmem_status_t parse_STRING(const char *t, const char **v)
{
    *v = t;
    return USHMEM_OK;
}

static const char *const type_names[] = {"size", "bool", "int", "string"};

#define VAR_NAME_ENTRY(field, name, type, def, help) name,
static const char *const known_names[] = {USHMEMI_VAR_LIST(VAR_NAME_ENTRY)};
#undef VAR_NAME_ENTRY

#define KNOWN_COUNT (sizeof(known_names) / sizeof(known_names[0]))

/* Variables of the OpenSHMEM specification and ushmem's own: a name with one
 * of these prefixes that the table lacks is a typo or a stale setting. */
static const char *const checked_prefixes[] = {"SHMEM_", "USHMEM_"};

static bool is_checked(const char *entry)
{
    for (size_t i = 0; i < sizeof(checked_prefixes) / sizeof(checked_prefixes[0]); i++)
        if (strncmp(entry, checked_prefixes[i], strlen(checked_prefixes[i])) == 0)
            return true;
    return false;
}

static bool is_known(const char *entry, size_t len)
{
    for (size_t i = 0; i < KNOWN_COUNT; i++)
        if (strlen(known_names[i]) == len && strncmp(entry, known_names[i], len) == 0)
            return true;
    return false;
}

/* The known name nearest to entry[0..len) when it is a near miss, else NULL. */
static const char *nearest_known(const char *entry, size_t len)
{
    const char *best = NULL;
    size_t best_distance = USHMEMI_NAME_FAR;
    for (size_t i = 0; i < KNOWN_COUNT; i++) {
        size_t d = ushmemi_name_distance(entry, len, known_names[i]);
        if (d < best_distance) {
            best_distance = d;
            best = known_names[i];
        }
    }
    return best;
}

ushmem_status_t ushmemi_vars_load(void)
{
    ushmem_status_t status = USHMEM_OK;

#define VAR_LOAD(field, name, type, def, help)                                        \
    do {                                                                              \
        const char *text_ = getenv(name);                                             \
        if (parse_##type(def, &ushmemi_settings.field) != USHMEM_OK)                  \
            ushmemi_error("built-in default '%s' of %s does not parse", def, name);   \
        if (text_ != NULL && parse_##type(text_, &ushmemi_settings.field) != USHMEM_OK) { \
            ushmemi_error("%s=%s is not a valid %s (%s; default %s)", name, text_,      \
                          type_names[USHMEMI_VAR_##type], help, def);                  \
            status = USHMEM_ERR_INVALID_VALUE;                                        \
        }                                                                             \
    } while (0);
    USHMEMI_VAR_LIST(VAR_LOAD)
#undef VAR_LOAD

    unknown_count = 0;
    for (char **e = environ; e && *e; e++) {
        size_t len = strcspn(*e, "=");
        if (!is_checked(*e) || is_known(*e, len))
            continue;
        const char *nearest = nearest_known(*e, len);
        if (nearest != NULL)
            ushmemi_warn("unknown variable %.*s is ignored; did you mean %s? (ushmem_info lists "
                         "the known ones)",
                         (int)len, *e, nearest);
        else
            ushmemi_warn("unknown variable %.*s is ignored (ushmem_info lists the known ones)",
                         (int)len, *e);
        unknown_count++;
    }
    return status;
}

int ushmemi_vars_unknown_count(void) { return unknown_count; }

static void print_value(FILE *out, enum ushmemi_var_type type, const void *value)
{
    switch (type) {
    case USHMEMI_VAR_SIZE: fprintf(out, "%zu", *(const size_t *)value); break;
    case USHMEMI_VAR_BOOL: fprintf(out, "%d", *(const bool *)value); break;
    case USHMEMI_VAR_INT: fprintf(out, "%ld", *(const long *)value); break;
    case USHMEMI_VAR_STRING: fprintf(out, "%s", *(const char *const *)value); break;
    }
}

void ushmemi_vars_print(FILE *out)
{
#define VAR_PRINT(field, name, type, def, help)                                   \
    fprintf(out, "  %-26s %-6s default %-6s current ", name, type_names[USHMEMI_VAR_##type], def); \
    print_value(out, USHMEMI_VAR_##type, &ushmemi_settings.field);                \
    fprintf(out, "%s\n      %s\n", getenv(name) ? " (set)" : "", help);
    USHMEMI_VAR_LIST(VAR_PRINT)
#undef VAR_PRINT
}
