/* SPDX-License-Identifier: Apache-2.0 */
/* watch.h: what a watchdog needs to end a run by its deadline however the
 * run is stuck: a status page where each process says which step it is in
 * and which call it is making (mapped before the fork, so that the producer
 * reads the consumer's side too), a thread that wakes at the deadline and
 * that no stuck call can hold up, and text built in memory the watchdog owns,
 * with no stdio and no malloc (the stuck thread may hold their locks). */
#ifndef GPUIPC_WATCH_H
#define GPUIPC_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define GPUIPC_WATCH_CALL_LEN 40
#define GPUIPC_WATCH_NAME_LEN 40

/* What one process is doing, written by it alone. since_ns is when the
 * call began (CLOCK_MONOTONIC), 0 for none. The fields are read by another
 * thread or process without a lock: a torn read names a step or call just
 * begun or ended, which is as good an answer. */
typedef struct gpuipc_watch_side {
    volatile int32_t pid;
    volatile uint32_t step;            /* enum gpuipc_step */
    volatile uint64_t since_ns;
    char call[GPUIPC_WATCH_CALL_LEN];  /* the call in flight, "" for none */
    char scenario[GPUIPC_WATCH_NAME_LEN]; /* the scenario under way, "" for none */
    volatile int32_t gpu;              /* a phase's worker: its GPU's ordinal (-1: none) */
} gpuipc_watch_side;

/* The sacrificial consumer's side (--destructive): a process of its own,
 * which must not write over the main consumer's. */
#define GPUIPC_WATCH_SACRIFICIAL 3

/* The most workers of a phase each process names (the protocol's
 * GPUIPC_PHASE_MAX_WORKERS). */
#define GPUIPC_WATCH_WORKERS 64

/* The page: one side per role (index enum gpuipc_role; 0 is unused), and
 * the sacrificial consumer's; and a side per worker of a phase (the forked
 * mode runs a phase's cells at once, one worker thread per exporter GPU in
 * each process): [0] the producer's, [1] the consumer's, by worker (pid 0:
 * none at work). */
typedef struct gpuipc_watch_page {
    gpuipc_watch_side side[4];
    gpuipc_watch_side worker[2][GPUIPC_WATCH_WORKERS];
} gpuipc_watch_page;

/* Maps the page, shared with the processes this one forks afterwards.
 * Once per process; later calls return 0 at once. Returns 0 or a negative
 * errno with err. */
int gpuipc_watch_map(gpuipc_err *err);

/* Says that this process writes the side of role (enum gpuipc_role, or
 * GPUIPC_WATCH_SACRIFICIAL) and records its pid there. */
void gpuipc_watch_role(int role);

/* The calling thread writes the side of role from now (0: the process's
 * again), whatever the process's other threads write: a rank of --ranks
 * runs its producer's and its consumer's sessions of a phase at once, each
 * on a thread of its own, each named on its side. gpuipc_watch_role in
 * such a thread changes the thread's side. */
void gpuipc_watch_thread_role(int role);

/* The calling thread is worker index of role's side (GPUIPC_ROLE_PRODUCER
 * or GPUIPC_ROLE_CONSUMER) in a phase, at work on GPU gpu (-1: not named):
 * its steps and calls go to that worker's side from now, so that the
 * watchdog names every cell in flight. role 0: the thread's work is over
 * (its side is cleared, and it writes the process's side again). */
void gpuipc_watch_thread_worker(int role, unsigned index, int gpu);

/* This process is at step of scenario (NULL: keep the one named before;
 * "" for none). A wedge armed for the step before it, which met no call,
 * happens here (gpuipc_watch_arm_wedge). */
void gpuipc_watch_step(unsigned step, const char *scenario);

/* This process begins call (a name from the program, such as
 * "cuMemCreate" or "poll"), or ends the one in flight (NULL). */
void gpuipc_watch_call(const char *call);

/* The calling thread is a helper of the run's thread (one GPU's opening,
 * say): its steps and calls are not written to the page, whose one call
 * in flight is the run's thread's (which says what its helpers do while it
 * waits for them). */
void gpuipc_watch_quiet(void);

/* The page, or NULL before gpuipc_watch_map. */
const gpuipc_watch_page *gpuipc_watch_page_get(void);

/* Where the other process of role (enum gpuipc_role) stands by the shared
 * page, into buf: "at STEP in CALL for S s" or "at STEP", for a message
 * about a peer that does not answer; for a stopped process (its state in
 * /proc/<pid>/stat), "stopped (state T in /proc/PID/stat: ...), last at
 * ...". Returns 0 where the page shows nothing of it (no shared page, as in
 * two-terminal mode; no such process; this process itself), 2 where it is
 * stopped, else 1. Not for the watchdog: it uses snprintf. */
