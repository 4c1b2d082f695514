/* SPDX-License-Identifier: Apache-2.0 */
/* containers.c: the container matrix's splits and how to run one. */
#include "containers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* unshare(1) options: --fork so the program is the namespace's first
 * process where a PID namespace is new, --kill-child so that it dies with
 * the pair runner's kill of the wrapper. */
static const char *const pid_ns[] = {"unshare", "--pid", "--fork", "--kill-child",
                                     "--mount-proc", NULL};
/* A shell first, so that the program is pid 2 in its namespace, not 1. */
static const char *const pid_ns_second[] = {"unshare", "--pid", "--fork", "--kill-child",
                                            "--mount-proc", "sh", "-c", "\"$0\" \"$@\"; exit $?",
                                            NULL};
static const char *const ipc_ns[] = {"unshare", "--ipc", NULL};
static const char *const net_ns[] = {"unshare", "--net", NULL};
static const char *const uts_ns[] = {"unshare", "--uts", NULL};
static const char *const mnt_ns[] = {"unshare", "--mount", NULL};
static const char *const user_ns[] = {"unshare", "--user", "--map-root-user", NULL};

const ct_split ct_splits[] = {
    {"none", "one host: no namespace between them", NULL, NULL, CT_SOCK_FILE, 0},
    {"pid (consumer)", "the consumer in a PID namespace of its own", NULL, pid_ns, CT_SOCK_FILE,
     0},
    {"pid, same pid", "each in a PID namespace of its own, both pid 1 there (two containers)",
     pid_ns, pid_ns, CT_SOCK_FILE, 0},
    {"pid, other pids", "each in a PID namespace of its own, pid 2 and pid 1", pid_ns_second,
     pid_ns, CT_SOCK_FILE, 0},
    {"ipc", "the consumer in an IPC namespace of its own", NULL, ipc_ns, CT_SOCK_FILE, 0},
    {"net, socket file", "the consumer in a network namespace of its own; a socket file", NULL,
     net_ns, CT_SOCK_FILE, 0},
    {"net, abstract name", "the consumer in a network namespace of its own; an @name", NULL,
     net_ns, CT_SOCK_ABSTRACT, 1},
    {"mnt, bind mount", "the consumer in a mount namespace of its own, reaching the socket "
     "through a bind mount of its directory", NULL, mnt_ns, CT_SOCK_BIND, 0},
    {"uts", "the consumer in a UTS namespace of its own", NULL, uts_ns, CT_SOCK_FILE, 0},
    {"user", "the consumer in a user namespace of its own, root mapped", NULL, user_ns,
     CT_SOCK_FILE, 0},
};
const size_t ct_nsplits = sizeof(ct_splits) / sizeof(ct_splits[0]);

/* Runs wrap... true; 1 if it exits 0, else 0 with why. */
static int wrap_works(const char *const *wrap, char *why, size_t len)
{
    const char *args[GPUIPC_PAIR_ARGS + 2];
    static th_run r;
    size_t n = 0, i;

    if (wrap == NULL)
        return 1;
    for (i = 1; wrap[i] != NULL && n < GPUIPC_PAIR_ARGS; i++)
        args[n++] = wrap[i];
    /* A shell wrapper runs "$0" "$@": give it true as $0. */
    args[n++] = "true";
    args[n] = NULL;
    if (th_spawn_file(&r, "/usr/bin/unshare", args, NULL, 10, 1, NULL, NULL) < 0 ||
        !th_exited(&r, 0)) {
        snprintf(why, len, "%s %s ... is refused here (status 0x%x): %.160s", wrap[0], wrap[1],
                 r.status, r.out);
        return 0;
    }
    return 1;
}

int ct_split_works(const ct_split *s, char *why, size_t len)
{
    static const char *const bind_check[] = {"unshare", "--mount", "sh", "-c",
                                             "mount --bind /tmp /mnt && exec \"$0\"", NULL};

    if (geteuid() != 0) {
        snprintf(why, len, "not root (uid %u): unshare needs CAP_SYS_ADMIN", (unsigned)geteuid());
        return 0;
    }
    return wrap_works(s->pwrap, why, len) && wrap_works(s->cwrap, why, len) &&
           (s->sock != CT_SOCK_BIND || wrap_works(bind_check, why, len));
}

