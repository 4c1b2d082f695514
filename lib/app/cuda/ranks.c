/* SPDX-License-Identifier: Apache-2.0 */
/* ranks.c: --ranks, the mode a launcher starts (`mpirun -np 8 gpuipc_test
 * --ranks`, `srun --mpi=pmix ...`): one process per GPU, made by the
 * launcher, not forked. Each rank
 *   1. listens under a random name (launch/meet), then joins the job
 *      through PMIx (launch/pmix): the job's token and every rank's card
 *      (launch/job), which names its listener; it watches each rank of
 *      this node by a pidfd, which tells that it is gone;
 *   2. takes the GPU of its place on the node (its index among the ranks
 *      that share this node, modulo the GPUs it sees) and publishes its UUID;
 *   3. plays its pairs of the plan (run/plan: every ordered pair of ranks
 *      once; in phase k each rank exports to rank + k and imports from
 *      rank - k, both at once; GPUIPC_PHASES=off plays rounds of disjoint
 *      pairs instead): as producer it connects to the
 *      consumer's listener, waits for its GO and runs the forked mode's
 *      producer session over it (probes, scenarios, checks, accounting,
 *      causes); as consumer it takes the producer's connection (the kernel
 *      vouches for its pid) and serves the session. At HELLO each proves
 *      the job's token without sending it; a peer "not on this node" is skipped with
 *      that cause, a peer that died is named, and its later pairs are not
 *      waited for;
 *   4. publishes its records of its pairs (run/cells); rank 0 gathers every
 *      rank's, makes the verdict of each ordered pair from both sides,
 *      prints the failing and skipped ones with each cause once and a
 *      count, writes --json, --junit and --prom, and publishes the run's
 *      status, which every rank exits with.
 * This file is the mode's flow and its failures of set-up; the steps live
 * in ranks_job.c (2), ranks_pair.c (3), ranks_verdict.c, ranks_json.c and
 * ranks_files.c (4), and the watchdog's side in ranks_watch.c; ranks_run.h is what they
 * share. No MPI library is linked or loaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cuda/modes.h"
#include "app/cuda/process.h"
#include "app/cuda/ranks_run.h"
#include "app/cuda/registry.h"
#include "core/account.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/watch.h"
#include "gpu/cudrv.h"

/* The selection less what two unrelated processes cannot run (a destructive
 * mechanism needs a consumer forked for it). */
static void drop_forked_only(gpuipc_app_selection *s)
{
    size_t i, k = 0;

    for (i = 0; i < s->nsel; i++)
        if (!s->sel[i]->destructive)
            s->sel[k++] = s->sel[i];
    s->nsel = k;
}

static int setup_failed(ranks_run *rr, int code, const char *what, const char *msg)
{
    gpuipc_ranks_say_result(rr, "%s: %s: %s (exit %d)", gpuipc_exit_word(code), what, msg,
                            code);
    return code;
}

/* Rank 0 checks --json's path before the run (a refused one is a usage
 * error); the other ranks write nothing. Returns 0 or -1 after saying why. */
static int rank_zero_json(ranks_run *rr)
{
    gpuipc_err err;

    if (!rr->o->json || rr->rank != 0)
        return 0;
    if (gpuipc_outfile_check(&rr->json, rr->o->json_path, &err) < 0) {
        gpuipc_ranks_say_result(rr, "%s: --json %s: %s (exit %d)",
                                gpuipc_exit_word(GPUIPC_USAGE), rr->o->json_path, err.msg,
                                GPUIPC_USAGE);
        return -1;
    }
    rr->json_checked = 1;
    /* From now no earlier run's verdict stays there, however this one ends
     * (the deadline, a signal, a crash): until rank 0's verdict replaces
     * it, the document says the run did not finish. */
    if (gpuipc_ranks_json_write(rr, NULL, GPUIPC_FAIL, 0, 0, 0) < 0 &&
        gpuipc_outfile_void(&rr->json) < 0)
        printf("rank 0: --json %s: an earlier run's document may still be there: it could "
               "be neither replaced nor emptied\n", rr->o->json_path);
    return 0;
}

/* Listens on TCP for ranks of other nodes, where the launcher says some
 * ranks run elsewhere or a network is named (--ranks-net, GPUIPC_RANKS_NET):
 * a job within one node opens no port and asks no name service. A network
 * that matches nothing here leaves this rank without a TCP listener (its
 * card says none, and each pair with another node names why). Returns 0,
 * or an exit status after saying why. */
