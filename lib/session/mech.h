/* SPDX-License-Identifier: Apache-2.0 */
/* mech.h: the table of operations that every sharing mechanism implements.
 * The roles, the protocol and the report drive mechanisms only through it:
 * adding a mechanism is adding a file that defines one gpuipc_mech. */
#ifndef GPUIPC_MECH_H
#define GPUIPC_MECH_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "wire/wire.h"

struct gpuipc_scenario;
struct gpuipc_view;

/* How the roles write and check the pattern in a piece of memory, whatever
 * kind it is: GPU kernels for device memory, a CPU loop for host memory. */
typedef struct gpuipc_view_ops {
    /* Writes pattern(first_word + k, seed) into every word k of the view, and
     * returns once the writes are complete, with the words the writing loop
     * wrote and the digest of what it wrote in *wrote. Returns 0 or a
     * negative errno. */
    int (*fill)(const struct gpuipc_view *v, uint64_t seed, gpuipc_written *wrote,
                gpuipc_err *err);
    /* Reads every word once into check: the words the reading loop read,
     * the mismatches, the first bad word and the digest of what it read.
     * Returns 0 whatever the mismatch count, or a negative errno if the check
     * itself could not run. */
    int (*verify)(const struct gpuipc_view *v, uint64_t seed, gpuipc_check *check,
                  gpuipc_err *err);
    /* Writes value into the word with pattern index index (a test hook's
     * single wrong word). Returns 0 or a negative errno. */
    int (*poke)(const struct gpuipc_view *v, uint64_t index, uint64_t value, gpuipc_err *err);
} gpuipc_view_ops;

typedef struct gpuipc_view {
    const gpuipc_view_ops *ops;
    void *host;          /* CPU address of the memory, or NULL */
    uint64_t dev;        /* device address (CUdeviceptr), or 0 */
    uint64_t size;       /* bytes, a multiple of 16 */
    uint64_t first_word; /* pattern index of the view's first word */
    void *ctx;           /* the ops' own state */
} gpuipc_view;

/* A piece of memory one role holds: what to fill and verify, its rounded
 * size and granularity, a line for the step log, and the mechanism's state.
 * A mechanism may give the consumer a second view of the same memory (alt:
 * the CPU's mapping of host memory, or a second mapping of one handle). The
 * consumer then verifies alt too, after reading the producer's pattern
 * through view and again after writing its own through view, so that
 * whatever one view writes, the other is proven to read. */
typedef struct gpuipc_buf {
    gpuipc_view view;
    gpuipc_view alt;       /* alt.ops NULL: no second view */
    char alt_name[48];     /* what alt is, for messages: "the CPU mapping" */
    uint64_t size;
    uint64_t granularity;
    char detail[160];
    void *priv;
} gpuipc_buf;

/* gpuipc_mech.memory */
enum gpuipc_mech_memory {
    GPUIPC_MECH_DEVICE = 0, /* GPU memory */
    GPUIPC_MECH_HOST = 1,   /* host memory (memfd, a host NUMA node the GPU maps) */
};