int ct_unshare_works(char *why, size_t len)
{
    const char *const args[] = {"--pid", "--fork", "--kill-child", "--mount-proc", "--net",
                                "--ipc", "--uts", "true", NULL};
    static th_run r;

    if (geteuid() != 0) {
        snprintf(why, len, "not root (uid %u): unshare needs CAP_SYS_ADMIN", (unsigned)geteuid());
        return 0;
    }
    if (th_spawn_file(&r, "/usr/bin/unshare", args, NULL, 10, 1, NULL, NULL) < 0 ||
        !th_exited(&r, 0)) {
        snprintf(why, len, "unshare --pid --net --ipc --uts is refused here (status 0x%x): %.200s",
                 r.status, r.out);
        return 0;
    }
    return 1;
}

/* Reads the producer's summary rows. A row's reason is on the next, deeper
 * line, its cause on the one after; a row whose cause is shared says so,
 * and the reason is under "the same cause for N scenarios (a, b): ". */
void ct_read_rows(ct_run *r)
{
    const char *out = r->pair.proc[0].out, *p = strstr(out, "\n  scenario ");
    size_t i;

    r->nrows = 0;
    if (p == NULL)
        return;
    for (p = strchr(p + 1, '\n'); p != NULL && r->nrows < CT_ROWS; p = strchr(p + 1, '\n')) {
        char name[32], result[8];
        ct_row *row;

        if (sscanf(p + 1, "  %31s %7s", name, result) != 2 ||
            (strcmp(result, "PASS") && strcmp(result, "FAIL") && strcmp(result, "SKIP")) ||
            p[3] == ' ')
            continue;
        row = &r->rows[r->nrows++];
        memset(row, 0, sizeof(*row));
        snprintf(row->mech, sizeof(row->mech), "%s", name);
        snprintf(row->result, sizeof(row->result), "%s", result);
        if (!strcmp(result, "PASS"))
            continue;
        {
            const char *next = strchr(p + 1, '\n'), *after;

            if (next != NULL && strncmp(next + 1, "   ", 3) == 0 &&
                strncmp(next + 1 + strspn(next + 1, " "), "cause: ", 7) != 0) {
                const char *text = next + 1 + strspn(next + 1, " ");

                snprintf(row->reason, sizeof(row->reason), "%.*s", (int)strcspn(text, "\n"),
                         text);
                after = strchr(next + 1, '\n');
                if (after != NULL) {
                    const char *c = after + 1 + strspn(after + 1, " ");

                    if (strncmp(c, "cause: ", 7) == 0)
                        snprintf(row->cause, sizeof(row->cause), "%.*s",
                                 (int)strcspn(c, "\n"), c);
                }
            }
        }
    }
    /* Shared causes, below the table. */
    for (i = 0; i < r->nrows; i++) {
        ct_row *row = &r->rows[i];
        const char *s;

        if (strcmp(row->result, "PASS") == 0 || row->reason[0] != '\0')
            continue;
        for (s = strstr(out, "  the same cause for "); s != NULL;
             s = strstr(s + 1, "  the same cause for ")) {
            const char *open = strchr(s, '('), *close = open ? strstr(open, "): ") : NULL;
            char list[512], want[40];

            if (close == NULL)
                continue;
            snprintf(list, sizeof(list), ", %.*s,", (int)(close - open - 1), open + 1);
            snprintf(want, sizeof(want), ", %s,", row->mech);
            if (strstr(list, want) == NULL)
                continue;
            snprintf(row->reason, sizeof(row->reason), "%.*s", (int)strcspn(close + 3, "\n"),
                     close + 3);
            s = strchr(close, '\n');
            if (s != NULL && strncmp(s + 1 + strspn(s + 1, " "), "cause: ", 7) == 0)
                snprintf(row->cause, sizeof(row->cause), "%.*s",
                         (int)strcspn(s + 1 + strspn(s + 1, " "), "\n"),
                         s + 1 + strspn(s + 1, " "));
            break;
        }
    }
}

