/* SPDX-License-Identifier: Apache-2.0 */
/* pmix.c: joining a job through PMIx, loaded at run time, every call bounded
 * by a deadline. */
#include "launch/pmix.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "launch/pmix_api.h"
#include "launch/pmix_pfn.h"

/* What the FD accounting calls PMIx's own FDs. */
#define OWNER "PMIx"

/* A fence or get may take its PMIX_TIMEOUT and then the server's answer:
 * this side gives up only this much later, so that the server's named
 * PMIX_ERR_TIMEOUT normally comes first. */
#define GRACE_NS (2 * GPUIPC_NS_PER_S)

/* The entry points, resolved once per process; the library is never
 * unloaded (PMIx's thread may still run in it after a call left running). */
static struct pmix_table {
#define GPUIPC_PMIX_MEMBER(fn, required) PFN_##fn fn;
    GPUIPC_PMIX_FUNCS(GPUIPC_PMIX_MEMBER)
#undef GPUIPC_PMIX_MEMBER
} px;

struct gpuipc_launch {
    pmix_proc_t me;
    uint32_t size, local_rank, local_size;
    uint64_t timeout_ns;
    int timeout_s;            /* PMIX_TIMEOUT: timeout_ns in whole seconds, rounded up */
    pmix_status_t last;       /* the last failed call's status */
    const char *stuck;        /* the call left running at its deadline, or NULL */
    unsigned fences;          /* fences entered, for each one's mark */
    unsigned char *gone;      /* ranks the caller knows are gone (gpuipc_launch_forget) */
    char version[160];
};

/* ---- the library ---------------------------------------------------------------------- */

int gpuipc_launch_pmix_major(const char *version)
{
    const char *p = version != NULL ? strstr(version, "PMIx") : NULL;
    int major = 0;

    if (p == NULL)
        return -1;
    p += 4;
    while (*p == ' ' || *p == 'v')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && major < 1000)
        major = major * 10 + (*p++ - '0');
    return major;
}

static int load_once(gpuipc_err *err)
{
    static const struct {
        const char *name;
        int required;
        size_t offset;
    } entries[] = {
#define GPUIPC_PMIX_ENTRY(fn, required) {#fn, required, offsetof(struct pmix_table, fn)},
        GPUIPC_PMIX_FUNCS(GPUIPC_PMIX_ENTRY)
#undef GPUIPC_PMIX_ENTRY
    };
    const char *version;
    void *lib;
    size_t i;
    int major;

    dlerror();
    lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return gpuipc_err_sys(err, "dlopen", ELIBACC,
                              "no PMIx library: dlopen libpmix.so.2: %s (install PMIx: Debian "
                              "and Ubuntu libpmix2, RHEL pmix; a launcher that speaks PMIx, "
                              "mpirun of Open MPI 4 or later, or srun --mpi=pmix, has it)",
                              dlerror());
    for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        void *sym = dlsym(lib, entries[i].name);

        /* PMIx 3 exported the value destructor under its internal name. */
        if (sym == NULL && strcmp(entries[i].name, "PMIx_Value_destruct") == 0)
            sym = dlsym(lib, "pmix_value_destruct");
        if (sym == NULL && entries[i].required)
            return gpuipc_err_sys(err, "dlsym", ENOSYS,
                                  "libpmix.so.2 lacks %s: not a PMIx client library this "
                                  "program can use (PMIx %d or later is needed)",
                                  entries[i].name, GPUIPC_LAUNCH_PMIX_MIN_MAJOR);
        memcpy((char *)&px + entries[i].offset, &sym, sizeof(sym));
    }
    version = px.PMIx_Get_version();
    major = gpuipc_launch_pmix_major(version);
    if (major < GPUIPC_LAUNCH_PMIX_MIN_MAJOR)
        return gpuipc_err_sys(err, "PMIx_Get_version", ENOTSUP,
                              "libpmix.so.2 is \"%.100s\": PMIx %d or later is needed (this "
                              "program passes PMIX_TIMEOUT to every fence and get); install a "
                              "newer PMIx, or use the launcher's own",
                              version != NULL ? version : "(null)",
                              GPUIPC_LAUNCH_PMIX_MIN_MAJOR);
    return 0;
}

