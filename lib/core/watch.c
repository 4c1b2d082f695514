/* SPDX-License-Identifier: Apache-2.0 */
/* watch.c: the status page, the watchdog thread and memory-only text (watch.h). */
#include "core/watch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/procstat.h"
#include "core/step.h"

static gpuipc_watch_page *page;
/* The process's side, and where a thread writes a side of its own (a
 * rank's producer and consumer sessions at once, gpuipc_watch_thread_role):
 * that one's, 0 for none. */
static int my_role;
static __thread int thread_role;
/* A phase's worker's side (gpuipc_watch_thread_worker), or NULL. */
static __thread gpuipc_watch_side *thread_side;
static volatile sig_atomic_t fired;
/* The wedge is the arming thread's: a rank's other session goes on. */
static __thread volatile sig_atomic_t wedge_armed;
static __thread unsigned armed_step;

/* The page's own copy where there is no shared one yet (before map). */
static gpuipc_watch_page private_page;

/* Who ends the run (gpuipc_watch_claim): nobody yet, the run's own
 * thread, or the watchdog; and the code the run's own thread claimed with. */
enum { OWNER_NONE, OWNER_RUN, OWNER_WATCHDOG };
static atomic_int owner = OWNER_NONE;
static atomic_int claimed_code;

static int role_now(void)
{
    return thread_role != 0 ? thread_role : my_role;
}

static gpuipc_watch_side *mine(void)
{
    gpuipc_watch_page *pg = page != NULL ? page : &private_page;
    int role = role_now();

    if (thread_side != NULL)
        return thread_side;
    return &pg->side[role > 0 && role <= GPUIPC_WATCH_SACRIFICIAL ? role : 0];
}

int gpuipc_watch_map(gpuipc_err *err)
{
    void *m;

    if (page != NULL)
        return 0;
    m = mmap(NULL, sizeof(gpuipc_watch_page), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return gpuipc_err_sys(err, "mmap", errno, "the watchdog's status page: mmap: %s",
                              strerror(errno));
    memcpy(m, &private_page, sizeof(private_page));
    page = m;
    return 0;
}

void gpuipc_watch_role(int role)
{
    /* Each page of the shared page mapped in this process now, not when
     * a phase's worker first writes its side: a forked process finds them
     * unmapped, and one mapped during a phase would count as that phase's
     * shared memory. */
    if (page != NULL) {
        size_t off;

        for (off = 0; off < sizeof(*page); off += 4096)
            (void)*(volatile const char *)((const char *)page + off);
    }
    if (thread_role != 0)
        thread_role = role;
    else
        my_role = role;
    mine()->pid = (int32_t)getpid();
}

void gpuipc_watch_thread_worker(int role, unsigned index, int gpu)
{
    gpuipc_watch_page *pg = page != NULL ? page : &private_page;
    gpuipc_watch_side *s;

    if (thread_side != NULL) {
        /* Over: nothing of it is named any more. */
        thread_side->pid = 0;
        thread_side->step = 0;
        thread_side->since_ns = 0;
        thread_side->call[0] = '\0';
        thread_side->scenario[0] = '\0';
        thread_side = NULL;
    }
    if ((role != 1 && role != 2) || index >= GPUIPC_WATCH_WORKERS)
        return;
    s = &pg->worker[role - 1][index];
    s->step = 0;
    s->since_ns = 0;
    s->call[0] = '\0';
    s->scenario[0] = '\0';
    s->gpu = gpu;
    s->pid = (int32_t)getpid();
    thread_side = s;
}

void gpuipc_watch_thread_role(int role)
{
    thread_role = role;
    if (role != 0)
        mine()->pid = (int32_t)getpid();
}

/* Copies s into dst (cap bytes), always terminated. */
static void put(char *dst, size_t cap, const char *s)
{
    size_t i;

    for (i = 0; i + 1 < cap && s[i] != '\0'; i++)
        dst[i] = s[i];
    dst[i] = '\0';
}

int gpuipc_watch_describe(int role, char *buf, size_t len)
{
    const gpuipc_watch_side *s;
    char call[GPUIPC_WATCH_CALL_LEN];
    uint64_t since, now = gpuipc_clock_ns();
    int stopped, n = 0;
    char state;

    if (page == NULL || role <= 0 || role > 2 || role == role_now())
        return 0;
    s = &page->side[role];
    if (s->pid <= 0 || s->pid == (int32_t)getpid() || s->step == 0)
        return 0;
    /* One read of each field that may change under it. */
    since = s->since_ns;
    memcpy(call, (const char *)s->call, sizeof(call));
    call[sizeof(call) - 1] = '\0';
    state = gpuipc_proc_state((pid_t)s->pid);
    stopped = state == 'T' || state == 't';
    if (stopped)
        n = snprintf(buf, len, "stopped (state %c in /proc/%d/stat: %s), ", state, (int)s->pid,
                     state == 't' ? "held by a debugger" : "SIGSTOP or job control; SIGCONT "
                     "resumes it");
    if (n < 0 || (size_t)n >= len)
        n = 0;
    if (call[0] != '\0' && since != 0 && since <= now)
        snprintf(buf + n, len - (size_t)n, "%sat %s in %s for %.1f s", stopped ? "last " : "",
                 gpuipc_step_name(s->step), call, (double)(now - since) / 1e9);
    else
        snprintf(buf + n, len - (size_t)n, "%sat %s", stopped ? "last " : "",
                 gpuipc_step_name(s->step));
    return stopped ? 2 : 1;
}

void gpuipc_watch_step(unsigned step, const char *scenario)
{
    gpuipc_watch_side *s = mine();

    /* A wedge armed for a step that made no driver call happens at its end:
     * another step, or another scenario. */
    if (wedge_armed && (step != armed_step ||
                        (scenario != NULL && strcmp(scenario, s->scenario) != 0)))
        gpuipc_watch_wedge("GPUIPC_FAULT wedge");
    s->step = step;
    if (scenario != NULL)
        put(s->scenario, sizeof(s->scenario), scenario);
}

/* Set in a helper thread (gpuipc_watch_quiet). */
static __thread int quiet;

void gpuipc_watch_quiet(void)
{
    quiet = 1;
}

void gpuipc_watch_call(const char *call)
{
    gpuipc_watch_side *s = mine();

    if (quiet)
        return;
    if (call == NULL) {
        s->since_ns = 0;
        s->call[0] = '\0';
        return;
    }
    put(s->call, sizeof(s->call), call);
    s->since_ns = gpuipc_clock_ns();
    if (wedge_armed && call[0] == 'c' && call[1] == 'u')
        gpuipc_watch_wedge(call);
}

const gpuipc_watch_page *gpuipc_watch_page_get(void)
{
    return page;
}

void gpuipc_watch_arm_wedge(void)
{
    armed_step = mine()->step;
    wedge_armed = 1;
}

void gpuipc_watch_wedge(const char *call)
{
    struct timespec ts = {3600, 0};
    gpuipc_watch_side *s = mine();
    sigset_t all;

    put(s->call, sizeof(s->call), call);
    s->since_ns = gpuipc_clock_ns();
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;)
        nanosleep(&ts, NULL); /* EINTR or not, on */
}