int ct_run_split(const char *prog, const ct_split *s, const char *only, const char *size,
                 double timeout, ct_run *out, char *why, size_t len)
{
    char dir[] = "/tmp/gpuipc-ct-XXXXXX", psock[96], csock[160], mnt[96], to[32], script[256];
    const char *pargs[] = {"--only", only, "--size", size ? size : "1M", "--timeout", to,
                           "--quiet", NULL};
    const char *cargs[] = {"--timeout", to, "--quiet", NULL};
    const char *bind_wrap[] = {"unshare", "--mount", "sh", "-c", script, "sh", NULL};
    gpuipc_pair_side p = {.wrap = s->pwrap, .sock = psock, .args = pargs};
    gpuipc_pair_side c = {.wrap = s->cwrap, .sock = csock, .args = cargs};
    gpuipc_err err;
    int rc;

    memset(out, 0, sizeof(*out));
    snprintf(to, sizeof(to), "%.1f", timeout);
    if (mkdtemp(dir) == NULL) {
        snprintf(why, len, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    if (s->sock == CT_SOCK_ABSTRACT)
        snprintf(psock, sizeof(psock), "@gpuipc-ct-%d-%s", (int)getpid(), dir + 15);
    else
        snprintf(psock, sizeof(psock), "%s/sock", dir);
    snprintf(csock, sizeof(csock), "%s", psock);
    mnt[0] = '\0';
    if (s->sock == CT_SOCK_BIND) {
        /* The consumer sees the producer's directory at another path. */
        snprintf(mnt, sizeof(mnt), "%s-mnt", dir);
        if (mkdir(mnt, 0700) < 0) {
            snprintf(why, len, "mkdir %s: %s", mnt, strerror(errno));
            rmdir(dir);
            return -1;
        }
        snprintf(script, sizeof(script), "mount --bind %s %s && exec \"$@\"", dir, mnt);
        snprintf(csock, sizeof(csock), "%s/sock", mnt);
        c.wrap = bind_wrap;
    }
    /* The runner cannot see a socket in another network namespace, so the
     * consumer's own --timeout covers the producer's start there. */
    rc = gpuipc_pair_run_sides(prog, &p, &c, NULL, s->cwrap != net_ns && s->cwrap != user_ns,
                               timeout * 3 + 10, 5, &out->pair, &err);
    unlink(psock);
    if (mnt[0])
        rmdir(mnt);
    rmdir(dir);
    if (rc < 0) {
        snprintf(why, len, "%s", err.msg);
        return -1;
    }
    ct_read_rows(out);
    return 0;
}

const ct_row *ct_row_of(const ct_run *r, const char *mech)
{
    size_t i;

    for (i = 0; i < r->nrows; i++)
        if (strcmp(r->rows[i].mech, mech) == 0)
            return &r->rows[i];
    return NULL;
}

int ct_exit(const ct_run *r, int i)
{
    const gpuipc_pair_proc *p = &r->pair.proc[i];

    return p->exited && WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1;
}

void ct_table(FILE *f, const char *const *mechs, size_t nmechs, const ct_run *runs)
{
    const char *notes[CT_ROWS * 16];
    size_t nnotes = 0, i, j, k;

    fprintf(f, "| mechanism |");
    for (j = 0; j < ct_nsplits; j++)
        fprintf(f, " %s |", ct_splits[j].name);
    fprintf(f, "\n| --- |");
    for (j = 0; j < ct_nsplits; j++)
        fprintf(f, " --- |");
    fprintf(f, "\n");
    for (i = 0; i < nmechs; i++) {
        fprintf(f, "| %s |", mechs[i]);
        for (j = 0; j < ct_nsplits; j++) {
            const ct_row *row = ct_row_of(&runs[j], mechs[i]);
            const char *text;

            if (ct_splits[j].no_session || row == NULL) {
                /* The consumer's last line says why there was none. */
                const char *out = runs[j].pair.proc[1].out, *last = out, *q;

                for (q = out; (q = strstr(q, "result: ")) != NULL; q++)
                    last = q;
                for (k = 0; k < nnotes && strcmp(notes[k], last) != 0; k++)
                    ;
                if (k == nnotes && nnotes < sizeof(notes) / sizeof(notes[0]))
                    notes[nnotes++] = last;
                fprintf(f, " no session (%zu) |", k + 1);
                continue;
            }
            if (strcmp(row->result, "PASS") == 0) {
                fprintf(f, " PASS |");
                continue;
            }
            text = row->cause[0] ? row->cause : row->reason;
            for (k = 0; k < nnotes && strcmp(notes[k], text) != 0; k++)
                ;
            if (k == nnotes && nnotes < sizeof(notes) / sizeof(notes[0]))
                notes[nnotes++] = text;
            fprintf(f, " %s (%zu) |", row->result, k + 1);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
    for (k = 0; k < nnotes; k++)
        fprintf(f, "%zu. %.*s\n", k + 1, (int)strcspn(notes[k], "\n"), notes[k]);
}
