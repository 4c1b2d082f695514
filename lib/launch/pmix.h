/* SPDX-License-Identifier: Apache-2.0 */
/* pmix.h: who this process is in a job that a PMIx launcher started
 * (`mpirun -np 8 gpuipc_test --ranks`, `srun --mpi=pmix ...`): its rank, the
 * job's size, its rank and the job's count on this node; and the PMIx
 * key-value exchange (put, commit, fence, get) the job's wire-up uses.
 * libpmix.so.2 is loaded at run time with dlopen() and declared by the
 * project (pmix_api.h, pmix_pfn.h), so nothing links PMIx or any MPI
 * library, and the program starts where neither is installed.
 *
 * Every fence and get carries PMIX_TIMEOUT, and every call, PMIx_Init and
 * PMIx_Finalize included, also runs under a deadline of this side's own (a
 * thread waits for it), so that a server that ignores PMIX_TIMEOUT, or a
 * launcher that stopped answering, ends in a named error, never a hang. */
#ifndef GPUIPC_LAUNCH_PMIX_H
#define GPUIPC_LAUNCH_PMIX_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The oldest PMIx this program works with (PMIx_Get_version's major). */
#define GPUIPC_LAUNCH_PMIX_MIN_MAJOR 3

/* The longest value gpuipc_launch_get copies out, with its NUL. */
#define GPUIPC_LAUNCH_VALUE_MAX (1u << 20)

/* This process's membership of a job, from PMIx_Init to PMIx_Finalize. */
typedef struct gpuipc_launch gpuipc_launch;

/* Whether a PMIx launcher started this process: 1 where PMIX_RANK,
 * PMIX_NAMESPACE or a PMIX_SERVER_URI* variable is set; otherwise 0 with
 * why ("not started by a PMIx launcher" and the fix) in why (len bytes). */
int gpuipc_launch_detect(char *why, size_t len);

/* PMIx_Get_version's text ("OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, ...)")
 * to its major version (4); -1 where it names none. */
int gpuipc_launch_pmix_major(const char *version);

/* The name of a PMIx status as the program writes it: the constant's name
 * for the codes pmix_api.h declares ("PMIX_ERR_TIMEOUT": what users search
 * for), else PMIx_Error_string's where the library is loaded and has it,
 * else "PMIx status N" (in a static buffer). */
const char *gpuipc_launch_status_name(int status);

/* Joins the job, once per process: detects the launcher (-ENOENT if none,
 * with the fix), loads libpmix.so.2 (-ELIBACC if it cannot be loaded),
 * refuses a PMIx older than GPUIPC_LAUNCH_PMIX_MIN_MAJOR (-ENOTSUP) or
 * without an entry point (-ENOSYS), calls PMIx_Init and reads the job's
 * size, this process's local rank and the local size (-ETIMEDOUT past
 * timeout_ns, -EIO for another PMIx error). The FDs PMIx opens in PMIx_Init
 * are registered with the FD accounting as not ours (core/account.h), as
 * are those a failed PMIx_Init left open. timeout_ns bounds every later
 * call too: fences and gets pass it as PMIX_TIMEOUT (whole seconds, rounded
 * up). Returns 0 with *out owned by the caller (release it with
 * gpuipc_launch_finalize), or a negative errno with err naming the call,
 * the PMIx status and the likely cause and fix. The library stays loaded
 * until the process exits. Call it before other threads of the program
 * open FDs: every FD opened during PMIx_Init is taken for PMIx's. A wait
 * for a PMIx call is not cut short by a signal; it ends at its deadline. */
int gpuipc_launch_init(gpuipc_launch **out, uint64_t timeout_ns, gpuipc_err *err);

/* This process's rank in the job (0 to size - 1). */
uint32_t gpuipc_launch_rank(const gpuipc_launch *l);

/* The number of processes in the job (PMIX_JOB_SIZE). */
uint32_t gpuipc_launch_size(const gpuipc_launch *l);

