/* SPDX-License-Identifier: Apache-2.0 */
/* mech.c: finding and selecting mechanisms by name. */
#include "session/mech.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "core/account.h"

const gpuipc_mech *gpuipc_mech_find(const gpuipc_mech *const *all, size_t n, const char *name)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

void gpuipc_mech_name_fd(gpuipc_err *err, int fd)
{
    char kind[160];
    size_t n = strlen(err->msg);

    if (n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - n, "; the FD offered is %s",
                 gpuipc_account_fd_kind(fd, kind, sizeof(kind)));
}

int gpuipc_mech_offer_shape(const char *name, const gpuipc_msg_offer *offer, unsigned nfds,
                            unsigned fds, unsigned blob, gpuipc_err *err)
{
    char want_blob[32] = "";

    if (nfds == fds && (blob == GPUIPC_MECH_ANY_BLOB || offer->blob_len == blob))
        return 0;
    if (blob != GPUIPC_MECH_ANY_BLOB)
        snprintf(want_blob, sizeof(want_blob), " and a %u-byte blob", blob);
    return gpuipc_err_set(err, -EPROTO, "%s offer carries %u FDs and a %u-byte blob, expected "
                          "%u FD%s%s", name, nfds, offer->blob_len, fds, fds == 1 ? "" : "s",
                          want_blob);
}

int gpuipc_mech_check_registry(const gpuipc_mech *const *all, size_t n, gpuipc_err *err)
{
    size_t i, refs = 0;

    for (i = 0; i < n; i++) {
        const gpuipc_mech *m = all[i];
        size_t len = m->name != NULL ? strlen(m->name) : 0;

        if (len == 0 || len >= GPUIPC_WIRE_NAME_LEN ||
            m->name[strspn(m->name, "abcdefghijklmnopqrstuvwxyz0123456789-")] != '\0')
            return gpuipc_err_set(err, -EINVAL, "mechanism %zu: name '%s' is not 1 to %d bytes "
                                  "of a-z, 0-9 and '-' (what the wire carries)", i,
                                  m->name ? m->name : "(none)", GPUIPC_WIRE_NAME_LEN - 1);
        if (gpuipc_mech_find(all, i, m->name) != NULL)
            return gpuipc_err_set(err, -EINVAL, "mechanism '%s' is registered twice", m->name);
        if (m->summary == NULL || m->probe == NULL || m->alloc == NULL || m->export == NULL ||
            m->import == NULL || m->release == NULL ||
            (m->chunked && (m->export_more == NULL || m->import_more == NULL)))
            return gpuipc_err_set(err, -EINVAL, "mechanism '%s' lacks its summary or an "
                                  "operation", m->name);
        refs += m->reference != 0;
    }
    if (refs != 1)
        return gpuipc_err_set(err, -EINVAL, "%zu reference mechanisms registered; there must "
                              "be one", refs);
    return 0;
}

static void list_names(const gpuipc_mech *const *all, size_t n, char *buf, size_t len)
{
    size_t i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", all[i]->name);
}

/* Edit distance (insertions, deletions, substitutions) between a and b,
 * names of at most GPUIPC_WIRE_NAME_LEN bytes. */
static size_t distance(const char *a, const char *b)
{
    size_t row[GPUIPC_WIRE_NAME_LEN + 1], la = strlen(a), lb = strlen(b), i, j;

    if (la > GPUIPC_WIRE_NAME_LEN || lb > GPUIPC_WIRE_NAME_LEN)
        return SIZE_MAX;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        size_t diag = row[0], up;

        row[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t best = diag + (a[i - 1] != b[j - 1]);

            up = row[j];
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* The one mechanism name a mistyped name was most likely meant for: the
 * nearest by edit distance, where it is near (2 edits, or a third of the
 * name), or the only one it begins; NULL where none stands out. */
static const char *nearest(const gpuipc_mech *const *all, size_t n, const char *name)
{
    size_t i, best = SIZE_MAX, len = strlen(name), ties = 0, prefixed = 0;
    const char *pick = NULL, *prefix = NULL;

    for (i = 0; i < n; i++) {
        size_t d = distance(name, all[i]->name);

        if (d < best) {
            best = d;
            pick = all[i]->name;
            ties = 0;
        } else if (d == best) {
            ties++;
        }
        if (len >= 3 && strncmp(all[i]->name, name, len) == 0) {
            prefix = all[i]->name;
            prefixed++;
        }
    }
    if (pick != NULL && ties == 0 && (best <= 2 || best * 3 <= len))
        return pick;
    return prefixed == 1 ? prefix : NULL;
}

int gpuipc_mech_select(const gpuipc_mech *const *all, size_t n, const char *only,
                       const gpuipc_mech **sel, size_t *nsel, gpuipc_err *err)
{
    char names[256];
    size_t i, k = 0;
    const char *p;

    if (only == NULL) {
        for (i = 0; i < n; i++)
            if (all[i]->by_default)
                sel[k++] = all[i];
        *nsel = k;
        return 0;
    }
    list_names(all, n, names, sizeof(names));
    p = only;
    for (;;) {
        char name[GPUIPC_WIRE_NAME_LEN + 1];
        size_t len = strcspn(p, ",");
        const gpuipc_mech *m;
        const char *meant;

        if (len == 0)
            return gpuipc_err_set(err, -EINVAL, "empty mechanism name in '%s' (known: %s)",
                                  only, names);
        if (len >= sizeof(name))
            return gpuipc_err_set(err, -EINVAL, "unknown mechanism '%.*s' (known: %s)",
                                  (int)len, p, names);
        memcpy(name, p, len);
        name[len] = '\0';
        m = gpuipc_mech_find(all, n, name);
        if (m == NULL && (meant = nearest(all, n, name)) != NULL)
            return gpuipc_err_set(err, -EINVAL, "unknown mechanism '%s': did you mean '%s'? "
                                  "(gpuipc_test --list names them all)", name, meant);
        if (m == NULL)
            return gpuipc_err_set(err, -EINVAL, "unknown mechanism '%s' (known: %s)", name,
                                  names);
        for (i = 0; i < k; i++)
            if (sel[i] == m)
                return gpuipc_err_set(err, -EINVAL, "mechanism '%s' is named twice", name);
        if (k == n)
            return gpuipc_err_set(err, -EINVAL, "too many mechanisms in '%s'", only);
        sel[k++] = m;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *nsel = k;
    return 0;
}
