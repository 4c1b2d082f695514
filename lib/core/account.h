/* SPDX-License-Identifier: Apache-2.0 */
/* account.h: what one process holds (open FDs, driver objects, resident
 * shared memory, GPU memory), so that a scenario that leaks any of it fails
 * and names it, whatever other processes on the machine do. */
#ifndef GPUIPC_ACCOUNT_H
#define GPUIPC_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/ledger.h"

/* The FDs open in this process at one moment, in ascending order. */
typedef struct gpuipc_fds {
    int *fd;
    size_t n;
} gpuipc_fds;

/* Lists /proc/self/fd into s (leaving out the directory's own FD). Returns
 * 0, or a negative errno with the reason; s is then empty. */
int gpuipc_account_snapshot(gpuipc_fds *s, gpuipc_err *err);

/* Compares now with an earlier snapshot before. Returns the number of FDs
 * open now that were not open before; if there are any, err describes them,
 * e.g. "2 FDs leaked: fd 7 (/dev/nvidia0), fd 9 (/memfd:x (deleted))". */
size_t gpuipc_account_leaks(const gpuipc_fds *before, const gpuipc_fds *now, gpuipc_err *err);

/* Snapshots the FDs open now and compares them with before, as
 * gpuipc_account_leaks does. Returns the count of new FDs (named in err),
 * or 0 if the snapshot itself failed. */
size_t gpuipc_account_leaks_now(const gpuipc_fds *before, gpuipc_err *err);

/* Counts the FD numbers below limit (at most the first 2^20) that are not
 * open in this process, stopping once want are found: what a receive of
 * SCM_RIGHTS FDs, or a batch of new FDs, has room for under RLIMIT_NOFILE. */
unsigned gpuipc_account_free_below(uint64_t limit, unsigned want);

/* Adds fd to the snapshot s, in order, unless it is there: an FD that came
 * since and is not a leak (a connection held for a later pair). Returns 0
 * or -ENOMEM. */
int gpuipc_account_add(gpuipc_fds *s, int fd);

/* Takes fd out of the snapshot s, where it is there: an FD that was open
 * then and is no one's to count (a connection held for a later pair, which
 * a pair may take and close, and whose number a leak may then take). */
void gpuipc_account_remove(gpuipc_fds *s, int fd);

/* Frees the snapshot's storage. */
void gpuipc_account_free(gpuipc_fds *s);

/* ---- FDs that are not ours to count ------------------------------------------------------ */

/* FDs a library opened for itself and keeps for as long as it runs (PMIx's
 * connection to its server, its progress thread's epoll, eventfd and pipe):
 * they are not this program's to count, and their lifetime is the library's.
 * A registered FD is left out of every snapshot while it is still the file
 * it was when registered (the same device and inode), so that a number the
 * library closed and this program reused is counted again. At most
 * GPUIPC_ACCOUNT_FOREIGN_MAX at a time; registered and forgotten from one
 * thread, while no snapshot is being taken. */
#define GPUIPC_ACCOUNT_FOREIGN_MAX 64

/* Registers every FD open now that was not open in before (a snapshot taken
 * just before the library opened its own), with owner ("PMIx") for messages.
 * Returns how many were registered, or -ENOSPC (err says so; none is
 * registered then) or another negative errno. */
int gpuipc_account_foreign_since(const gpuipc_fds *before, const char *owner, gpuipc_err *err);

/* Forgets every FD registered by owner (the library has closed them, or is
 * about to). Returns how many were forgotten. */
int gpuipc_account_foreign_forget(const char *owner);

/* How many FDs are registered now, of every owner. */
int gpuipc_account_foreign_count(void);

/* What fd is, from this process's own look at it (fstat and its
 * /proc/self/fd link), into buf: "a pipe", "a socket", "a memfd
 * (memfd:gpuipc)", "a character device /dev/zero (1:5)", "an anonymous
 * inode [eventfd]", "a regular file /x"; for a message about an FD that is
 * not what it was offered as. Returns buf. */
const char *gpuipc_account_fd_kind(int fd, char *buf, size_t len);

/* ---- what one process holds, for the per-process leak check --------------------------- */

#define GPUIPC_USAGE_UNKNOWN UINT64_MAX

/* Reads the GPU memory that the driver attributes to this process (NVML),
 * in bytes. Returns 0, -ENOTSUP with why where it cannot be attributed here,
 * or another negative errno. */
typedef int (*gpuipc_usage_gpu_fn)(uint64_t *bytes, gpuipc_err *why);

