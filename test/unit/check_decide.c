/* The per-pair route decision: a table of machines and the road each class
 * must take on them, the error a user reads when a class has none, policy
 * invariants over every combination of capabilities, and the USHMEM_SIM_CAPS
 * parser. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/transport/decide.h"

/* Cases are written as a base machine plus the facts that differ from it, so
 * a later designated initializer overriding an earlier one is the point. */
#pragma GCC diagnostic ignored "-Woverride-init"

#define NONE USHMEMI_ROUTE_NONE
#define SELF USHMEMI_ROUTE_SELF
#define DIRECT USHMEMI_ROUTE_DIRECT
#define PROXY USHMEMI_ROUTE_PROXY_OFI
#define STAGED USHMEMI_ROUTE_STAGED
#define HOST USHMEMI_ROUTE_HOST_SYNC

/* Two GPUs of one node joined by NVLink/Xe Link, heap in device memory, no
 * fabric: the starting point most cases change a few facts of. */
#define LINKED                                                                          \
    .same_node = true, .ipc_enabled = true, .p2p_access = true, .p2p_atomics = true,  \
    .heap_is_device = true, .strict = true
/* The same GPUs joined only by PCIe. */
#define PCIE LINKED, .link_is_pcie = true
/* A fabric that does RMA and atomics on device memory. */
#define GPU_FABRIC .fabric_rma = true, .fabric_atomics = true, .fabric_hmem = true
/* A peer on another node, heap in device memory. */
#define REMOTE .heap_is_device = true, .strict = true

struct decide_case {
    const char *name;
    int me, peer;
    struct ushmemi_pair_caps caps;
    enum ushmemi_route route[USHMEMI_CLASS_COUNT]; /* RMA, AMO, SIGNAL, SYNC */
    const char *warning;     /* substring; NULL: no warning */
    const char *error[8];    /* substrings the error must hold; empty: no error */
    const char *not_error[3]; /* substrings it must not hold */
};

