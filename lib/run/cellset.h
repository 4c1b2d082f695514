/* SPDX-License-Identifier: Apache-2.0 */
/* cellset.h: the cells of a run, as the producer plays them: each a
 * mechanism from an exporter's GPU to an importer's (or in host memory),
 * its names (the summary's, the heading of its GPU's group, Check's case),
 * its result as fields (session/producer.h's gpuipc_result) and the times
 * of its steps. A watchdog may read the set at any time without a lock:
 * the tables are sized once the run knows its GPUs, a table that is
 * replaced is kept (retired) until the set is freed, and the count is
 * published (release) after the tables it goes with, so that a reader that
 * loads it (acquire, gpuipc_cellset_count) stays inside whole tables. */
#ifndef GPUIPC_RUN_CELLSET_H
#define GPUIPC_RUN_CELLSET_H

#include <stddef.h>

#include "session/mech.h"
#include "session/producer.h"

#define GPUIPC_CELL_LABEL_LEN 48  /* "vmm-compressible 12->13" */
#define GPUIPC_CELL_GROUP_LEN 192 /* the summary's heading of a GPU */
#define GPUIPC_CELL_CASE_LEN 48   /* Check's case: "vmm-gpu0to1" */

typedef struct gpuipc_cellset {
    const gpuipc_mech **sel;  /* each cell's mechanism */
    gpuipc_result *results;   /* each cell's result (status -1: not run) */
    int (*pair)[2];           /* the exporter's and the importer's GPU; -1: the run's GPU, or none */
    char (*label)[GPUIPC_CELL_LABEL_LEN]; /* the summary's and the document's name */
    char (*group)[GPUIPC_CELL_GROUP_LEN]; /* the summary's heading for its GPU, or "" */
    char (*ck_case)[GPUIPC_CELL_CASE_LEN]; /* Check's case; the suite is the mechanism */
    /* Each cell's steps in ns (its last round's), nstages of them from
     * steps[i * nstages]; have_steps[i] says they came. */
    double *steps;
    unsigned char *have_steps;
    size_t nstages;
    void *retired;            /* replaced tables, freed with the set */
    size_t n;                 /* the cells; published with release */
} gpuipc_cellset;

/* An empty set whose cells will each hold nstages step times. */
void gpuipc_cellset_init(gpuipc_cellset *cs, size_t nstages);

/* Gives cs tables for n cells, each not run (the old ones retired, not
 * freed: a reader may hold them). A reader sees no cell from here until
 * the caller has named them and published the count (gpuipc_cellset_publish),
 * so that no row is said without its name. Returns 0, or -1 out of memory
 * (the old ones kept, and shown). */
int gpuipc_cellset_size(gpuipc_cellset *cs, size_t n);

/* Shows a reader the first n cells (n no more than the set was sized for),
 * once they are named. */
void gpuipc_cellset_publish(gpuipc_cellset *cs, size_t n);

/* Frees every table cs had; it is empty afterwards. */
void gpuipc_cellset_free(gpuipc_cellset *cs);

/* The count of cells a reader may look at (acquire): the tables are whole
 * and at least this long. */
size_t gpuipc_cellset_count(const gpuipc_cellset *cs);

/* Names cell i: mechanism m from GPU a to GPU b (a == b: on one GPU; a < 0:
 * on the run's GPU, device, or none for host memory), its label, its Check
 * case and its result's names and GPUs; not run yet. */
void gpuipc_cellset_name(gpuipc_cellset *cs, size_t i, const gpuipc_mech *m, int a, int b,
                         int device);

/* The counts of the cells that ended, as far as a reader sees them. */
void gpuipc_cellset_tally(const gpuipc_cellset *cs, unsigned *passed, unsigned *failed,
                          unsigned *skipped);

/* Where a cell ran, from its result's GPUs (the exporter's gpu and the
 * importer's peer_gpu, as gpuipc_cellset_name sets them from the cell's
 * pair; -1 for none): on one GPU, across two (the exporter's and the
 * importer's differ), or in host memory (no GPU). */
enum gpuipc_cell_where {
    GPUIPC_CELL_ONE_GPU,
    GPUIPC_CELL_ACROSS_GPUS,
    GPUIPC_CELL_HOST_MEMORY
};

/* Returns where a cell of exporter gpu and importer peer_gpu ran. */
enum gpuipc_cell_where gpuipc_cell_where_of(int gpu, int peer_gpu);

/* How many cells a run has and where they ran, and their times added (a
 * cell that never started adds 0). */
typedef struct gpuipc_cellset_census {
    unsigned cells, one_gpu, across_gpus, host_memory;
    uint64_t ns;
} gpuipc_cellset_census;

/* The census of results[0..n): a cellset's results, or those a document
 * is written from (the watchdog's too: async-signal-safe). */
gpuipc_cellset_census gpuipc_cellset_census_of(const gpuipc_result *results, size_t n);

/* c's counts in words, "48 (24 on one GPU, 24 across GPUs)", leaving out a
 * kind it has none of ("0" for no cell at all), into buf; returns buf. */
char *gpuipc_cellset_census_text(const gpuipc_cellset_census *c, char *buf, size_t len);

#endif