/* This process's resources at one moment: its open FDs, the driver objects
 * it holds (the ledger), its resident shared memory (memfd, tmpfs: RssShmem)
 * and the GPU memory NVML attributes to it. Each is this process's alone, so
 * other processes on the same GPU or host cannot move them. */
typedef struct gpuipc_usage {
    gpuipc_fds fds;
    int have_fds;
    gpuipc_ledger_mark objects;
    uint64_t shmem;    /* GPUIPC_USAGE_UNKNOWN where the kernel does not say */
    uint64_t gpu;      /* GPUIPC_USAGE_UNKNOWN where NVML cannot attribute it */
    gpuipc_err gpu_why; /* why gpu is unknown */
} gpuipc_usage;

/* The figures of a usage, as they travel in END_ACK and as the soak
 * compares them round by round. */
typedef struct gpuipc_usage_figures {
    uint64_t fds;     /* open FDs */
    uint64_t objects; /* driver objects held */
    uint64_t shmem;   /* resident shared memory, bytes, or GPUIPC_USAGE_UNKNOWN */
    uint64_t gpu;     /* GPU memory by NVML, bytes, or GPUIPC_USAGE_UNKNOWN */
} gpuipc_usage_figures;

/* Takes u now; gpu may be NULL (no GPU in this process). Returns 0, or a
 * negative errno if the FDs could not be listed (err says why; u is then
 * still usable for the rest). */
int gpuipc_usage_take(gpuipc_usage *u, gpuipc_usage_gpu_fn gpu, gpuipc_err *err);

/* Takes u now with the driver objects alone (the calling thread's, where it
 * has a ledger tag): FDs, shared memory and GPU memory are the process's,
 * which cells running beside this one move too; they are counted per phase
 * instead. gpuipc_usage_leaks then compares the objects alone. */
void gpuipc_usage_take_objects(gpuipc_usage *u);

/* Compares this process now with before: FDs open now that were not, driver
 * objects taken since and still held, more resident shared memory, and more
 * GPU memory by NVML (re-read for up to settle_ns before it counts, since the
 * driver may report a release late). Returns how many of those four grew,
 * naming each in err, e.g. "2 driver objects still held: mapping of 64 MiB
 * at 0x7f.., handle 0x5; 64 MiB more shared memory resident (RssShmem 4 KiB
 * -> 64 MiB)". */
int gpuipc_usage_leaks(const gpuipc_usage *before, gpuipc_usage_gpu_fn gpu, uint64_t settle_ns,
                       gpuipc_err *err);

/* How many counts (gpuipc_usage_take and gpuipc_usage_leaks) this process
 * has made, into *n, and the time they took in all, into *ns. */
void gpuipc_usage_cost(uint64_t *ns, unsigned *n);

/* Fills f from u. */
void gpuipc_usage_figures_of(const gpuipc_usage *u, gpuipc_usage_figures *f);

/* Compares figures now with those of a reference (the soak's round 1): FDs
 * and objects must be equal or fewer, shared memory and GPU memory no larger
 * (an unknown figure is not compared). Returns 1 with what grew in why
 * (who: "producer", "consumer"), or 0. */
int gpuipc_usage_drift(const gpuipc_usage_figures *ref, const gpuipc_usage_figures *now,
                       const char *who, char *why, size_t len);

/* Frees u's storage. */
void gpuipc_usage_free(gpuipc_usage *u);

/* The reference of a role's end-of-session check: what the process held at
 * the baseline of its first scenario on the device it uses now (a new
 * device brings FDs and objects of its own, so the reference moves with it).
 * Whatever is held at the end and was not then, was taken during a
 * scenario after its own count, or between scenarios, and is a leak. */
typedef struct gpuipc_session_usage {
    gpuipc_usage ref;
    int have;
    uint8_t device[16]; /* the device's UUID, all zero for none */
} gpuipc_session_usage;

/* At a scenario's baseline: takes the reference if there is none yet or the
 * device changed. */
void gpuipc_session_usage_note(gpuipc_session_usage *s, const uint8_t device[16],
                               gpuipc_usage_gpu_fn gpu);

/* At the end of the session: compares now with the reference as
 * gpuipc_usage_leaks does, then frees it. Returns the count of what grew (0
 * if there was no scenario), named in err. */
int gpuipc_session_usage_leaks(gpuipc_session_usage *s, gpuipc_usage_gpu_fn gpu,
                               uint64_t settle_ns, gpuipc_err *err);

/* Frees the reference without a check (a session whose verdict is already
 * a failure, or one that broke). Safe to call twice. */
void gpuipc_session_usage_free(gpuipc_session_usage *s);

#endif