static const struct decide_case cases[] = {
    {"self ignores every capability", 3, 3, {.strict = true}, {SELF, SELF, SELF, SELF}, NULL, {NULL}, {NULL}},
    {"nvlink pair is direct", 0, 1, {LINKED}, {DIRECT, DIRECT, DIRECT, DIRECT}, NULL, {NULL}, {NULL}},
    {"pcie with verified atomicops is direct", 0, 1, {PCIE, .pcie_atomics = USHMEMI_YES},
     {DIRECT, DIRECT, DIRECT, DIRECT}, NULL, {NULL}, {NULL}},
    {"pcie verdict is ignored on a non-pcie link", 0, 1, {LINKED, .pcie_atomics = USHMEMI_NO},
     {DIRECT, DIRECT, DIRECT, DIRECT}, NULL, {NULL}, {NULL}},
    {"pcie without atomicops: atomics over gpu fabric", 0, 1,
     {PCIE, .pcie_atomics = USHMEMI_NO, GPU_FABRIC}, {DIRECT, PROXY, PROXY, PROXY}, NULL, {NULL}, {NULL}},
    {"pcie without atomicops: atomics staged", 0, 1,
     {PCIE, .pcie_atomics = USHMEMI_NO, .fabric_rma = true, .fabric_atomics = true,
      .staging_allowed = true},
     {DIRECT, STAGED, STAGED, STAGED}, NULL, {NULL}, {NULL}},
    {"pcie without atomicops and no gpu fabric atomics fails", 0, 1,
     {PCIE, .pcie_atomics = USHMEMI_NO, .fabric_rma = true, .fabric_atomics = true},
     {DIRECT, NONE, NONE, NONE}, NULL,
     {"PE 0 -> PE 1: atomics, signals, and synchronisation have no route",
      "linked by PCIe without AtomicOps", "does not route AtomicOps", "no FI_ATOMIC on device memory",
      "enable AtomicOps in the BIOS", "connect the GPUs by NVLink/Xe Link",
      "use a fabric with GPU atomics", "or set USHMEM_FABRIC_STAGING=1"},
     {"RMA", NULL}},
    {"pcie unknown, strict off: direct with a warning", 0, 1,
     {PCIE, .pcie_atomics = USHMEMI_UNKNOWN, .strict = false}, {DIRECT, DIRECT, DIRECT, DIRECT},
     "could not verify AtomicOps on the PCIe path", {NULL}, {NULL}},
    {"pcie unknown, strict on: atomics over fabric with a warning", 0, 1,
     {PCIE, .pcie_atomics = USHMEMI_UNKNOWN, GPU_FABRIC}, {DIRECT, PROXY, PROXY, PROXY},
     "set USHMEM_STRICT=0", {NULL}, {NULL}},
    {"pcie unknown, strict on, no fabric fails", 4, 7,
     {PCIE, .pcie_atomics = USHMEMI_UNKNOWN}, {DIRECT, NONE, NONE, NONE}, NULL,
     {"PE 4 -> PE 7", "atomics", "could not be verified", "USHMEM_STRICT=1",
      "no FI_ATOMIC", "set USHMEM_STRICT=0", "use a fabric with GPU atomics"},
     {"USHMEM_FABRIC_STAGING", NULL}},
    {"no gpu peer atomics, host heap: atomics over fabric", 0, 1,
     {LINKED, .p2p_atomics = false, .heap_is_device = false, .fabric_atomics = true},
     {DIRECT, PROXY, PROXY, PROXY}, NULL, {NULL}, {NULL}},
    {"no gpu peer atomics and no fabric fails", 1, 0,
     {LINKED, .p2p_atomics = false}, {DIRECT, NONE, NONE, NONE}, NULL,
     {"PE 1 -> PE 0", "atomics", "no native atomics between the two GPUs", "no FI_ATOMIC",
      "connect the GPUs by NVLink/Xe Link"},
     {"BIOS", NULL}},
    {"remote peer over gpu fabric", 0, 8, {REMOTE, GPU_FABRIC}, {PROXY, PROXY, PROXY, PROXY}, NULL,
     {NULL}, {NULL}},
    {"remote peer, fabric without hmem, staging on", 0, 8,
     {REMOTE, .fabric_rma = true, .fabric_atomics = true, .staging_allowed = true},
     {STAGED, STAGED, STAGED, STAGED}, NULL, {NULL}, {NULL}},
    {"remote peer, fabric without hmem, staging off fails", 2, 9,
     {REMOTE, .fabric_rma = true, .fabric_atomics = true}, {NONE, NONE, NONE, NONE}, NULL,
     {"PE 2 -> PE 9: RMA, atomics, signals, and synchronisation have no route",
      "another node", "no RMA on device memory and no FI_ATOMIC on device memory",
      "use a fabric with GPU RMA and GPU atomics", "or set USHMEM_FABRIC_STAGING=1"},
     {NULL}},
    {"remote peer, no fabric at all fails without a staging hint", 2, 5, {REMOTE},
     {NONE, NONE, NONE, NONE}, NULL,
     {"PE 2 -> PE 5", "RMA", "atomics", "another node", "no FI_RMA and no FI_ATOMIC",
      "use a fabric with GPU RMA and GPU atomics"},
     {"STAGING", NULL}},
    {"staging on but no fabric at all fails", 0, 8, {REMOTE, .staging_allowed = true},
     {NONE, NONE, NONE, NONE}, NULL, {"PE 0 -> PE 8", "no FI_RMA and no FI_ATOMIC"},
     {"STAGING", NULL}},
    {"remote host heap, fabric without atomics: only atomics fail", 0, 3,
     {.heap_is_device = false, .strict = true, .fabric_rma = true},
     {PROXY, NONE, NONE, NONE}, NULL,
     {"PE 0 -> PE 3: atomics", "no FI_ATOMIC", "use a fabric with FI_ATOMIC"},
     {"RMA", "STAGING", "GPU"}},
    {"remote host heap, fabric without rma: only rma fails", 0, 3,
     {.heap_is_device = false, .strict = true, .fabric_atomics = true},
     {NONE, PROXY, PROXY, PROXY}, NULL,
     {"PE 0 -> PE 3: RMA has no route", "no FI_RMA", "use a fabric with FI_RMA"},
     {"atomics have", "STAGING", NULL}},
    {"two PEs on one device: direct, host-side sync", 0, 1,
     {.same_node = true, .same_device = true, .ipc_enabled = true, .heap_is_device = true,
      .strict = true, .link_is_pcie = true, .pcie_atomics = USHMEMI_NO},
     {DIRECT, DIRECT, DIRECT, HOST}, NULL, {NULL}, {NULL}},
    /* Waiting on the host needs the host sync segments, which are mapped
     * with the heaps: with ipc off, synchronisation takes the fabric too. */
    {"two PEs on one device with ipc off: fabric for every class", 0, 1,
     {.same_node = true, .same_device = true, .heap_is_device = true, .strict = true, GPU_FABRIC},
     {PROXY, PROXY, PROXY, PROXY}, NULL, {NULL}, {NULL}},
    {"ipc off and no fabric fails naming USHMEM_IPC", 0, 1,
     {LINKED, .ipc_enabled = false}, {NONE, NONE, NONE, NONE}, NULL,
     {"PE 0 -> PE 1", "USHMEM_IPC=0", "set USHMEM_IPC=1"}, {NULL}},
    {"no gpu peer access, fabric rma only fails for atomics", 0, 1,
     {LINKED, .p2p_access = false, .fabric_rma = true, .fabric_hmem = true},
     {PROXY, NONE, NONE, NONE}, NULL,
     {"atomics", "no peer access between the two GPUs", "enable GPU peer access",
      "use a fabric with FI_ATOMIC"},
     {"RMA", NULL}},
};