static int load(gpuipc_err *err)
{
    static int done, result;
    static gpuipc_err saved;

    if (!done) {
        result = load_once(&saved);
        done = 1;
    }
    if (result != 0 && err != NULL)
        *err = saved;
    return result;
}

const char *gpuipc_launch_status_name(int status)
{
    static const struct {
        int status;
        const char *name;
    } names[] = {
        {PMIX_SUCCESS, "PMIX_SUCCESS"},
        {PMIX_ERROR, "PMIX_ERROR"},
        {PMIX_ERR_TIMEOUT, "PMIX_ERR_TIMEOUT"},
        {PMIX_ERR_UNREACH, "PMIX_ERR_UNREACH"},
        {PMIX_ERR_BAD_PARAM, "PMIX_ERR_BAD_PARAM"},
        {PMIX_ERR_INIT, "PMIX_ERR_INIT"},
        {PMIX_ERR_NOT_FOUND, "PMIX_ERR_NOT_FOUND"},
        {PMIX_ERR_NOT_SUPPORTED, "PMIX_ERR_NOT_SUPPORTED"},
        {PMIX_ERR_COMM_FAILURE, "PMIX_ERR_COMM_FAILURE"},
        {PMIX_ERR_LOST_CONNECTION, "PMIX_ERR_LOST_CONNECTION"},
    };
    static char unknown[32];
    size_t i;

    /* PMIx_Error_string gives "TIMEOUT" where the constant is
     * PMIX_ERR_TIMEOUT: the constant is what users search for, so it comes
     * first where the program knows it. */
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].status == status)
            return names[i].name;
    if (px.PMIx_Error_string != NULL) {
        const char *s = px.PMIx_Error_string(status);

        if (s != NULL && s[0] != '\0')
            return s;
    }
    snprintf(unknown, sizeof(unknown), "PMIx status %d", status);
    return unknown;
}

/* Frees a value PMIx_Get returned. */
static void value_release(pmix_value_t *v)
{
    if (v == NULL)
        return;
    if (px.PMIx_Value_destruct != NULL)
        px.PMIx_Value_destruct(v);
    else if (v->type == PMIX_STRING)
        free(v->data.string); /* what the PMIx 2 and 3 macro did for a string */
    free(v);
}

/* ---- one call under a deadline -------------------------------------------------------- */

enum op { OP_INIT, OP_FINALIZE, OP_PUT, OP_COMMIT, OP_FENCE, OP_GET };

static const char *const op_call[] = {"PMIx_Init", "PMIx_Finalize", "PMIx_Put",
                                      "PMIx_Commit", "PMIx_Fence", "PMIx_Get"};

/* One PMIx call on a thread of its own, with everything it reads and
 * writes: the caller may give up on it at its deadline and return, so
 * nothing here points into the caller's memory. Whichever of the two lets
 * go last frees it. */
typedef struct call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs; /* 2 while both the caller and the thread hold it */
    int done;
    enum op op;
    pmix_status_t rc;
    pmix_proc_t proc;   /* Init: this process; Fence and Get: whom */
    pmix_key_t key;     /* Put, Get */
    pmix_value_t value; /* Put: a string, owned */
    pmix_info_t info[2];
    size_t ninfo;
    pmix_value_t *out; /* Get: the value PMIx returned */
} call;