typedef struct watchdog {
    uint64_t deadline_ns;
    void (*fire)(void *arg, int sig);
    void *arg;
    pthread_t thread;
    volatile int started;
} watchdog;

static watchdog dog;

static void sleep_until(uint64_t at_ns)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(at_ns / 1000000000ull);
    ts.tv_nsec = (long)(at_ns % 1000000000ull);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ; /* EINTR: on until then */
}

/* Passes sig to the handler installed for it, as its delivery would. */
static void dispatch(int sig, siginfo_t *info)
{
    struct sigaction now;

    if (sigaction(sig, NULL, &now) < 0)
        return;
    if (now.sa_flags & SA_SIGINFO)
        now.sa_sigaction(sig, info, NULL);
    else if (now.sa_handler == SIG_DFL)
        _exit(128 + sig);
    else if (now.sa_handler != SIG_IGN)
        now.sa_handler(sig);
}

/* Until at_ns (or until a stop's grace ends, if sooner): takes the stop
 * signals no other thread can and passes them on. Returns the first stop
 * signal whose grace ran out, or 0 at at_ns. */
static int wait_taking_stops(uint64_t at_ns, int *stop, uint64_t *stop_by)
{
    sigset_t stops;
    siginfo_t info;

    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    for (;;) {
        uint64_t now = gpuipc_clock_ns(), until = at_ns;
        struct timespec ts;
        int sig;

        if (*stop != 0 && *stop_by < until)
            until = *stop_by;
        if (now >= until)
            return *stop != 0 && now >= *stop_by ? *stop : 0;
        ts.tv_sec = (time_t)((until - now) / 1000000000ull);
        ts.tv_nsec = (long)((until - now) % 1000000000ull);
        if (ts.tv_sec > 3600)
            ts.tv_sec = 3600;
        sig = sigtimedwait(&stops, &info, &ts);
        if (sig <= 0)
            continue; /* the time is up (EAGAIN) or EINTR: look again */
        dispatch(sig, &info);
        if (*stop == 0 && owner == OWNER_NONE) {
            *stop = sig;
            *stop_by = gpuipc_clock_ns() + GPUIPC_WATCH_STOP_GRACE_NS;
        }
    }
}