static void check_choice(const struct decide_case *tc, const struct ushmemi_route_plan *plan, int c)
{
    ck_assert_msg(plan->cls[c].route == tc->route[c], "%s: %s took %s, expected %s", tc->name,
                  ushmemi_op_class_name((enum ushmemi_op_class)c),
                  ushmemi_route_name(plan->cls[c].route), ushmemi_route_name(tc->route[c]));
    ck_assert_msg(plan->cls[c].why != NULL && plan->cls[c].why[0] != '\0', "%s: %s has no why",
                  tc->name, ushmemi_op_class_name((enum ushmemi_op_class)c));
}

START_TEST(test_table)
{
    const struct decide_case *tc = &cases[_i];
    struct ushmemi_route_plan plan;
    memset(&plan, 0x5a, sizeof(plan)); /* stale contents must not leak through */
    ushmemi_route_decide(tc->me, tc->peer, &tc->caps, &plan);

    for (int c = 0; c < USHMEMI_CLASS_COUNT; c++)
        check_choice(tc, &plan, c);

    if (tc->error[0] == NULL)
        ck_assert_msg(plan.error[0] == '\0', "%s: unexpected error: %s", tc->name, plan.error);
    for (int i = 0; i < 8 && tc->error[i] != NULL; i++)
        ck_assert_msg(strstr(plan.error, tc->error[i]) != NULL, "%s: error lacks \"%s\": %s",
                      tc->name, tc->error[i], plan.error);
    for (int i = 0; i < 3 && tc->not_error[i] != NULL; i++)
        ck_assert_msg(strstr(plan.error, tc->not_error[i]) == NULL, "%s: error holds \"%s\": %s",
                      tc->name, tc->not_error[i], plan.error);
    if (plan.error[0] != '\0') {
        /* One sentence: no full stop inside, nothing cut off. */
        ck_assert_msg(strstr(plan.error, ". ") == NULL, "%s: more than one sentence: %s", tc->name,
                      plan.error);
        ck_assert_uint_lt(strlen(plan.error), sizeof(plan.error) - 1);
    }

    if (tc->warning == NULL)
        ck_assert_msg(plan.warning[0] == '\0', "%s: unexpected warning: %s", tc->name, plan.warning);
    else
        ck_assert_msg(strstr(plan.warning, tc->warning) != NULL, "%s: warning lacks \"%s\": %s",
                      tc->name, tc->warning, plan.warning);
}
END_TEST

START_TEST(test_one_device_sync_why)
{
    struct ushmemi_pair_caps caps = {.same_node = true, .same_device = true, .ipc_enabled = true,
                                     .heap_is_device = true, .strict = true};
    struct ushmemi_route_plan plan;
    ushmemi_route_decide(0, 1, &caps, &plan);
    ck_assert_str_eq(plan.cls[USHMEMI_CLASS_SYNC].why,
                     "two PEs on one device: host-side synchronisation");
}
END_TEST

