/* The team-context example of the OpenSHMEM specification
 * (shmem_team_create_ctx), as a test: two overlapping teams split from the
 * world, the even PEs and every third PE, with a context on each; every
 * member puts its team PE number to its right neighbour through its team's
 * context, and the PEs in both teams add their two values on one of them
 * through the even team's context, after translating that PE's number.
 *
 * What the example relies on, and no PE may see as an error: a PE outside a
 * team holds SHMEM_TEAM_INVALID, shmem_team_create_ctx on it returns nonzero
 * and SHMEM_CTX_INVALID, and shmem_ctx_quiet, shmem_ctx_fence and
 * shmem_ctx_destroy on that do nothing; with fewer than 3 PEs "every third
 * PE" has size 0, which creates no team. Each PE checks its values and that
 * the library printed no ERROR line. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Symmetric: the data segment. */
static int from_left_even = -1, from_left_third = -1;
static int total;

static int failures;
#define EXPECT(cond, ...)                                                                     \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stdout, "PE %d: ", shmem_my_pe());                                       \
            fprintf(stdout, __VA_ARGS__);                                                     \
            fputc('\n', stdout);                                                              \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

/* The PE that src_pe of one context's team is in the other's, -1 when none. */
static int ctx_translate_pe(shmem_ctx_t from, int src_pe, shmem_ctx_t to)
{
    shmem_team_t from_team, to_team;
    if (from == SHMEM_CTX_INVALID || to == SHMEM_CTX_INVALID)
        return -1;
    if (shmem_ctx_get_team(from, &from_team) != 0 || shmem_ctx_get_team(to, &to_team) != 0)
        return -1;
    return shmem_team_translate_pe(from_team, src_pe, to_team);
}

static shmem_ctx_t ctx_on(shmem_team_t team, const char *name)
{
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT; /* overwritten either way */
    int rc = shmem_team_create_ctx(team, 0, &ctx);
    if (team == SHMEM_TEAM_INVALID)
        EXPECT(rc != 0 && ctx == SHMEM_CTX_INVALID,
               "context on SHMEM_TEAM_INVALID (%s): rc %d, ctx %p", name, rc, (void *)ctx);
    else
        EXPECT(rc == 0 && ctx != SHMEM_CTX_INVALID, "context on %s: rc %d", name, rc);
    return ctx;
}

/* Puts this PE's number in ctx's team to the next member of that team. */
static void send_right(shmem_ctx_t ctx, int *where)
{
    shmem_team_t team;
    if (ctx == SHMEM_CTX_INVALID)
        return;
    shmem_ctx_get_team(ctx, &team);
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    shmem_ctx_int_p(ctx, where, me, (me + 1) % n);
}

/* Stderr into a temporary file while the library runs, so that each PE can
 * look for ERROR lines in what it printed. */
static FILE *captured;
static int saved_stderr = -1;

static void capture_stderr(void)
{
    fflush(stderr);
    captured = tmpfile();
    saved_stderr = dup(2);
    if (captured == NULL || saved_stderr < 0 || dup2(fileno(captured), 2) < 0) {
        fprintf(stdout, "cannot capture stderr\n");
        exit(2);
    }
}

/* Restores stderr, copies what was captured to it and says whether it held
 * an ERROR line. */
static int release_stderr(void)
{
    char line[1024];
    int errors = 0;
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(captured);
    while (fgets(line, sizeof(line), captured) != NULL) {
        fputs(line, stderr);
        errors += strstr(line, "ERROR") != NULL;
    }
    fclose(captured);
    return errors;
}