static void call_release(call *c)
{
    int refs;

    pthread_mutex_lock(&c->mu);
    refs = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (refs > 0)
        return;
    value_release(c->out);
    if (c->op == OP_PUT)
        free(c->value.data.string);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static call *call_new(enum op op)
{
    pthread_condattr_t attr;
    call *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->op = op;
    c->refs = 1;
    pthread_mutex_init(&c->mu, NULL);
    /* The deadline is on the monotonic clock, as every deadline here. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &attr);
    pthread_condattr_destroy(&attr);
    return c;
}

/* The calls on their threads now, left running at their deadline or not:
 * PMIx_Finalize is not called while one is (it would free what the call
 * still uses). */
static atomic_int in_flight;

static void *call_thread(void *arg)
{
    call *c = arg;
    pmix_status_t rc = PMIX_ERROR;

    switch (c->op) {
    case OP_INIT:
        rc = px.PMIx_Init(&c->proc, NULL, 0);
        break;
    case OP_FINALIZE:
        rc = px.PMIx_Finalize(NULL, 0);
        break;
    case OP_PUT:
        rc = px.PMIx_Put(PMIX_GLOBAL, c->key, &c->value);
        break;
    case OP_COMMIT:
        rc = px.PMIx_Commit();
        break;
    case OP_FENCE:
        rc = px.PMIx_Fence(&c->proc, 1, c->info, c->ninfo);
        break;
    case OP_GET:
        rc = px.PMIx_Get(&c->proc, c->key, c->info, c->ninfo, &c->out);
        break;
    }
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    c->done = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    call_release(c);
    atomic_fetch_sub(&in_flight, 1);
    return NULL;
}

/* Runs c on a thread and waits for it until deadline_ns. Returns 0 with
 * c->rc set, -ETIMEDOUT where the call is still running (it is left to
 * finish on its own and free c), or -EAGAIN where no thread could start.
 * The caller releases c after a 0. */
static int call_run(call *c, uint64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / GPUIPC_NS_PER_S),
                          (long)(deadline_ns % GPUIPC_NS_PER_S)};
    pthread_attr_t attr;
    pthread_t t;
    int rc, done;

    c->refs = 2;
    atomic_fetch_add(&in_flight, 1);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &attr, call_thread, c);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        atomic_fetch_sub(&in_flight, 1);
        c->refs = 1;
        return -EAGAIN;
    }
    pthread_mutex_lock(&c->mu);
    while (!c->done && pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
        ;
    done = c->done;
    pthread_mutex_unlock(&c->mu);
    if (!done) {
        call_release(c); /* the thread frees it when the call returns */
        return -ETIMEDOUT;
    }
    return 0;
}

/* The likely cause and fix of a failed call, for its message. */
static const char *hint_for(enum op op, pmix_status_t rc)
{
    switch (rc) {
    case PMIX_ERR_TIMEOUT:
        if (op == OP_FENCE)
            return "a rank did not reach the fence in time: one of the job's processes "
                   "failed, hangs, or is not gpuipc_test --ranks of this version (see the "
                   "other ranks' output, and the launcher's)";
        if (op == OP_GET)
            return "the rank never published this key: it failed before publishing, or is "
                   "not gpuipc_test --ranks of this version (see its output)";
        return "the launcher's PMIx server did not answer in time";
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_COMM_FAILURE:
    case PMIX_ERR_LOST_CONNECTION:
        return "the connection to the launcher's PMIx server broke: the launcher (mpirun, "
               "slurmstepd) ended or was killed";
    case PMIX_ERR_INIT:
        return "PMIx is not initialised in this process";
    case PMIX_ERR_NOT_FOUND:
        return "no such key was published by that rank";
    default:
        if (op == OP_INIT)
            return "this process could not reach the launcher's PMIx server (named by "
                   "PMIX_SERVER_URI*): the launcher has gone, or started this process without "
                   "PMIx (with srun, pass --mpi=pmix; see srun --mpi=list)";
        return NULL;
    }
}

/* Records c's failure in err: the call, what it was about, the status and
 * the hint. Returns the negative errno for it. */
static int call_fail(gpuipc_launch *l, const call *c, const char *about, gpuipc_err *err)
{
    const char *hint = hint_for(c->op, c->rc);
    int e = c->rc == PMIX_ERR_TIMEOUT ? ETIMEDOUT : c->rc == PMIX_ERR_NOT_FOUND ? ENOENT : EIO;

    if (l != NULL)
        l->last = c->rc;
    return gpuipc_err_sys(err, op_call[c->op], e, "%s%s%s: %s (%d)%s%s", op_call[c->op],
                          about[0] != '\0' ? " " : "", about,
                          gpuipc_launch_status_name(c->rc), c->rc, hint != NULL ? "; " : "",
                          hint != NULL ? hint : "");
}