int gpuipc_watch_describe(int role, char *buf, size_t len);

/* Test-only (GPUIPC_FAULT's wedge): this process wedges, as a stuck driver
 * call would, at the next call of the current step whose name begins "cu"
 * (the driver's), or at the step's end if it makes none: every signal
 * blocked, and a sleep that nothing ends. The call named is the one it
 * wedged in. */
void gpuipc_watch_arm_wedge(void);

/* Wedges now, naming call, as gpuipc_watch_arm_wedge describes. Never returns. */
void gpuipc_watch_wedge(const char *call) __attribute__((noreturn));

/* How long a run that was stopped (SIGINT, SIGTERM, SIGHUP) may take to end
 * by itself before the watchdog ends it, saying where it is stuck. */
#define GPUIPC_WATCH_STOP_GRACE_NS (1500ull * 1000000ull)

/* Starts the watchdog: a thread with every signal blocked that sleeps until
 * deadline_ns (CLOCK_MONOTONIC, absolute; UINT64_MAX: no deadline) and then
 * calls fire(arg, 0). Meanwhile it takes the stop signals (SIGINT, SIGTERM,
 * SIGHUP) that no other thread of the process can: where the run's thread
 * has them blocked, stuck in a call (a wedged driver call) or between two
 * scenarios. It passes each to the handler installed for it, as delivery
 * would (SIG_DFL: the process exits 128 + the signal), and if the run has
 * not claimed its end GPUIPC_WATCH_STOP_GRACE_NS after the first, calls
 * fire(arg, sig). fire must use only async-signal-safe calls and end the
 * process. Returns 0, or a negative errno with err. */
int gpuipc_watch_start(uint64_t deadline_ns, void (*fire)(void *arg, int sig), void *arg,
                       gpuipc_err *err);

/* 1 once the deadline has fired. */
int gpuipc_watch_fired(void);

/* How long a run that claimed its end (gpuipc_watch_claim) may still take
 * past the deadline before the watchdog ends the process with the code it
 * claimed with: its summary, document and exit are all that is left. */
#define GPUIPC_WATCH_END_GRACE_NS (5ull * 1000000000ull)

/* The run's own thread, about to print its verdict: from now on it alone
 * ends the run, with exit status code (a later call updates the code).
 * Exactly one of it and the watchdog ends a run: where the watchdog has
 * fired already, this parks (never returns), and the watchdog's verdict
 * stands; otherwise the watchdog, at the deadline, does nothing until
 * GPUIPC_WATCH_END_GRACE_NS later, and then exits with code, saying so on
 * standard error. Without a watchdog it only records code. */
void gpuipc_watch_claim(int code);

/* For a thread that finds the deadline passed: waits, doing nothing, for
 * the watchdog to end the process. Never returns. */
void gpuipc_watch_park(void) __attribute__((noreturn));

/* Where the deadline has fired, parks any thread but the watchdog's, so
 * that nothing but the watchdog speaks or exits once it has the run: the
 * step log and every wait call it. */
void gpuipc_watch_checkpoint(void);

/* Text in a buffer the caller owns, for code that may use no stdio and no
 * malloc. Text past the capacity is dropped (and dropped set); the buffer
 * stays a string. */
typedef struct gpuipc_sbuf {
    char *p;
    size_t len, cap;
    int dropped;
} gpuipc_sbuf;

void gpuipc_sbuf_init(gpuipc_sbuf *b, char *mem, size_t cap);
void gpuipc_sbuf_str(gpuipc_sbuf *b, const char *s);
void gpuipc_sbuf_uint(gpuipc_sbuf *b, uint64_t v);
/* ns as seconds with places decimals (0 to 3), "2.005". */
void gpuipc_sbuf_secs(gpuipc_sbuf *b, uint64_t ns, unsigned places);
/* s as a JSON string, quoted and escaped; NULL as null. */
void gpuipc_sbuf_json(gpuipc_sbuf *b, const char *s);
/* Writes the whole buffer to fd, retrying short writes and EINTR. Returns
 * 0, or -1 if a write failed (errno says why) or text had been dropped. */
int gpuipc_sbuf_write(const gpuipc_sbuf *b, int fd);

/* Writes n bytes of p to fd, retrying short writes and EINTR. Returns 0 or
 * -1 (errno says why). Async-signal-safe. */
int gpuipc_write_all(int fd, const char *p, size_t n);

#endif