START_TEST(test_example_message)
{
    /* The message a user with PCIe-only GPUs and an HMEM fabric without GPU
     * atomics reads, word for word. */
    struct ushmemi_pair_caps caps = {PCIE, .pcie_atomics = USHMEMI_NO, .fabric_rma = true,
                                     .fabric_atomics = true};
    struct ushmemi_route_plan plan;
    ushmemi_route_decide(0, 1, &caps, &plan);
    ck_assert_str_eq(plan.error,
                     "PE 0 -> PE 1: atomics, signals, and synchronisation have no route: the GPUs "
                     "are linked by PCIe without AtomicOps (the config-space probe found a "
                     "requester not enabled, a port that does not route AtomicOps, egress blocking "
                     "or no 64-bit completer on the path), and the fabric offers no FI_ATOMIC "
                     "on device memory; enable AtomicOps in the BIOS, connect the GPUs by "
                     "NVLink/Xe Link, use a fabric with GPU atomics, or set "
                     "USHMEM_FABRIC_STAGING=1");
}
END_TEST

/* Every combination of the twelve booleans and the three PCIe answers. */
START_TEST(test_invariants)
{
    for (unsigned bits = 0; bits < (1u << 12); bits++) {
        for (int t = 0; t < 3; t++) {
            struct ushmemi_pair_caps caps = {
                .same_node = bits & 1,        .same_device = bits & 2,
                .p2p_access = bits & 4,       .p2p_atomics = bits & 8,
                .link_is_pcie = bits & 16,    .fabric_rma = bits & 32,
                .fabric_atomics = bits & 64,  .fabric_hmem = bits & 128,
                .heap_is_device = bits & 256, .ipc_enabled = bits & 512,
                .staging_allowed = bits & 1024, .strict = bits & 2048,
                .pcie_atomics = (enum ushmemi_tristate)t,
            };
            struct ushmemi_route_plan plan;
            ushmemi_route_decide(0, 1, &caps, &plan);
            const struct ushmemi_route_choice *rma = &plan.cls[USHMEMI_CLASS_RMA];
            const struct ushmemi_route_choice *amo = &plan.cls[USHMEMI_CLASS_AMO];
            const struct ushmemi_route_choice *sig = &plan.cls[USHMEMI_CLASS_SIGNAL];
            const struct ushmemi_route_choice *sync = &plan.cls[USHMEMI_CLASS_SYNC];
            bool local = caps.same_node || caps.same_device;

            /* Atomics and signals on one word never mix GPU and NIC atomics. */
            ck_assert_int_eq(sig->route, amo->route);
            if (caps.same_device && caps.ipc_enabled)
                ck_assert_int_eq(sync->route, HOST);
            else
                ck_assert_int_eq(sync->route, amo->route);

            bool any_none = false;
            for (int c = 0; c < USHMEMI_CLASS_COUNT; c++) {
                enum ushmemi_route r = plan.cls[c].route;
                ck_assert(r != SELF);
                ck_assert(plan.cls[c].why != NULL && plan.cls[c].why[0] != '\0');
                if (r == STAGED)
                    ck_assert(caps.staging_allowed);
                if (r == PROXY)
                    ck_assert(!caps.heap_is_device || caps.fabric_hmem);
                any_none |= r == NONE;
            }
            if (rma->route == DIRECT || amo->route == DIRECT)
                ck_assert(local && caps.ipc_enabled && (caps.same_device || caps.p2p_access));
            if (amo->route == DIRECT && !caps.same_device) {
                ck_assert(caps.p2p_atomics);
                if (caps.link_is_pcie)
                    ck_assert(caps.pcie_atomics == USHMEMI_YES ||
                              (caps.pcie_atomics == USHMEMI_UNKNOWN && !caps.strict));
            }
            /* Staging carries a class only over a fabric that has that class. */
            if (rma->route == STAGED || rma->route == PROXY)
                ck_assert(caps.fabric_rma);
            if (amo->route == STAGED || amo->route == PROXY)
                ck_assert(caps.fabric_atomics);
            if (rma->route == DIRECT && amo->route != DIRECT)
                ck_assert(amo->route != NONE || !caps.fabric_atomics || !caps.staging_allowed);

            ck_assert_int_eq(any_none, plan.error[0] != '\0');
            if (any_none) {
                ck_assert_ptr_nonnull(strstr(plan.error, "PE 0 -> PE 1: "));
                ck_assert_ptr_nonnull(strstr(plan.error, "no route"));
                ck_assert_ptr_nonnull(strstr(plan.error, "; "));
                ck_assert_uint_lt(strlen(plan.error), sizeof(plan.error) - 1);
            }
            /* An unverified path used for GPU atomics is always said aloud. */
            if (amo->route == DIRECT && !caps.same_device && caps.link_is_pcie &&
                caps.pcie_atomics == USHMEMI_UNKNOWN)
                ck_assert_ptr_nonnull(strstr(plan.warning, "could not verify AtomicOps"));
        }
    }
}
END_TEST