static void *watch_thread(void *unused)
{
    static const char late[] = "gpuipc_test: the run was still ending 5 s after its "
                               "--deadline or its stop (its verdict was said above); it exits "
                               "now, with that verdict's status\n";
    uint64_t stop_by = 0, end;
    int none = OWNER_NONE, stop = 0, sig;

    (void)unused;
    sig = wait_taking_stops(dog.deadline_ns, &stop, &stop_by);
    if (!atomic_compare_exchange_strong(&owner, &none, OWNER_WATCHDOG)) {
        /* The run's own thread is saying its verdict: a backstop only. */
        end = (sig != 0 ? stop_by : dog.deadline_ns) + GPUIPC_WATCH_END_GRACE_NS;
        sleep_until(end);
        (void)!gpuipc_write_all(2, late, sizeof(late) - 1);
        _exit(atomic_load(&claimed_code));
    }
    fired = 1;
    dog.fire(dog.arg, sig);
    _exit(sig != 0 ? 128 + sig : 1); /* fire ends the process; this is in case it does not */
    return NULL;
}

int gpuipc_watch_start(uint64_t deadline_ns, void (*fire)(void *arg, int sig), void *arg,
                       gpuipc_err *err)
{
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t t;
    int rc;

    dog.deadline_ns = deadline_ns;
    dog.fire = fire;
    dog.arg = arg;
    /* The thread inherits this mask: no signal is ever delivered to it, so
     * that the process's handlers run on the threads that expect them. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &attr, watch_thread, NULL);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        dog.thread = t;
        dog.started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return gpuipc_err_sys(err, "pthread_create", rc, "the watchdog: pthread_create: %s",
                              strerror(rc));
    return 0;
}

int gpuipc_watch_fired(void)
{
    return fired != 0;
}

void gpuipc_watch_claim(int code)
{
    int none = OWNER_NONE;

    atomic_store(&claimed_code, code);
    if (atomic_compare_exchange_strong(&owner, &none, OWNER_RUN) ||
        atomic_load(&owner) == OWNER_RUN)
        return;
    /* The watchdog has the run: it speaks and exits. */
    gpuipc_watch_park();
}

void gpuipc_watch_checkpoint(void)
{
    if (fired && !(dog.started && pthread_equal(pthread_self(), dog.thread)))
        gpuipc_watch_park();
}

void gpuipc_watch_park(void)
{
    for (;;)
        pause();
}

void gpuipc_sbuf_init(gpuipc_sbuf *b, char *mem, size_t cap)
{
    b->p = mem;
    b->cap = cap;
    b->len = 0;
    b->dropped = 0;
    if (cap > 0)
        mem[0] = '\0';
}

static void add(gpuipc_sbuf *b, char c)
{
    if (b->len + 1 < b->cap) {
        b->p[b->len++] = c;
        b->p[b->len] = '\0';
    } else {
        b->dropped = 1;
    }
}

void gpuipc_sbuf_str(gpuipc_sbuf *b, const char *s)
{
    while (s != NULL && *s != '\0')
        add(b, *s++);
}

void gpuipc_sbuf_uint(gpuipc_sbuf *b, uint64_t v)
{
    char digits[24];
    int i = 0;

    do {
        digits[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (i > 0)
        add(b, digits[--i]);
}

void gpuipc_sbuf_secs(gpuipc_sbuf *b, uint64_t ns, unsigned places)
{
    uint64_t scale = 1, frac;
    unsigned i;

    if (places > 3)
        places = 3;
    for (i = 0; i < places; i++)
        scale *= 10;
    frac = (ns % 1000000000ull) * scale / 1000000000ull;
    gpuipc_sbuf_uint(b, ns / 1000000000ull);
    if (places == 0)
        return;
    add(b, '.');
    for (scale /= 10; scale > 0; scale /= 10)
        add(b, (char)('0' + frac / scale % 10));
}

void gpuipc_sbuf_json(gpuipc_sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    if (s == NULL) {
        gpuipc_sbuf_str(b, "null");
        return;
    }
    add(b, '"');
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            add(b, '\\');
            add(b, (char)c);
        } else if (c < 0x20 || c == 0x7f) {
            gpuipc_sbuf_str(b, "\\u00");
            add(b, hex[c >> 4]);
            add(b, hex[c & 15]);
        } else {
            add(b, (char)c);
        }
    }
    add(b, '"');
}

int gpuipc_write_all(int fd, const char *p, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = write(fd, p + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

int gpuipc_sbuf_write(const gpuipc_sbuf *b, int fd)
{
    if (gpuipc_write_all(fd, b->p, b->len) < 0)
        return -1;
    if (b->dropped) {
        errno = ENOBUFS;
        return -1;
    }
    return 0;
}
