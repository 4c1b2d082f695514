/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c: every mechanism the program knows, and the choice of those a
 * run runs. Adding a mechanism is adding its file and one line below; what
 * differs between mechanisms is in their tables (session/mech.h), never in a
 * test of a name. */
#include <stdio.h>
#include <string.h>

#include "app/cuda/registry.h"
#include "core/log.h"

/* The registry, one line per mechanism: the name of its table, which its
 * file defines as gpuipc_mech_<name>. The order is the order of --help,
 * --list and a default run. */
#define GPUIPC_MECHANISMS(X)                                                              \
    X(vmm)                  /* mech/cuda/vmm_fd.c */                                      \
    X(vmm_pidfd)            /* mech/cuda/vmm_pidfd.c */                                   \
    X(vmm_chunks)           /* mech/cuda/vmm_chunks.c */                                  \
    X(vmm_offset)           /* mech/cuda/vmm_offset.c */                                  \
    X(vmm_compressible)     /* mech/cuda/vmm_compressible.c */                            \
    X(vmm_host_numa)        /* mech/cuda/vmm_host_numa.c */                               \
    X(vmm_alias)            /* mech/cuda/vmm_alias.c */                                   \
    X(vmm_readonly)         /* mech/cuda/vmm_readonly.c */                                \
    X(vmm_readonly_fault)   /* mech/cuda/vmm_ro_fault.c */                                \
    X(legacy_ipc)           /* mech/cuda/legacy_ipc.c */                                  \
    X(mempool_ipc)          /* mech/cuda/mempool_ipc.c */                                 \
    X(ipc_event)            /* mech/cuda/ipc_event.c */                                   \
    X(fabric)               /* mech/cuda/fabric.c */                                      \
    X(memfd)                /* mech/memfd.c, no GPU */                                    \
    X(memfd_chunks)         /* mech/memfd_chunks.c, no GPU */                             \
    X(memfd_pidfd)          /* mech/memfd_pidfd.c, no GPU */

#define DECLARE(name) extern const gpuipc_mech gpuipc_mech_##name;
GPUIPC_MECHANISMS(DECLARE)
#undef DECLARE

#define ENTRY(name) &gpuipc_mech_##name,
const gpuipc_mech *const gpuipc_app_registry[] = {GPUIPC_MECHANISMS(ENTRY)};
#undef ENTRY
const size_t gpuipc_app_nmech = sizeof(gpuipc_app_registry) / sizeof(gpuipc_app_registry[0]);

_Static_assert(sizeof(gpuipc_app_registry) / sizeof(gpuipc_app_registry[0]) <=
                   GPUIPC_APP_NMECH_MAX, "the registry outgrew GPUIPC_APP_NMECH_MAX");

const gpuipc_mech *gpuipc_app_reference(void)
{
    size_t i;

    for (i = 0; i < gpuipc_app_nmech; i++)
        if (gpuipc_app_registry[i]->reference)
            return gpuipc_app_registry[i];
    return gpuipc_app_registry[0];
}

/* --bench's host baseline: the first plain host mechanism that needs no GPU. */
static const gpuipc_mech *host_baseline(void)
{
    size_t i;

    for (i = 0; i < gpuipc_app_nmech; i++) {
        const gpuipc_mech *m = gpuipc_app_registry[i];

        if (!m->needs_cuda && m->memory == GPUIPC_MECH_HOST && !m->chunked)
            return m;
    }
    return NULL;
}

static int usage_error(const char *what, const char *why)
{
    gpuipc_log_say("%s: %s", what, why);
    fprintf(stderr, "Try 'gpuipc_test --help'.\n");
    return GPUIPC_USAGE;
}

int gpuipc_app_select(const gpuipc_options *o, gpuipc_app_selection *s)
{
    const gpuipc_mech *const *all = gpuipc_app_registry;
    const size_t n = gpuipc_app_nmech;
    const gpuipc_mech *base;
    gpuipc_err err;
    size_t i;

    memset(s, 0, sizeof(*s));
    if (gpuipc_mech_check_registry(all, n, &err) < 0) {
        gpuipc_log_say("internal error: the registry (app/cuda/registry.c): "
                "%s", err.msg);
        return GPUIPC_FAIL;
    }
    if (o->pairs != NULL && o->only == NULL) { /* --pairs: the reference, unless told */
        s->sel[s->nsel++] = gpuipc_app_reference();
    } else if (gpuipc_mech_select(all, n, o->only, s->sel, &s->nsel, &err) < 0) {
        return usage_error("--only", err.msg);
    }
    /* --pairs runs each mechanism from one GPU to another: those that
     * cross GPUs only. */
    for (i = 0; o->pairs != NULL && i < s->nsel; i++) {
        if (!s->sel[i]->cross_device) {
            char why[GPUIPC_ERR_LEN];

            snprintf(why, sizeof(why), "%s does not cross GPUs (%s), and --pairs runs "
                     "mechanisms between devices; take it out of --only", s->sel[i]->name,
                     !s->sel[i]->needs_cuda ? "host memory, no GPU's"
                     : "destructive: its consumer is spent on one GPU");
            return usage_error("--pairs", why);
        }
    }
    /* --bench measures the host baseline beside the default set. */
    base = host_baseline();
    if (o->bench && o->only == NULL && base != NULL &&
        gpuipc_mech_find(s->sel, s->nsel, base->name) == NULL)
        s->sel[s->nsel++] = base;
    /* --destructive adds the destructive mechanisms to the default set; one
     * named by --only needs the flag all the same. */
    if (o->destructive && o->only == NULL && o->pairs == NULL)
        for (i = 0; i < n; i++)
            if (all[i]->destructive && gpuipc_mech_find(s->sel, s->nsel, all[i]->name) == NULL)
                s->sel[s->nsel++] = all[i];
    for (i = 0; i < s->nsel; i++) {
        if (s->sel[i]->destructive && !o->destructive) {
            char why[GPUIPC_ERR_LEN];

            snprintf(why, sizeof(why), "that mechanism makes a GPU kernel fault on purpose, "
                     "which ruins the CUDA context of a consumer forked for it; add "
                     "--destructive to run it");
            gpuipc_log_say("--only %s: %s", s->sel[i]->name, why);
            fprintf(stderr, "Try 'gpuipc_test --help'.\n");
            return GPUIPC_USAGE;
        }
    }
    /* --device names the GPU of the GPU mechanisms: with none selected it
     * would be taken and never used, whatever it names. */
    if (o->device_set && !o->list) {
        for (i = 0; i < s->nsel && !s->sel[i]->needs_cuda; i++)
            ;
        if (i == s->nsel)
            return usage_error("--device", "no selected mechanism uses a GPU (those of --only "
                               "share host memory): leave --device out, or add a GPU "
                               "mechanism to --only");
    }
    if (o->require != NULL && gpuipc_mech_select(all, n, o->require, s->req, &s->nreq, &err) < 0)
        return usage_error("--require", err.msg);
    for (i = 0; i < s->nreq; i++) {
        if (gpuipc_mech_find(s->sel, s->nsel, s->req[i]->name) == NULL) {
            gpuipc_log_say("--require %s: that mechanism is not selected to run "
                    "(add it to --only)", s->req[i]->name);
            return GPUIPC_USAGE;
        }
    }
    return 0;
}