/* USHMEM_SIM_CAPS */

/* Runs the parser with stderr captured into msg. */
static ushmem_status_t apply_captured(const char *spec, struct ushmemi_pair_caps *caps, char *msg,
                                      size_t cap)
{
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(tmp), STDERR_FILENO), 0);
    ushmem_status_t status = ushmemi_sim_caps_apply(spec, caps);
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    rewind(tmp);
    size_t n = fread(msg, 1, cap - 1, tmp);
    msg[n] = '\0';
    fclose(tmp);
    return status;
}

START_TEST(test_sim_every_key)
{
    struct ushmemi_pair_caps caps = {.pcie_atomics = USHMEMI_NO};
    ck_assert_int_eq(ushmemi_sim_caps_apply(
                         "same_node=1,same_device=yes,p2p_access=1,p2p_atomics=yes,"
                         "pcie_atomics=unknown,link_is_pcie=1,fabric_rma=yes,fabric_atomics=1,"
                         "fabric_hmem=yes,heap_is_device=1,ipc_enabled=yes,staging_allowed=1,"
                         "strict=yes",
                         &caps),
                     USHMEM_OK);
    ck_assert(caps.same_node && caps.same_device && caps.p2p_access && caps.p2p_atomics);
    ck_assert_int_eq(caps.pcie_atomics, USHMEMI_UNKNOWN);
    ck_assert(caps.link_is_pcie && caps.fabric_rma && caps.fabric_atomics && caps.fabric_hmem);
    ck_assert(caps.heap_is_device && caps.ipc_enabled && caps.staging_allowed && caps.strict);

    ck_assert_int_eq(ushmemi_sim_caps_apply(
                         "same_node=0,same_device=no,p2p_access=0,p2p_atomics=no,"
                         "pcie_atomics=yes,link_is_pcie=0,fabric_rma=no,fabric_atomics=0,"
                         "fabric_hmem=no,heap_is_device=0,ipc_enabled=no,staging_allowed=0,"
                         "strict=no",
                         &caps),
                     USHMEM_OK);
    ck_assert(!caps.same_node && !caps.same_device && !caps.p2p_access && !caps.p2p_atomics);
    ck_assert_int_eq(caps.pcie_atomics, USHMEMI_YES);
    ck_assert(!caps.link_is_pcie && !caps.fabric_rma && !caps.fabric_atomics && !caps.fabric_hmem);
    ck_assert(!caps.heap_is_device && !caps.ipc_enabled && !caps.staging_allowed && !caps.strict);

    ck_assert_int_eq(ushmemi_sim_caps_apply("pcie_atomics=0", &caps), USHMEM_OK);
    ck_assert_int_eq(caps.pcie_atomics, USHMEMI_NO);
    ck_assert_int_eq(ushmemi_sim_caps_apply("pcie_atomics=1", &caps), USHMEM_OK);
    ck_assert_int_eq(caps.pcie_atomics, USHMEMI_YES);
    ck_assert_int_eq(ushmemi_sim_caps_apply("pcie_atomics=no", &caps), USHMEM_OK);
    ck_assert_int_eq(caps.pcie_atomics, USHMEMI_NO);
}
END_TEST

START_TEST(test_sim_overlays_probed)
{
    /* Only the named facts change; the rest stay as probed. */
    struct ushmemi_pair_caps caps = {PCIE, .pcie_atomics = USHMEMI_YES, GPU_FABRIC};
    ck_assert_int_eq(ushmemi_sim_caps_apply(" p2p_atomics=0 , fabric_hmem=0,p2p_atomics=1", &caps),
                     USHMEM_OK);
    ck_assert(caps.p2p_atomics); /* the later item wins */
    ck_assert(!caps.fabric_hmem);
    ck_assert(caps.same_node && caps.ipc_enabled && caps.p2p_access && caps.link_is_pcie);
    ck_assert(caps.fabric_rma && caps.fabric_atomics && caps.heap_is_device && caps.strict);
    ck_assert_int_eq(caps.pcie_atomics, USHMEMI_YES);

    /* The simulated machine of the brief gets the decision it implies. */
    ck_assert_int_eq(ushmemi_sim_caps_apply("pcie_atomics=unknown,fabric_atomics=0", &caps),
                     USHMEM_OK);
    struct ushmemi_route_plan plan;
    ushmemi_route_decide(0, 1, &caps, &plan);
    ck_assert_int_eq(plan.cls[USHMEMI_CLASS_RMA].route, DIRECT);
    ck_assert_int_eq(plan.cls[USHMEMI_CLASS_AMO].route, NONE);
    ck_assert_ptr_nonnull(strstr(plan.error, "set USHMEM_STRICT=0"));
}
END_TEST