/* Runs c for l under deadline_ns; server_s is the PMIX_TIMEOUT the server
 * was given (0: none). Returns 0 where the call returned PMIX_SUCCESS (the
 * caller then releases c), or a negative errno with err (c released). */
static int call_bounded(gpuipc_launch *l, call *c, const char *about, uint64_t deadline_ns,
                        int server_s, gpuipc_err *err)
{
    int rc;

    if (l != NULL && l->stuck != NULL) {
        call_release(c);
        return gpuipc_err_sys(err, op_call[c->op], EBUSY,
                              "%s %s: not called: %s never returned, and PMIx may be waiting "
                              "for it; leave the job and start it again",
                              op_call[c->op], about, l->stuck);
    }
    rc = call_run(c, deadline_ns);
    if (rc == -EAGAIN) {
        call_release(c);
        return gpuipc_err_sys(err, "pthread_create", EAGAIN,
                              "%s %s: no thread to run it under a deadline: pthread_create: %s",
                              op_call[c->op], about, strerror(EAGAIN));
    }
    if (rc == -ETIMEDOUT) {
        const char *name = op_call[c->op];

        /* A get left running is a request of its own, which PMIx answers
         * or drops (a get of what a rank that died never put waits for
         * ever): later calls go on. Any other call left running may hold
         * PMIx's state: no call follows it. */
        if (l != NULL && c->op != OP_GET)
            l->stuck = name;
        if (server_s > 0)
            return gpuipc_err_sys(err, name, ETIMEDOUT,
                                  "%s %s: no answer within %d s although the PMIx server was "
                                  "given PMIX_TIMEOUT %d s: the launcher's PMIx server ignores "
                                  "PMIX_TIMEOUT or stopped answering (the call is left "
                                  "running)",
                                  name, about, server_s + (int)(GRACE_NS / GPUIPC_NS_PER_S),
                                  server_s);
        return gpuipc_err_sys(err, name, ETIMEDOUT,
                              "%s%s%s: no answer within the deadline: the launcher's PMIx "
                              "server stopped answering (the call is left running)",
                              name, about[0] != '\0' ? " " : "", about);
    }
    if (c->rc != PMIX_SUCCESS) {
        rc = call_fail(l, c, about, err);
        call_release(c);
        return rc;
    }
    return 0;
}

/* Loads c's directives: PMIX_TIMEOUT, and for a fence PMIX_COLLECT_DATA. */
static void call_info(call *c, int timeout_s, int collect)
{
    snprintf(c->info[0].key, sizeof(c->info[0].key), "%s", PMIX_TIMEOUT);
    c->info[0].value.type = PMIX_INT;
    c->info[0].value.data.integer = timeout_s;
    c->ninfo = 1;
    if (collect) {
        snprintf(c->info[1].key, sizeof(c->info[1].key), "%s", PMIX_COLLECT_DATA);
        c->info[1].value.type = PMIX_BOOL;
        c->info[1].value.data.flag = true;
        c->ninfo = 2;
    }
}

static uint64_t server_deadline(const gpuipc_launch *l)
{
    return gpuipc_clock_deadline((uint64_t)l->timeout_s * GPUIPC_NS_PER_S + GRACE_NS);
}

/* ---- the job -------------------------------------------------------------------------- */

int gpuipc_launch_detect(char *why, size_t len)
{
    char **e;

    if (getenv("PMIX_RANK") != NULL || getenv("PMIX_NAMESPACE") != NULL)
        return 1;
    for (e = environ; e != NULL && *e != NULL; e++)
        if (strncmp(*e, "PMIX_SERVER_URI", 15) == 0)
            return 1;
    snprintf(why, len,
             "not started by a PMIx launcher: none of PMIX_RANK, PMIX_NAMESPACE or "
             "PMIX_SERVER_URI* is set; start one process per GPU with a launcher that speaks "
             "PMIx: mpirun -np <GPUs> gpuipc_test --ranks (Open MPI 4 or later), or srun "
             "--mpi=pmix --ntasks-per-node=<GPUs> gpuipc_test --ranks");
    return 0;
}

