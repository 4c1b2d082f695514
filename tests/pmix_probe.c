/* SPDX-License-Identifier: Apache-2.0 */
/* pmix_probe.c: lib/launch under a real PMIx launcher, for tests/launch.sh
 * (`mpirun -np 4 build/tests/pmix_probe`). Each rank joins the job, runs
 * the token and card exchange, and prints what it saw, one line each, every
 * line starting "rank <r>:":
 *
 *   joined: rank R of N, local L of M (PMIx: <version>)
 *   token <32 hex>
 *   card K: same node: ... | card K: not on this node: ...
 *   node place I of C
 *   fds: A at start, A with PMIx up (P of PMIx's left out), A after finalize
 *   PASS
 *
 * With --skip-fence K, rank K stays away from a fence that every other rank
 * enters; they must come out of it with PMIx_Fence's timeout, named, within
 * the timeout and its grace, and say "fence timed out after S s: <error>".
 * Exit 0 where all this held, 1 where it did not (FAIL: <why>), 77 where
 * there is no PMIx launcher or library (SKIP: <why>). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/account.h"
#include "core/clock.h"
#include "launch/job.h"
#include "launch/meet.h"
#include "launch/pmix.h"

static unsigned rank_seen; /* for the lines' prefix before the rank is known */

static int fail(const char *what, const gpuipc_err *e)
{
    printf("rank %u: FAIL: %s: %s\n", rank_seen, what, e->msg);
    fflush(stdout);
    return 1;
}

/* Counts the entries of /proc/self/fd, PMIx's included (the listing's own
 * FD aside). */
static size_t raw_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    size_t n = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d);
    closedir(d);
    return n;
}