START_TEST(test_sim_empty)
{
    struct ushmemi_pair_caps caps = {LINKED};
    struct ushmemi_pair_caps before = caps;
    ck_assert_int_eq(ushmemi_sim_caps_apply(NULL, &caps), USHMEM_OK);
    ck_assert_int_eq(ushmemi_sim_caps_apply("", &caps), USHMEM_OK);
    ck_assert_int_eq(ushmemi_sim_caps_apply("   ", &caps), USHMEM_OK);
    ck_assert_mem_eq(&caps, &before, sizeof(caps));
}
END_TEST

static const struct {
    const char *spec;
    const char *message; /* the log must hold it */
} bad_specs[] = {
    {"p2p_atomix=0", "'p2p_atomix=0' has an unknown key"},
    {"strict=0,fabric=1", "'fabric=1' has an unknown key"},
    {"P2P_ACCESS=1", "'P2P_ACCESS=1' has an unknown key"},
    {"=1", "'=1' has an unknown key"},
    {"p2p_access=maybe", "'p2p_access=maybe' has a bad value"},
    {"p2p_access=unknown", "'p2p_access=unknown' has a bad value"},
    {"pcie_atomics=2", "'pcie_atomics=2' has a bad value; use yes, no, 1 or 0 or unknown"},
    {"strict=", "'strict=' has a bad value"},
    {"strict=yes please", "'strict=yes please' has a bad value"},
    {"strict", "'strict' is not key=value"},
    {"strict=0,,fabric_rma=1", "has an empty item"},
    {"strict=0,", "has an empty item"},
    {",strict=0", "has an empty item"},
};

START_TEST(test_sim_bad)
{
    /* Each bad spec fails, names the item, and leaves the probed caps alone
     * even when good items came before it. */
    struct ushmemi_pair_caps caps = {LINKED, .pcie_atomics = USHMEMI_UNKNOWN};
    struct ushmemi_pair_caps before = caps;
    char msg[1024];
    ck_assert_int_eq(apply_captured(bad_specs[_i].spec, &caps, msg, sizeof(msg)),
                     USHMEM_ERR_INVALID_VALUE);
    ck_assert_msg(strstr(msg, bad_specs[_i].message) != NULL, "\"%s\": log lacks \"%s\": %s",
                  bad_specs[_i].spec, bad_specs[_i].message, msg);
    ck_assert_ptr_nonnull(strstr(msg, "USHMEM_SIM_CAPS"));
    ck_assert_mem_eq(&caps, &before, sizeof(caps));
}
END_TEST

START_TEST(test_names)
{
    ck_assert_str_eq(ushmemi_route_name(PROXY), "proxy/ofi");
    ck_assert_str_eq(ushmemi_route_name(HOST), "host-sync");
    ck_assert_str_eq(ushmemi_route_name(STAGED), "staged");
    ck_assert_str_eq(ushmemi_op_class_name(USHMEMI_CLASS_SYNC), "synchronisation");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("decide");
    TCase *tc = tcase_create("decide");
    tcase_add_loop_test(tc, test_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_one_device_sync_why);
    tcase_add_test(tc, test_example_message);
    tcase_add_test(tc, test_invariants);
    suite_add_tcase(s, tc);
    TCase *sim = tcase_create("sim_caps");
    tcase_add_test(sim, test_sim_every_key);
    tcase_add_test(sim, test_sim_overlays_probed);
    tcase_add_test(sim, test_sim_empty);
    tcase_add_loop_test(sim, test_sim_bad, 0, (int)(sizeof(bad_specs) / sizeof(bad_specs[0])));
    tcase_add_test(sim, test_names);
    suite_add_tcase(s, sim);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