typedef struct gpuipc_mech {
    const char *name;    /* as given to --only: [a-z0-9-], shorter than GPUIPC_WIRE_NAME_LEN */
    const char *summary; /* one line for --list and --help */
    int needs_cuda;      /* cannot run without the CUDA driver */
    int by_default;      /* part of the set run with no --only */
    int memory;          /* enum gpuipc_mech_memory: whose memory it shares */
    int chunked;         /* many allocations, offered in batches (export_more) */
    int read_only;       /* the consumer maps read-only (prove_read_only) */
    /* The plain mechanism the others are measured against: --pairs runs
     * it, --fault-matrix defaults to it, --bench's bandwidth and scaling
     * runs use it. One in the registry. */
    int reference;
    /* It leaves the consumer unusable (a faulted CUDA context): it runs only
     * with --destructive, in a sacrificial consumer of its own, which exits
     * after the scenario; the producer waits for that exit before releasing. */
    int destructive;
    /* The consumer fetches the exported FD itself (pidfd_getfd) instead of
     * receiving it; export then honours the offer-FD test hooks for it. */
    int fetched_fd;
    /* It shares one GPU's memory with a process on another GPU (the
     * consumer maps it for its own device, over the peer path): the default
     * run's pairs across GPUs run it. */
    int cross_device;
    /* Crosses nodes: its handle travels in-band (no FD, no pid), and the
     * driver resolves it on another node of the NVLink domain (FABRIC,
     * through IMEX). Only these run between ranks of different nodes. */
    int cross_node;

    /* The consumer opens the memory with cuIpcOpenMemHandle, whose mapping
     * the driver's cuPointerGetAttribute (DEVICE_ORDINAL) places on the
     * importing context's GPU, not on the GPU that holds the memory
     * (measured: docs/mechanisms.md): --pairs' link figures then rest on
     * the read of the consumer's own memory being much faster (link.h). */
    int ipc_opened;

    /* Every operation gets the scenario it serves (scenario.h): its
     * devices, its laps, the process it runs in (sc->env: the GPU, the log,
     * the role). */

    /* Says whether the mechanism can run on the scenario's device (the
     * consumer opens the device named by sc->uuid first). Returns 0 if it
     * can, -ENOTSUP with the reason and a hint in why if it cannot, or
     * another negative errno if probing failed. */
    int (*probe)(struct gpuipc_scenario *sc, gpuipc_err *why);

    /* Producer: allocates at least size bytes and makes them accessible to
     * this process. On failure nothing is held. Returns 0 or negative errno. */
    int (*alloc)(struct gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err);

    /* Producer: fills the offer's size, granularity, uuid and blob and
     * returns in fds (room for GPUIPC_WIRE_MAX_FDS) *nfds new FDs that the
     * caller sends and closes. On failure no FD is left open. */
    int (*export)(struct gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                  unsigned *nfds, gpuipc_err *err);

    /* Consumer: imports and maps what offer and its nfds FDs describe. The FDs
     * stay the caller's, who closes them as soon as this returns. On failure
     * nothing is held. Returns 0 or a negative errno. */
    int (*import)(struct gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                  unsigned nfds, gpuipc_buf *buf, gpuipc_err *err);

    /* Optional, for memory that travels as more FDs than one message holds
     * (GPUIPC_WIRE_MAX_FDS): export then sets offer->fds_total to the count
     * of all and returns the first GPUIPC_WIRE_MAX_FDS; the producer asks
     * for each further batch with export_more: at most max new FDs, numbered
     * from first, in fds. On failure no FD of the batch is left open. */
    int (*export_more)(struct gpuipc_scenario *sc, gpuipc_buf *buf, unsigned first, int *fds,
                       unsigned max, unsigned *nfds, gpuipc_err *err);

    /* Consumer, with export_more: after import took the offer's first batch,
     * imports and maps the nfds FDs numbered from first. The FDs stay the
     * caller's. On failure buf still holds what was imported before, for
     * release to free. Returns 0 or a negative errno. */
    int (*import_more)(struct gpuipc_scenario *sc, gpuipc_buf *buf, unsigned first, const int *fds,
                       unsigned nfds, gpuipc_err *err);

    /* Both: waits for outstanding work, then unmaps and frees everything buf
     * holds, continuing past a failed step so that nothing is left behind.
     * Returns 0 or the first failure. */
    int (*release)(struct gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

    /* Optional, for a mechanism whose consumer maps read-only. The consumer
     * then writes nothing; it calls this instead, to prove that writes are
     * refused, and the producer checks that its own pattern is unchanged.
     * Returns 0 if every write tried was refused (err then says what was
     * tried and what the driver answered), or a negative errno naming the
     * write that got through or the check that failed. */
    int (*prove_read_only)(struct gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);
} gpuipc_mech;

/* After an import of the FD fd failed in the driver: adds to err what this
 * side sees the FD is ("; the FD offered is a pipe"), which the driver's
 * CUDA_ERROR_UNKNOWN or INVALID_VALUE does not say. */
void gpuipc_mech_name_fd(gpuipc_err *err, int fd);

/* gpuipc_mech_offer_shape's blob: any length. */
#define GPUIPC_MECH_ANY_BLOB UINT32_MAX

/* The first check of every import: an offer to mechanism name must carry
 * fds FDs (nfds came) and a blob of blob bytes (GPUIPC_MECH_ANY_BLOB: any).
 * Returns 0, or -EPROTO saying what came and what was expected. */
int gpuipc_mech_offer_shape(const char *name, const gpuipc_msg_offer *offer, unsigned nfds,
                            unsigned fds, unsigned blob, gpuipc_err *err);

/* Checks the tables of a registry: every name 1 to GPUIPC_WIRE_NAME_LEN - 1
 * bytes of [a-z0-9-] (the wire carries no more) and unique, a summary, the
 * five operations, export_more and import_more where chunked, and exactly
 * one reference mechanism. Returns 0, or -EINVAL naming the first fault. */
int gpuipc_mech_check_registry(const gpuipc_mech *const *all, size_t n, gpuipc_err *err);

/* Returns the mechanism of all[0..n) called name, or NULL. */
const gpuipc_mech *gpuipc_mech_find(const gpuipc_mech *const *all, size_t n, const char *name);

/* Chooses the mechanisms to run: those named in the comma-separated list
 * only, in the order given, or with only NULL every mechanism marked
 * by_default. sel has room for n entries. Returns 0, or -EINVAL naming the
 * unknown or repeated entry and listing the known names. */
int gpuipc_mech_select(const gpuipc_mech *const *all, size_t n, const char *only,
                       const gpuipc_mech **sel, size_t *nsel, gpuipc_err *err);

#endif