static int skip_fence(gpuipc_launch *l, uint32_t away, double timeout_s)
{
    uint32_t r = gpuipc_launch_rank(l);
    uint64_t t0 = gpuipc_clock_ns();
    double took;
    gpuipc_err e;
    int rc;

    if (r == away) {
        printf("rank %u: staying away from the fence for %.0f s\n", r, timeout_s + 4);
        fflush(stdout);
        gpuipc_clock_sleep((uint64_t)((timeout_s + 4) * 1e9));
        return 0;
    }
    rc = gpuipc_launch_fence(l, "probe", &e);
    took = (double)(gpuipc_clock_ns() - t0) / 1e9;
    if (rc == 0) {
        printf("rank %u: FAIL: the fence completed in %.2f s although rank %u never came\n", r,
               took, away);
        return 1;
    }
    printf("rank %u: fence timed out after %.2f s: %s\n", r, took, e.msg);
    if (rc != -ETIMEDOUT || strstr(e.msg, "PMIx_Fence") == NULL) {
        printf("rank %u: FAIL: the fence failed with %s, not a named timeout\n", r,
               strerror(-rc));
        return 1;
    }
    /* The server's PMIX_TIMEOUT, or this side's deadline 2 s after it; where
     * the server ended the fence regardless, a get of the missing mark after
     * it, with the same timeout. */
    if (took > 2 * timeout_s + 3) {
        printf("rank %u: FAIL: the fence took %.2f s, more than 2 x %.0f s + 3 s\n", r, took,
               timeout_s);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    double timeout_s = 10;
    long away = -1;
    char why[GPUIPC_ERR_LEN];
    gpuipc_fds start, up;
    gpuipc_launch *l = NULL;
    gpuipc_job *j = NULL;
    gpuipc_meet *m = NULL;
    size_t leaked, n_up_raw, n_end;
    uint32_t k, idx, cnt;
    gpuipc_err e;
    int i, rc, foreign, code = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            timeout_s = atof(argv[++i]);
        else if (strcmp(argv[i], "--skip-fence") == 0 && i + 1 < argc)
            away = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: pmix_probe [--timeout SECONDS] [--skip-fence RANK]\n");
            return 2;
        }
    }
    if (!gpuipc_launch_detect(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    if (gpuipc_account_snapshot(&start, &e) < 0)
        return fail("snapshot at start", &e);
    rc = gpuipc_launch_init(&l, (uint64_t)(timeout_s * 1e9), &e);
    if (rc == -ELIBACC) {
        printf("SKIP: %s\n", e.msg);
        gpuipc_account_free(&start);
        return 77;
    }
    if (rc < 0) {
        gpuipc_account_free(&start);
        return fail("gpuipc_launch_init", &e);
    }
    rank_seen = gpuipc_launch_rank(l);
    printf("rank %u: joined: rank %u of %u, local %u of %u (PMIx: %s)\n", rank_seen, rank_seen,
           gpuipc_launch_size(l), gpuipc_launch_local_rank(l), gpuipc_launch_local_size(l),
           gpuipc_launch_version(l));

    /* PMIx's FDs are open now, and left out of a snapshot. */
    foreign = gpuipc_account_foreign_count();
    n_up_raw = raw_fd_count();
    if (gpuipc_account_snapshot(&up, &e) < 0) {
        code = fail("snapshot with PMIx up", &e);
        goto out;
    }
    leaked = gpuipc_account_leaks(&start, &up, &e);
    gpuipc_account_free(&up);
    /* PMIx opened some (its connection, at least), each is left out, and
     * nothing else is. */
    if (foreign <= 0 || leaked != 0 || n_up_raw != start.n + (size_t)foreign) {
        printf("rank %u: FAIL: with PMIx up, %zu FDs open, %zu at start, %d registered as "
               "PMIx's, %zu counted as new%s%s\n",
               rank_seen, n_up_raw, start.n, foreign, leaked, leaked ? ": " : "",
               leaked ? e.msg : "");
        code = 1;
        goto out;
    }

    if (away >= 0) {
        code = skip_fence(l, (uint32_t)away, timeout_s);
        goto out;
    }

    /* A rank's listener first: its card names it. */
    rc = gpuipc_meet_open(&m, gpuipc_launch_size(l), gpuipc_launch_rank(l), &e);
    if (rc < 0) {
        code = fail("gpuipc_meet_open", &e);
        goto out;
    }
    rc = gpuipc_job_join(l, gpuipc_meet_name(m), NULL, &j, &e);
    if (rc < 0) {
        code = fail("gpuipc_job_join", &e);
        goto out;
    }
    printf("rank %u: token %s\n", rank_seen, gpuipc_job_token_of(j)->hex);
    for (k = 0; k < gpuipc_job_size(j); k++) {
        gpuipc_job_where_is(j, k, why, sizeof(why));
        printf("rank %u: card %u: %s\n", rank_seen, k, why);
    }
    gpuipc_job_node_place(j, &idx, &cnt);
    printf("rank %u: node place %u of %u\n", rank_seen, idx, cnt);
    /* The token proves a peer: its own text matches, one byte off does not. */
    {
        gpuipc_job_token wrong = *gpuipc_job_token_of(j);

        wrong.hex[GPUIPC_JOB_TOKEN_HEX - 1] ^= 1;
        if (!gpuipc_job_token_matches(gpuipc_job_token_of(j), gpuipc_job_token_of(j)->hex,
                                      GPUIPC_JOB_TOKEN_HEX) ||
            gpuipc_job_token_matches(gpuipc_job_token_of(j), wrong.hex, GPUIPC_JOB_TOKEN_HEX)) {
            printf("rank %u: FAIL: the token check\n", rank_seen);
            code = 1;
        }
    }

out:
    gpuipc_job_free(j);
    gpuipc_meet_close(m);
    rc = gpuipc_launch_finalize(&l, &e);
    if (rc < 0 && code == 0)
        code = fail("gpuipc_launch_finalize", &e);
    n_end = 0;
    leaked = gpuipc_account_leaks_now(&start, &e);
    {
        gpuipc_fds end;
        gpuipc_err e2;

        if (gpuipc_account_snapshot(&end, &e2) == 0) {
            n_end = end.n;
            gpuipc_account_free(&end);
        }
    }
    if (code == 0 && (leaked != 0 || gpuipc_account_foreign_count() != 0)) {
        printf("rank %u: FAIL: after finalize, %zu FDs new since the start (%s), %d still "
               "registered as PMIx's\n",
               rank_seen, leaked, leaked ? e.msg : "none", gpuipc_account_foreign_count());
        code = 1;
    }
    if (code == 0 && away < 0)
        printf("rank %u: fds: %zu at start, %zu open with PMIx up of which %d PMIx's (left "
               "out), %zu after finalize\n",
               rank_seen, start.n, n_up_raw, foreign, n_end);
    gpuipc_account_free(&start);
    if (code == 0)
        printf("rank %u: PASS\n", rank_seen);
    return code;
}
