/* SPDX-License-Identifier: Apache-2.0 */
/* ledger.h: this process's own count of the driver objects it holds (memory
 * handles, mappings, address ranges, allocations, IPC opens, pools, events,
 * contexts), kept by the wrappers that every driver call goes through
 * (cutrack.c). It is what makes the GPU leak check per process: the device's
 * free memory belongs to every process on the GPU, this count to this one
 * alone, in any PID namespace. It needs no GPU itself, so it is tested
 * without one. */
#ifndef GPUIPC_LEDGER_H
#define GPUIPC_LEDGER_H

#include <stddef.h>
#include <stdint.h>

enum gpuipc_ledger_kind {
    GPUIPC_LEDGER_HANDLE = 0, /* cuMemCreate, cuMemImportFromShareableHandle / cuMemRelease */
    GPUIPC_LEDGER_RANGE,      /* cuMemAddressReserve / cuMemAddressFree */
    GPUIPC_LEDGER_MAPPING,    /* cuMemMap / cuMemUnmap */
    GPUIPC_LEDGER_ALLOC,      /* cuMemAlloc, pool allocations and imported pool pointers /
                               * cuMemFree, cuMemFreeAsync */
    GPUIPC_LEDGER_IPC,        /* cuIpcOpenMemHandle / cuIpcCloseMemHandle */
    GPUIPC_LEDGER_POOL,       /* cuMemPoolCreate, cuMemPoolImportFromShareableHandle /
                               * cuMemPoolDestroy */
    GPUIPC_LEDGER_EVENT,      /* cuEventCreate, cuIpcOpenEventHandle / cuEventDestroy */
    GPUIPC_LEDGER_CONTEXT,    /* cuDevicePrimaryCtxRetain / cuDevicePrimaryCtxRelease */
    GPUIPC_LEDGER_KINDS
};

/* A moment in the ledger: objects added after it are "since" it. */
typedef struct gpuipc_ledger_mark {
    uint64_t serial; /* the serial of the last object added before the mark */
    uint64_t live;   /* objects held at the mark */
    uint64_t bytes;  /* their bytes, where known */
    uint32_t tag;    /* the calling thread's tag at the mark (0: none) */
} gpuipc_ledger_mark;

/* Tags every object this thread adds from now on with tag (0: none), until
 * it sets another: a worker running one cell of a phase while others run
 * theirs tags its objects with its cell, so that what its cell still holds
 * is counted as its own (gpuipc_ledger_since) and a leak is named by cell,
 * whatever the other threads hold. */
void gpuipc_ledger_set_tag(uint32_t tag);

/* Records that this process now holds object key of kind (size bytes, or 0
 * where the size is not known, as for an imported handle). The same key may
 * be held more than once (a handle imported twice); each add needs its own
 * remove. Returns 0, or -ENOMEM, in which case the object goes uncounted. */
int gpuipc_ledger_add(int kind, uint64_t key, uint64_t size);

/* Records the release of the most recently added object key of kind.
 * Returns 1 if there was one, 0 if the ledger did not know it. */
int gpuipc_ledger_remove(int kind, uint64_t key);

/* Records the release of every object of kind whose key lies in
 * [start, start + size): what one cuMemUnmap of a range does to the mappings
 * inside it. Returns how many were removed. */
size_t gpuipc_ledger_remove_range(int kind, uint64_t start, uint64_t size);

/* Stores the present moment in *m. */
void gpuipc_ledger_mark_now(gpuipc_ledger_mark *m);

/* Counts the objects added after m that are still held (where m was taken
 * under a tag, only the objects added under the same tag), stores their known
 * bytes in *bytes (may be NULL), and names up to four of them, oldest first,
 * in text ("mapping of 64 MiB at 0x7f0000000000, handle 0x5 of 64 MiB"; may
 * be NULL). Returns the count. */
size_t gpuipc_ledger_since(const gpuipc_ledger_mark *m, uint64_t *bytes, char *text,
                           size_t len);

/* Returns "handle", "address range", "mapping", ... for kind. */
const char *gpuipc_ledger_kind_name(int kind);

/* Forgets every object and frees the ledger's storage (for tests, and for a
 * child that must not count what its parent held). */
void gpuipc_ledger_reset(void);

#endif