/* PMIx_Get of rank's key (rank, or the wildcard for the job's), bounded as
 * every call is (about names it in messages). Returns 0 with *out the call,
 * its value in (*out)->out, for the caller to release; or a negative errno
 * with err (the call released). */
static int get_call(gpuipc_launch *l, uint32_t rank, const char *key, const char *about,
                    int timeout_s, uint64_t deadline_ns, call **out, gpuipc_err *err)
{
    call *c = call_new(OP_GET);
    int rc;

    *out = NULL;
    if (c == NULL)
        return gpuipc_err_set(err, -ENOMEM, "PMIx_Get %s: out of memory", key);
    c->proc = l->me;
    c->proc.rank = rank;
    snprintf(c->key, sizeof(c->key), "%s", key);
    call_info(c, timeout_s, 0);
    rc = call_bounded(l, c, about, deadline_ns, timeout_s, err);
    if (rc == 0)
        *out = c;
    return rc;
}

/* Reads the unsigned integer key of proc (rank, or the wildcard for the
 * job's) into *v. */
static int get_u32(gpuipc_launch *l, uint32_t rank, const char *key, uint32_t *v,
                   gpuipc_err *err)
{
    call *c;
    int rc = get_call(l, rank, key, key, l->timeout_s, server_deadline(l), &c, err);

    if (rc < 0)
        return rc;
    rc = 0;
    if (c->out == NULL)
        rc = gpuipc_err_sys(err, "PMIx_Get", EPROTO, "PMIx_Get %s: PMIX_SUCCESS but no value",
                            key);
    else if (c->out->type == PMIX_UINT32)
        *v = c->out->data.uint32;
    else if (c->out->type == PMIX_UINT16)
        *v = c->out->data.uint16;
    else if (c->out->type == PMIX_UINT8)
        *v = c->out->data.uint8;
    else if (c->out->type == PMIX_INT && c->out->data.integer >= 0)
        *v = (uint32_t)c->out->data.integer;
    else
        rc = gpuipc_err_sys(err, "PMIx_Get", EPROTO,
                            "PMIx_Get %s: a value of PMIx data type %u, not an unsigned "
                            "integer", key, (unsigned)c->out->type);
    call_release(c);
    return rc;
}