static int listen_tcp(ranks_run *rr)
{
    const char *net = rr->o->ranks_net != NULL ? rr->o->ranks_net : getenv("GPUIPC_RANKS_NET");
    char how[256];
    gpuipc_err err;

    if (net != NULL && net[0] == '\0')
        net = NULL;
    if (net == NULL && gpuipc_launch_local_size(rr->l) == rr->size)
        return 0;
    if (net != NULL && gpuipc_tcp_net_check(net, &err) < 0)
        return setup_failed(rr, GPUIPC_USAGE, "GPUIPC_RANKS_NET", err.msg);
    if (gpuipc_meet_listen_tcp(rr->meet, net, how, sizeof(how), &err) < 0) {
        snprintf(rr->tcp_why, sizeof(rr->tcp_why), "%s", err.msg);
        if (rr->o->level >= GPUIPC_LOG_QUIET)
            printf("rank %u: no TCP listener for ranks of other nodes: %s\n", rr->rank,
                   err.msg);
        return 0;
    }
    if (rr->o->level >= GPUIPC_LOG_VERBOSE)
        printf("rank %u: listens for ranks of other nodes on %s: %s\n", rr->rank,
               gpuipc_meet_tcp_name(rr->meet), how);
    return 0;
}

/* Makes each other rank known to the listener: one of this node by its
 * pid (a pidfd watches it), one of another node by its TCP listener; and
 * the job's token, which keys the TCP listener's challenge. Returns 0, or
 * -1 after saying why. */
static int know_ranks(ranks_run *rr)
{
    gpuipc_err err;
    uint32_t i;

    if (gpuipc_meet_key(rr->meet, gpuipc_job_token_of(rr->job)->hex) < 0)
        return setup_failed(rr, GPUIPC_FAIL, "the job's token", "not 32 hex digits"), -1;
    for (i = 0; i < rr->size; i++) {
        const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, i);
        char why_not[256];
        int where;

        if (i == rr->rank)
            continue;
        where = gpuipc_job_where_is(rr->job, i, why_not, sizeof(why_not));
        if (where == GPUIPC_JOB_SAME_NODE &&
            gpuipc_meet_know(rr->meet, i, (int32_t)card->pid, card->start, &err) < 0)
            return setup_failed(rr, GPUIPC_FAIL, "watching the ranks of this node", err.msg),
                   -1;
        if (where == GPUIPC_JOB_OTHER_NODE &&
            gpuipc_meet_know_remote(rr->meet, i, strcmp(card->tcp, "none") == 0 ? ""
                                    : card->tcp, &err) < 0)
            return setup_failed(rr, GPUIPC_FAIL, "the ranks of other nodes", err.msg), -1;
    }
    return 0;
}

/* Rank 0's one line of what the plan leaves out across nodes: the
 * mechanisms that do not cross nodes (they hand over an FD, or need the
 * peer's pid) are not run between ranks of two nodes. Said here once; the
 * judgement does not say each such pair again. */
static void say_left_out(ranks_run *rr)
{
    uint64_t apart = 0;
    uint32_t p, q;
    size_t i, n = 0;
    char count[32] = "";

    /* Rank 0 sees a rank elsewhere wherever two ranks are apart. */
    for (p = 0; p < rr->size && !gpuipc_meet_remote(rr->meet, p); p++)
        ;
    for (i = 0; i < rr->s->nsel; i++)
        n += !rr->s->sel[i]->cross_node;
    if (p == rr->size || n == 0)
        return;
    /* (The count is quadratic: not beyond 4096 ranks.) */
    for (p = 0; p < rr->size && rr->size <= 4096; p++)
        for (q = 0; q < rr->size; q++)
            apart += p != q && gpuipc_ranks_apart(p, q, rr);
    if (apart > 0)
        snprintf(count, sizeof(count), "%llu ", (unsigned long long)apart);
    printf("ranks: across nodes only what crosses nodes runs (fabric); left out of the %s"
           "ordered pairs across nodes, as they share memory within one node (by an FD or a "
           "pid):", count);
    for (i = 0, n = 0; i < rr->s->nsel; i++)
        if (!rr->s->sel[i]->cross_node)
            printf("%s%s", n++ ? ", " : " ", rr->s->sel[i]->name);
    printf("\n");
}

