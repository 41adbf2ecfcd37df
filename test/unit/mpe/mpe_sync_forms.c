/* shmem_sync under its one name in both forms: the OpenSHMEM 1.5 team form
 * shmem_sync(team), returning 0 (nonzero for SHMEM_TEAM_INVALID), and the
 * deprecated active-set form shmem_sync(PE_start, logPE_stride, PE_size,
 * pSync); also the function itself, called as (shmem_sync)(team) and through
 * a pointer. Each synchronises: a put before it is seen by its target after
 * it. The file also compiles as C++ (test sync-forms-cxx). */
#include <shmem.h>
#include <string.h>

#include "mpe_check.h"

#define WORDS 8
#define ROUNDS 20

static long psync_even[SHMEM_SYNC_SIZE];
static long psync_odd[SHMEM_SYNC_SIZE];

/* A set of PEs as PE_start, stride and size, with this PE's neighbours. */
struct ring {
    int start, log_stride, size;
    int next, prev; /* world PE numbers */
};

static struct ring team_ring(shmem_team_t team)
{
    struct ring r;
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    MPE_CHECK(me >= 0 && n > 0, "not a member of the team (PE %d of %d)", me, n);
    r.start = r.log_stride = r.size = 0; /* unused for teams */
    r.next = shmem_team_translate_pe(team, (me + 1) % n, SHMEM_TEAM_WORLD);
    r.prev = shmem_team_translate_pe(team, (me + n - 1) % n, SHMEM_TEAM_WORLD);
    return r;
}

/* The even PEs, or the odd ones: PE_start 0 or 1, stride 2. */
static struct ring parity_ring(void)
{
    struct ring r;
    int me = shmem_my_pe(), npes = shmem_n_pes();
    r.start = me % 2;
    r.log_stride = 1;
    r.size = (npes - r.start + 1) / 2;
    int index = me / 2;
    r.next = r.start + 2 * ((index + 1) % r.size);
    r.prev = r.start + 2 * ((index + r.size - 1) % r.size);
    return r;
}

enum form { TEAM_WORLD, TEAM_SHARED, PARENTHESISED, POINTER, ACTIVE_SET, N_FORMS };
static const char *const form_names[N_FORMS] = {
    "shmem_sync(SHMEM_TEAM_WORLD)", "shmem_sync(SHMEM_TEAM_SHARED)",
    "(shmem_sync)(SHMEM_TEAM_WORLD)", "a pointer to shmem_sync", "shmem_sync(active set)"};

/* The function itself, not the macro: a name not followed by '(' is not
 * expanded. */
static int (*const sync_pointer)(shmem_team_t) = shmem_sync;

static void sync_with(enum form form, const struct ring *r)
{
    int rc = 0;
    switch (form) {
    case TEAM_WORLD:
        rc = shmem_sync(SHMEM_TEAM_WORLD);
        break;
    case TEAM_SHARED:
        rc = shmem_sync(SHMEM_TEAM_SHARED);
        break;
    case PARENTHESISED:
        rc = (shmem_sync)(SHMEM_TEAM_WORLD);
        break;
    case POINTER:
        rc = sync_pointer(SHMEM_TEAM_WORLD);
        break;
    case ACTIVE_SET:
        shmem_sync(r->start, r->log_stride, r->size, r->start == 0 ? psync_even : psync_odd);
        break;
    case N_FORMS:
        break;
    }
    MPE_CHECK(rc == 0, "%s returned %d", form_names[form], rc);
}

/* Puts into slot round % 2 of the next PE, synchronises, checks what the
 * previous PE put. Slots alternate, so a PE overwrites one only after the
 * synchronisation that its reader reached after checking it. */
static void ring_round(long *slots, enum form form, const struct ring *r, long round)
{
    long words[WORDS];
    long *slot = slots + (round % 2) * WORDS;
    long value = (long)form * 1000000 + round * 100;
    for (int w = 0; w < WORDS; w++)
        words[w] = value + w;
    shmem_putmem(slot, words, sizeof(words), r->next);
    shmem_quiet(); /* shmem_sync does not complete puts; the caller does */
    sync_with(form, r);
    for (int w = 0; w < WORDS; w++)
        MPE_CHECK(slot[w] == value + w, "%s: round %ld word %d from PE %d is %ld, wanted %ld",
                  form_names[form], round, w, r->prev, slot[w], value + w);
}

int main(void)
{
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        psync_even[i] = psync_odd[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    long *slots = (long *)shmem_calloc(2 * WORDS, sizeof(long));
    MPE_CHECK(slots != NULL, "allocation failed");
    struct ring world = team_ring(SHMEM_TEAM_WORLD);
    struct ring shared = team_ring(SHMEM_TEAM_SHARED);
    struct ring parity = parity_ring();
    long round = 0;
    for (int form = 0; form < N_FORMS; form++) {
        const struct ring *r = form == ACTIVE_SET    ? &parity
                               : form == TEAM_SHARED ? &shared
                                                     : &world;
        for (int i = 0; i < ROUNDS; i++)
            ring_round(slots, (enum form)form, r, ++round);
        /* Before the next form's puts, every PE has checked this one's. */
        shmem_barrier_all();
    }
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        MPE_CHECK(psync_even[i] == SHMEM_SYNC_VALUE && psync_odd[i] == SHMEM_SYNC_VALUE,
                  "pSync[%d] was changed", i);

    int rc = shmem_sync(SHMEM_TEAM_INVALID);
    MPE_CHECK(rc != 0, "shmem_sync(SHMEM_TEAM_INVALID) returned 0");
    rc = (shmem_sync)(SHMEM_TEAM_INVALID);
    MPE_CHECK(rc != 0, "(shmem_sync)(SHMEM_TEAM_INVALID) returned 0");

    shmem_free(slots);
    if (shmem_my_pe() == 0)
        printf("shmem_sync: %d forms on %d PEs, %d rounds each: ok\n", (int)N_FORMS,
               shmem_n_pes(), ROUNDS);
    shmem_finalize();
    return 0;
}