int gpuipc_launch_init(gpuipc_launch **out, uint64_t timeout_ns, gpuipc_err *err)
{
    char why[GPUIPC_ERR_LEN];
    gpuipc_launch *l;
    gpuipc_fds before;
    const char *v;
    call *c;
    int rc;

    *out = NULL;
    if (!gpuipc_launch_detect(why, sizeof(why)))
        return gpuipc_err_sys(err, "getenv", ENOENT, "%s", why);
    rc = load(err);
    if (rc < 0)
        return rc;
    l = calloc(1, sizeof(*l));
    c = call_new(OP_INIT);
    if (l == NULL || c == NULL) {
        free(l);
        free(c);
        return gpuipc_err_set(err, -ENOMEM, "PMIx_Init: out of memory");
    }
    l->timeout_ns = timeout_ns;
    l->timeout_s = (int)((timeout_ns + GPUIPC_NS_PER_S - 1) / GPUIPC_NS_PER_S);
    if (l->timeout_s < 1)
        l->timeout_s = 1;
    v = px.PMIx_Get_version();
    snprintf(l->version, sizeof(l->version), "%s", v != NULL ? v : "");
    /* Whatever PMIx_Init opens (its connection to the server, its progress
     * thread's epoll, eventfd and pipe) is PMIx's until PMIx_Finalize
     * closes it: the FDs open after it that were not before are left out
     * of the accounting. */
    rc = gpuipc_account_snapshot(&before, err);
    if (rc < 0)
        goto out_call;
    rc = call_bounded(l, c, "", gpuipc_clock_deadline(timeout_ns), 0, err);
    if (rc == 0) {
        l->me = c->proc;
        call_release(c);
    }
    /* A failed PMIx_Init may leave FDs open too; they are PMIx's as well. */
    if (l->stuck == NULL) {
        gpuipc_err e2;
        int n = gpuipc_account_foreign_since(&before, OWNER, &e2);

        if (n < 0 && rc == 0)
            rc = gpuipc_err_wrap(err, &e2, n, "PMIx_Init: %s", e2.msg);
    }
    gpuipc_account_free(&before);
    if (rc < 0)
        goto out_free;
    rc = get_u32(l, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &l->size, err);
    if (rc == 0)
        rc = get_u32(l, l->me.rank, PMIX_LOCAL_RANK, &l->local_rank, err);
    if (rc == 0)
        rc = get_u32(l, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &l->local_size, err);
    if (rc == 0 && (l->size == 0 || l->me.rank >= l->size || l->local_size == 0 ||
                    l->local_rank >= l->local_size))
        rc = gpuipc_err_sys(err, "PMIx_Get", EPROTO,
                            "the launcher says rank %u of %u, local rank %u of %u: not a "
                            "consistent place in a job", l->me.rank, l->size, l->local_rank,
                            l->local_size);
    /* Made here, not at the first gpuipc_launch_forget: two threads may
     * forget ranks at once (--ranks's verdict thread and its run's). */
    if (rc == 0 && (l->gone = calloc(l->size, 1)) == NULL)
        rc = gpuipc_err_set(err, -ENOMEM, "PMIx_Init: out of memory");
    if (rc < 0) {
        gpuipc_err e2;

        gpuipc_launch_finalize(&l, &e2);
        return rc;
    }
    *out = l;
    return 0;

out_call:
    call_release(c);
out_free:
    free(l->gone);
    free(l);
    return rc;
}

uint32_t gpuipc_launch_rank(const gpuipc_launch *l)
{
    return l->me.rank;
}

uint32_t gpuipc_launch_size(const gpuipc_launch *l)
{
    return l->size;
}

uint32_t gpuipc_launch_local_rank(const gpuipc_launch *l)
{
    return l->local_rank;
}

uint32_t gpuipc_launch_local_size(const gpuipc_launch *l)
{
    return l->local_size;
}

const char *gpuipc_launch_nspace(const gpuipc_launch *l)
{
    return l->me.nspace;
}

const char *gpuipc_launch_version(const gpuipc_launch *l)
{
    return l->version;
}

int gpuipc_launch_last_status(const gpuipc_launch *l)
{
    return l->last;
}

/* 1 to 63 bytes of [a-z0-9._-]: the program's own keys, never PMIx's
 * ("pmix." keys are the launcher's). */
