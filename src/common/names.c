/* See names.h. */
#include "names.h"

#include <string.h>

#define NAME_MAX_LEN 64

size_t ushmemi_name_distance(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen >= NAME_MAX_LEN || blen >= NAME_MAX_LEN)
        return USHMEMI_NAME_FAR;
    size_t row[NAME_MAX_LEN + 1];
    for (size_t j = 0; j <= blen; j++)
        row[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[blen] < USHMEMI_NAME_FAR ? row[blen] : USHMEMI_NAME_FAR;
}