int main(void)
{
    shmem_init();
    capture_stderr();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_team_config_t conf = {.num_contexts = 1};
    long mask = SHMEM_TEAM_NUM_CONTEXTS;

    /* The PEs 0, 2, 4, ... */
    shmem_team_t even = SHMEM_TEAM_WORLD, third = SHMEM_TEAM_WORLD;
    int n_even = (npes + 1) / 2, n_third = npes / 3;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, n_even, &conf, mask, &even);
    EXPECT(rc == 0, "even split: rc %d", rc);
    EXPECT((even != SHMEM_TEAM_INVALID) == (me % 2 == 0), "even split: handle %p",
           (void *)even);
    /* Splits of one parent into overlapping teams are separated by a sync
     * of the parent, as the example does. */
    shmem_team_sync(SHMEM_TEAM_WORLD);
    /* The PEs 0, 3, 6, ...: npes / 3 of them, none below 3 PEs. */
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 3, n_third, &conf, mask, &third);
    EXPECT((rc == 0) == (n_third > 0), "split of size %d: rc %d", n_third, rc);
    EXPECT((third != SHMEM_TEAM_INVALID) == (n_third > 0 && me % 3 == 0 && me / 3 < n_third),
           "split of size %d: handle %p", n_third, (void *)third);

    /* A split of SHMEM_TEAM_INVALID, as a PE outside a team makes when it
     * splits "its" team like the members: nonzero and no team. */
    shmem_team_t none = SHMEM_TEAM_WORLD, x = SHMEM_TEAM_WORLD, y = SHMEM_TEAM_WORLD;
    rc = shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &none);
    EXPECT(rc != 0 && none == SHMEM_TEAM_INVALID, "split of SHMEM_TEAM_INVALID: rc %d", rc);
    rc = shmem_team_split_2d(SHMEM_TEAM_INVALID, 1, NULL, 0, &x, NULL, 0, &y);
    EXPECT(rc != 0 && x == SHMEM_TEAM_INVALID && y == SHMEM_TEAM_INVALID,
           "2-D split of SHMEM_TEAM_INVALID: rc %d", rc);

    shmem_ctx_t ctx_even = ctx_on(even, "the even PEs");
    shmem_ctx_t ctx_third = ctx_on(third, "every third PE");

    send_right(ctx_even, &from_left_even);
    send_right(ctx_third, &from_left_third);
    /* Every PE orders and completes both contexts, valid or not. */
    shmem_ctx_fence(ctx_even);
    shmem_ctx_fence(ctx_third);
    shmem_ctx_quiet(ctx_even);
    shmem_ctx_quiet(ctx_third);
    shmem_team_sync(SHMEM_TEAM_WORLD);

    int my_even = me % 2 == 0 ? me / 2 : -1;
    int my_third = me % 3 == 0 && me / 3 < n_third ? me / 3 : -1;
    EXPECT(from_left_even == (my_even < 0 ? -1 : (my_even - 1 + n_even) % n_even),
           "from the left in the even team: %d", from_left_even);
    EXPECT(from_left_third == (my_third < 0 ? -1 : (my_third - 1 + n_third) % n_third),
           "from the left in the third team: %d", from_left_third);

    /* The PEs in both teams (0, 6, 12, ...) add their two values on the
     * last of them, named by its number in the third team and translated
     * into the even team's numbering. */
    int last_both = -1;
    for (int w = 0; w < npes; w += 6)
        if (w / 3 < n_third)
            last_both = w;
    if (ctx_even != SHMEM_CTX_INVALID && ctx_third != SHMEM_CTX_INVALID) {
        int target = ctx_translate_pe(ctx_third, last_both / 3, ctx_even);
        EXPECT(target == last_both / 2, "translated PE %d of the third team: %d", last_both / 3,
               target);
        if (target >= 0)
            shmem_ctx_int_atomic_add(ctx_even, &total, from_left_even + from_left_third, target);
    }
    shmem_ctx_quiet(ctx_even);
    shmem_ctx_quiet(ctx_third);
    shmem_team_sync(SHMEM_TEAM_WORLD);
    if (me == last_both) {
        int expected = 0;
        for (int w = 0; w <= last_both; w += 6)
            expected += (w / 2 - 1 + n_even) % n_even + (w / 3 - 1 + n_third) % n_third;
        EXPECT(total == expected, "total on PE %d: %d, expected %d", me, total, expected);
    }

    /* Contexts before their teams; both calls do nothing on the invalid
     * handles. */
    shmem_ctx_destroy(ctx_even);
    shmem_team_destroy(even);
    shmem_ctx_destroy(ctx_third);
    shmem_team_destroy(third);

    int errors = release_stderr();
    EXPECT(errors == 0, "the library printed %d ERROR lines", errors);
    shmem_finalize();
    if (failures == 0)
        printf("PE %d: the team context example passed\n", me);
    return failures == 0 ? 0 : 1;
}