static int key_ok(const char *key)
{
    size_t i;

    if (key == NULL || key[0] == '\0' || strncmp(key, "pmix", 4) == 0)
        return 0;
    for (i = 0; key[i] != '\0'; i++)
        if (i >= 63 || !((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') ||
                         key[i] == '.' || key[i] == '_' || key[i] == '-'))
            return 0;
    return 1;
}

int gpuipc_launch_put(gpuipc_launch *l, const char *key, const char *value, gpuipc_err *err)
{
    call *c;
    int rc;

    if (!key_ok(key))
        return gpuipc_err_set(err, -EINVAL, "PMIx_Put: key \"%.80s\" refused (1 to 63 bytes "
                                            "of a-z, 0-9, '.', '_', '-', not pmix.*)",
                              key != NULL ? key : "(null)");
    if (strlen(value) >= GPUIPC_LAUNCH_VALUE_MAX)
        return gpuipc_err_set(err, -EINVAL, "PMIx_Put %s: a value of %zu bytes (at most %d)",
                              key, strlen(value), GPUIPC_LAUNCH_VALUE_MAX - 1);
    c = call_new(OP_PUT);
    if (c == NULL || (c->value.data.string = strdup(value)) == NULL) {
        free(c);
        return gpuipc_err_set(err, -ENOMEM, "PMIx_Put %s: out of memory", key);
    }
    c->value.type = PMIX_STRING;
    snprintf(c->key, sizeof(c->key), "%s", key);
    rc = call_bounded(l, c, key, gpuipc_clock_deadline(l->timeout_ns), 0, err);
    if (rc == 0)
        call_release(c);
    return rc;
}

int gpuipc_launch_commit(gpuipc_launch *l, gpuipc_err *err)
{
    call *c = call_new(OP_COMMIT);
    int rc;

    if (c == NULL)
        return gpuipc_err_set(err, -ENOMEM, "PMIx_Commit: out of memory");
    rc = call_bounded(l, c, "", gpuipc_clock_deadline(l->timeout_ns), 0, err);
    if (rc == 0)
        call_release(c);
    return rc;
}

static int fence_once(gpuipc_launch *l, const char *what, gpuipc_err *err)
{
    call *c = call_new(OP_FENCE);
    char about[96];
    int rc;

    if (c == NULL)
        return gpuipc_err_set(err, -ENOMEM, "PMIx_Fence %s: out of memory", what);
    snprintf(c->proc.nspace, sizeof(c->proc.nspace), "%s", l->me.nspace);
    c->proc.rank = PMIX_RANK_WILDCARD;
    call_info(c, l->timeout_s, 1);
    snprintf(about, sizeof(about), "(%.40s, %u ranks, PMIX_TIMEOUT %d s)", what, l->size,
             l->timeout_s);
    rc = call_bounded(l, c, about, server_deadline(l), l->timeout_s, err);
    if (rc == 0)
        call_release(c);
    return rc;
}

/* A fence whose success is proven: each rank puts a mark of this fence
 * before it, and after it every other rank's mark must be there. Open MPI
 * 4.1.6 with OpenPMIx 5.0.1a1 (the GPU machine's) ended a fence that one
 * rank never entered with success on some ranks once PMIX_TIMEOUT passed;
 * the missing mark names that rank. */
int gpuipc_launch_fence(gpuipc_launch *l, const char *what, gpuipc_err *err)
{
    char key[32], got[16];
    gpuipc_err why;
    uint32_t r;
    int rc;

    snprintf(key, sizeof(key), "gpuipc.fence.%u", ++l->fences);
    if ((rc = gpuipc_launch_put(l, key, "1", err)) < 0 ||
        (rc = gpuipc_launch_commit(l, err)) < 0 || (rc = fence_once(l, what, err)) < 0)
        return rc;
    for (r = 0; r < l->size; r++) {
        if (r == l->me.rank || (l->gone != NULL && l->gone[r]))
            continue;
        if (gpuipc_launch_get(l, r, key, got, sizeof(got), &why) < 0)
            return gpuipc_err_set(err, -ETIMEDOUT, "PMIx_Fence (%.40s, %u ranks, PMIX_TIMEOUT "
                                  "%d s): the server ended the fence, but rank %u never "
                                  "reached it (%.200s); a rank did not reach the fence in "
                                  "time: one of the job's processes failed, hangs, or is not "
                                  "gpuipc_test --ranks of this version (see the other ranks' "
                                  "output, and the launcher's)", what, l->size, l->timeout_s,
                                  r, why.msg);
    }
    return 0;
}

void gpuipc_launch_forget(gpuipc_launch *l, uint32_t rank)
{
    if (rank >= l->size || rank == l->me.rank)
        return;
    if (l->gone != NULL)
        l->gone[rank] = 1;
}

/* gpuipc_launch_get's, with PMIX_TIMEOUT timeout_s, given up on at
 * deadline_ns. */
static int get_string(gpuipc_launch *l, uint32_t rank, const char *key, char *buf, size_t len,
                      int timeout_s, uint64_t deadline_ns, gpuipc_err *err)
{
    char about[96];
    call *c;
    int rc;

    buf[0] = '\0';
    if (!key_ok(key))
        return gpuipc_err_set(err, -EINVAL, "PMIx_Get: key \"%.80s\" refused",
                              key != NULL ? key : "(null)");
    if (rank >= l->size)
        return gpuipc_err_set(err, -EINVAL, "PMIx_Get %s: rank %u, but the job has %u", key,
                              rank, l->size);
    if (l->gone != NULL && l->gone[rank])
        return gpuipc_err_set(err, -ESRCH, "PMIx_Get %s of rank %u: not called: that rank is "
                              "gone (a get of what it never put can wait for ever)", key, rank);
    snprintf(about, sizeof(about), "%s of rank %u", key, rank);
    rc = get_call(l, rank, key, about, timeout_s, deadline_ns, &c, err);
    if (rc == -ETIMEDOUT && l->stuck == NULL) {
        rc = -ENOENT; /* the server's timeout: the key never came */
        if (err != NULL)
            err->errnum = ENOENT;
    }
    if (rc < 0)
        return rc;
    if (c->out == NULL || c->out->type != PMIX_STRING || c->out->data.string == NULL)
        rc = gpuipc_err_sys(err, "PMIx_Get", EPROTO,
                            "PMIx_Get %s: a value of PMIx data type %u, not a string", about,
                            c->out != NULL ? (unsigned)c->out->type : 0u);
    else if (strlen(c->out->data.string) >= len)
        rc = gpuipc_err_sys(err, "PMIx_Get", ENOSPC, "PMIx_Get %s: a value of %zu bytes (at "
                                                     "most %zu)",
                            about, strlen(c->out->data.string), len - 1);
    else
        memcpy(buf, c->out->data.string, strlen(c->out->data.string) + 1);
    call_release(c);
    return rc;
}

int gpuipc_launch_get(gpuipc_launch *l, uint32_t rank, const char *key, char *buf, size_t len,
                      gpuipc_err *err)
{
    return get_string(l, rank, key, buf, len, l->timeout_s, server_deadline(l), err);
}

int gpuipc_launch_get_within(gpuipc_launch *l, uint32_t rank, const char *key, char *buf,
                             size_t len, uint64_t wait_ns, gpuipc_err *err)
{
    uint64_t s = (wait_ns + GPUIPC_NS_PER_S - 1) / GPUIPC_NS_PER_S;

    if (s < 1)
        s = 1;
    if (s > (uint64_t)l->timeout_s)
        s = (uint64_t)l->timeout_s;
    /* This side gives up shortly after wait_ns whatever the server does (a
     * server's own timeout, rounded up to whole seconds, may come later): a
     * get left running reads as the key not come, and the caller's
     * deadline holds. */
    return get_string(l, rank, key, buf, len, (int)s,
                      gpuipc_clock_deadline(wait_ns + 200 * 1000000ull), err);
}

int gpuipc_launch_finalize(gpuipc_launch **lp, gpuipc_err *err)
{
    gpuipc_launch *l = *lp;
    call *c;
    int rc = 0;

    if (l == NULL)
        return 0;
    *lp = NULL;
    /* A get left running may end soon after: wait for it a little. */
    {
        uint64_t until = gpuipc_clock_deadline(2 * GPUIPC_NS_PER_S);
        struct timespec pause = {0, 10 * 1000000L};

        while (atomic_load(&in_flight) > 0 && gpuipc_clock_ns() < until)
            nanosleep(&pause, NULL);
    }
    if (l->stuck != NULL || atomic_load(&in_flight) > 0) {
        rc = gpuipc_err_sys(err, "PMIx_Finalize", EBUSY,
                            "PMIx_Finalize: not called: %s never returned (PMIx's FDs and "
                            "thread stay until the process exits)",
                            l->stuck != NULL ? l->stuck : "a PMIx_Get");
        free(l->gone);
        free(l);
        return rc;
    }
    c = call_new(OP_FINALIZE);
    if (c == NULL)
        rc = gpuipc_err_set(err, -ENOMEM, "PMIx_Finalize: out of memory");
    else
        rc = call_bounded(l, c, "", gpuipc_clock_deadline(l->timeout_ns), 0, err);
    if (rc == 0)
        call_release(c);
    /* Finalized, or failed to: either way PMIx has let go of what it held,
     * unless the call is still running. */
    if (l->stuck == NULL)
        gpuipc_account_foreign_forget(OWNER);
    free(l->gone);
    free(l);
    return rc;
}