/* This process's rank among the job's processes on this node
 * (PMIX_LOCAL_RANK), and their count (PMIX_LOCAL_SIZE): the launcher's
 * view, which gpuipc_job's same-node rule checks rather than trusts. */
uint32_t gpuipc_launch_local_rank(const gpuipc_launch *l);
uint32_t gpuipc_launch_local_size(const gpuipc_launch *l);

/* The job's PMIx namespace, and the library's version text. */
const char *gpuipc_launch_nspace(const gpuipc_launch *l);
const char *gpuipc_launch_version(const gpuipc_launch *l);

/* The PMIx status of the last call that failed (PMIX_SUCCESS if none). */
int gpuipc_launch_last_status(const gpuipc_launch *l);

/* Publishes the string value under key (1 to 63 bytes of [a-z0-9._-]) for
 * every rank of the job (PMIX_GLOBAL), once committed and fenced. The value
 * is copied. Returns 0, -EINVAL for a bad key or a value of
 * GPUIPC_LAUNCH_VALUE_MAX bytes or more, or as gpuipc_launch_init does. */
int gpuipc_launch_put(gpuipc_launch *l, const char *key, const char *value, gpuipc_err *err);

/* Sends what was put to the local PMIx server. Returns 0 or a negative
 * errno. */
int gpuipc_launch_commit(gpuipc_launch *l, gpuipc_err *err);

/* A barrier over every rank of the job that also gathers what each put
 * (PMIX_COLLECT_DATA), bounded by the timeout (PMIX_TIMEOUT). what names
 * the fence in messages ("token"). Returns 0, -ETIMEDOUT where a rank did
 * not arrive in time (err says which fence and the fix), or another
 * negative errno. */
int gpuipc_launch_fence(gpuipc_launch *l, const char *what, gpuipc_err *err);

/* Reads the string rank put under key into buf (len bytes, NUL-terminated),
 * bounded by the timeout. Returns 0; -ENOENT where rank put nothing under
 * key (PMIX_ERR_NOT_FOUND, or a timeout waiting for it, the server's or
 * this side's: a get left running does not stop later calls, as a fence,
 * put or commit left running does); -EPROTO where the value is not a
 * string; -ENOSPC where it does not fit; or another negative errno. The
 * value PMIx returned is freed on every path. */
int gpuipc_launch_get(gpuipc_launch *l, uint32_t rank, const char *key, char *buf, size_t len,
                      gpuipc_err *err);

/* As gpuipc_launch_get, but the server waits at most wait_ns for the key
 * (PMIX_TIMEOUT in whole seconds, rounded up: 1 s at least, --timeout at
 * most) and this side gives up 0.2 s after wait_ns (a get left running
 * reads as -ENOENT), for a caller that asks again until a deadline of its
 * own. */
int gpuipc_launch_get_within(gpuipc_launch *l, uint32_t rank, const char *key, char *buf,
                             size_t len, uint64_t wait_ns, gpuipc_err *err);

/* rank is gone (the caller knows: on this node, its pidfd,
 * launch/meet.h): gpuipc_launch_get of it returns -ESRCH without asking
 * PMIx, and a fence does not look for its mark. A get of a key that a
 * rank that has exited never put can wait for ever, whatever PMIX_TIMEOUT
 * says (OpenPMIx 4.2.2), and a fence that a dead rank cannot reach ends at
 * once, with success. */
void gpuipc_launch_forget(gpuipc_launch *l, uint32_t rank);

/* Leaves the job: PMIx_Finalize (bounded by the timeout), then forgets the
 * FDs PMIx had registered, and frees *l (set to NULL; NULL is allowed).
 * After a call that was left running at its deadline, PMIx_Finalize is not
 * called (it would wait for it) and the library's FDs stay registered.
 * Returns 0, or a negative errno with err; *l is freed either way. */
int gpuipc_launch_finalize(gpuipc_launch **l, gpuipc_err *err);

#endif