int gpuipc_app_ranks(const gpuipc_options *o, const gpuipc_app_selection *s_in,
                     const gpuipc_inject *inject, uint64_t t0)
{
    /* On the stack: the watchdog reads rr.where only until the claim at
     * out, which every return after its start passes. */
    ranks_run rr;
    gpuipc_app_selection s = *s_in;
    gpuipc_fds at_start;
    char why[512];
    gpuipc_err err;
    int have_start, code, rc, refused;
    size_t i;

    memset(&rr, 0, sizeof(rr));
    rr.marks_ready = pthread_mutex_init(&rr.marks, NULL) == 0;
    rr.o = o;
    rr.quiet = *o;
    if (rr.quiet.level == GPUIPC_LOG_NORMAL)
        rr.quiet.level = GPUIPC_LOG_QUIET;
    rr.s = &s;
    rr.inject = inject;
    rr.t0 = t0;
    rr.json.dirfd = -1;
    drop_forked_only(&s);
    for (i = 0; i < s.nsel; i++) {
        rr.needs_cuda |= s.sel[i]->needs_cuda;
        rr.mechs[i] = s.sel[i]->name;
    }
    /* Each session would write Check's files over the last: --ranks writes
     * none (rank 0's --json holds every pair). */
    unsetenv("CK_XML_LOG_FILE_NAME");
    unsetenv("CK_TAP_LOG_FILE_NAME");
    unsetenv("CK_LOG_FILE_NAME");
    /* ... and no rank leaves a scenario out: every pair runs them all. */
    unsetenv("CK_RUN_SUITE");
    unsetenv("CK_RUN_CASE");
    unsetenv("CK_INCLUDE_TAGS");
    unsetenv("CK_EXCLUDE_TAGS");
    gpuipc_app_catch_stop_signals();
    if (s.nsel == 0)
        return setup_failed(&rr, GPUIPC_USAGE, "--ranks", "no mechanism selected that two "
                            "unrelated processes can run");
    if (!gpuipc_launch_detect(why, sizeof(why)))
        return setup_failed(&rr, GPUIPC_USAGE, "--ranks", why);
    have_start = gpuipc_account_snapshot(&at_start, &err) == 0;
    rc = gpuipc_launch_init(&rr.l, o->timeout_ns, &err);
    if (rc < 0) {
        rr.l = NULL;
        if (have_start)
            gpuipc_account_free(&at_start);
        return setup_failed(&rr, rc == -ENOENT ? GPUIPC_USAGE : rc == -ELIBACC ||
                            rc == -ENOTSUP || rc == -ENOSYS ? GPUIPC_SKIP : GPUIPC_FAIL,
                            "joining the job", err.msg);
    }
    rr.rank = gpuipc_launch_rank(rr.l);
    rr.size = gpuipc_launch_size(rr.l);
    code = GPUIPC_FAIL;
    if (gpuipc_ranks_watch_start(&rr, o->deadline_ns, t0, &err) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "the watchdog", err.msg);
        goto out;
    }
    /* Rank 0's refusal of its --json, --prom or --junit is every rank's
     * usage error, found when they share their options below; the files
     * are touched only once every path passed. */
    refused = gpuipc_ranks_files_check(&rr) < 0 || rank_zero_json(&rr) < 0;
    if (!refused)
        gpuipc_ranks_files_begin(&rr);
    /* Its listener first: the card names it, and nobody can know the name
     * before, so nobody can bind it first. */
    if (gpuipc_meet_open(&rr.meet, rr.size, rr.rank, &err) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "its listener", err.msg);
        goto out;
    }
    if ((rc = listen_tcp(&rr)) != 0) {
        code = rc;
        goto out;
    }
    if ((rc = gpuipc_job_join(rr.l, gpuipc_meet_name(rr.meet), gpuipc_meet_tcp_name(rr.meet),
                              &rr.job, &err)) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "the job's wire-up", err.msg);
        goto out;
    }
    if (know_ranks(&rr) < 0)
        goto out;
    rr.gpus = calloc(rr.size, sizeof(*rr.gpus));
    rr.who = calloc(rr.size, sizeof(*rr.who));
    rr.whop = calloc(rr.size, sizeof(*rr.whop));
    rr.gone = calloc(rr.size, 1);
    rr.mine = calloc((size_t)rr.size * 2, sizeof(*rr.mine));
    rr.stuck = calloc(rr.size, 1);
    if (rr.gpus == NULL || rr.who == NULL || rr.whop == NULL || rr.gone == NULL ||
        rr.mine == NULL || rr.stuck == NULL) {
        setup_failed(&rr, GPUIPC_FAIL, "setting up", "out of memory");
        goto out;
    }
    if ((rc = gpuipc_ranks_share_gpus(&rr, refused, &err)) != 0) {
        if (rc == GPUIPC_USAGE)
            code = GPUIPC_USAGE;
        else
            setup_failed(&rr, GPUIPC_FAIL, "sharing the GPUs' names", err.msg);
        goto out;
    }
    gpuipc_ranks_name(&rr);
    /* The sessions' producer opens this rank's GPU. */
    if (rr.gpus[rr.rank].ordinal >= 0)
        rr.quiet.device = rr.gpus[rr.rank].ordinal;
    if (rr.rank == 0 && o->level >= GPUIPC_LOG_NORMAL) {
        uint32_t index, count;

        gpuipc_job_node_place(rr.job, &index, &count);
        printf("ranks: %u ranks (%s); %u on this node; each ordered pair %s; "
               "mechanisms:", rr.size, gpuipc_launch_version(rr.l), count,
               gpuipc_ranks_in_phases() ? "in phases (in each, every rank exports to one "
               "and imports from another at once)" : "in rounds of disjoint pairs "
               "(GPUIPC_PHASES=off)");
        for (i = 0; i < s.nsel; i++)
            printf("%s%s", i ? ", " : " ", s.sel[i]->name);
        printf("\n");
        say_left_out(&rr);
        fflush(stdout);
    }
    if (rr.size < 2) {
        code = setup_failed(&rr, GPUIPC_SKIP, "--ranks", "one rank, so no pair: start two or "
                            "more (mpirun -np 2 gpuipc_test --ranks)");
        goto out;
    }
    /* The FDs of the job (PMIx's, the listener, the pidfds) are there from now:
     * each session's last check counts against this. */
    gpuipc_app_note_fds_at_start(&rr.proc);
    /* The pairs stop where the deadline less a fifth (2 to 10 s) is left:
     * the verdict's time. */
    rr.pairs_until = UINT64_MAX;
    if (o->deadline_ns > 0) {
        uint64_t keep = o->deadline_ns / 5;

        keep = keep < 2000000000ull ? 2000000000ull : keep > 10000000000ull ? 10000000000ull
               : keep;
        rr.pairs_until = keep < o->deadline_ns ? t0 + o->deadline_ns - keep : t0;
    }
    /* The verdict's thread: from here a verdict comes by the deadline,
     * however the pairs end. */
    if (gpuipc_ranks_verdict_start(&rr, &err) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "the verdict's thread", err.msg);
        goto out;
    }
    rc = gpuipc_ranks_play(&rr);
    code = gpuipc_ranks_conclude(&rr);
    if (rc < 0)
        code = setup_failed(&rr, GPUIPC_FAIL, "planning the pairs", "out of memory");
out:
    if (rr.verdict_started)
        (void)gpuipc_ranks_conclude(&rr);
    gpuipc_ranks_verdict_free(&rr);
    gpuipc_meet_close(rr.meet);
    gpuipc_job_free(rr.job);
    if (gpuipc_launch_finalize(&rr.l, &err) < 0)
        printf("rank %u: %s\n", rr.rank, err.msg);
    if (rr.json_checked)
        gpuipc_outfile_close(&rr.json);
    gpuipc_ranks_files_close(&rr);
    free(rr.gpus);
    free(rr.who);
    free(rr.whop);
    free(rr.gone);
    for (i = 0; rr.mine != NULL && i < (size_t)rr.size * 2; i++)
        gpuipc_cell_side_free(&rr.mine[i]);
    free(rr.mine);
    free(rr.stuck);
    gpuipc_app_proc_free(&rr.proc);
    if (rr.marks_ready)
        pthread_mutex_destroy(&rr.marks);
    rr.marks_ready = 0;
    gpuipc_watch_claim(gpuipc_app_stop_code(code));
    code = gpuipc_app_stop_code(code);
    /* What this process holds now that it did not at its start (a process
     * that loaded CUDA keeps the driver's until it exits). */
    if (have_start && gpuipc_cu.driver_version == 0) {
        if (gpuipc_account_leaks_now(&at_start, &err) > 0) {
            printf("rank %u: FAIL at exit: %s (open now, not when it started)\n", rr.rank,
                   err.msg);
            if (code == GPUIPC_PASS || code == GPUIPC_SKIP)
                code = GPUIPC_FAIL;
        }
        gpuipc_account_free(&at_start);
    } else if (have_start) {
        gpuipc_account_free(&at_start);
    }
    fflush(stdout);
    return code;
}
