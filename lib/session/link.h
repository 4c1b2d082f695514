/* SPDX-License-Identifier: Apache-2.0 */
/* link.h: --pairs' figures of the link between two GPUs, without CUDA: how
 * many kernel passes a timed batch takes at a size, what a batch's result
 * words must add up to, where the imported memory must lie, the figure a
 * run gives (its median batch), the verdict both sides reach on the
 * consumer's figures and --min-gbps' on the figures; and the figures as the
 * values of a TIMES series. The consumer measures them
 * (bench/cuda/link_rate.c); the producer judges them again, from what it
 * has proven itself. */
#ifndef GPUIPC_SESSION_LINK_H
#define GPUIPC_SESSION_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "wire/msg.h"

/* A timed batch moves at least this many bytes (at least MIN_PASSES passes,
 * at most MAX_PASSES), so that a launch, and the first touch of a mapping,
 * weigh nothing in it. */
#define GPUIPC_LINK_BATCH_BYTES (1ull << 30)
#define GPUIPC_LINK_MIN_PASSES 4u
/* Below 64 KiB a pass the launches bound the figure whatever the count:
 * the cap keeps a tiny --size from launching millions of kernels. */
#define GPUIPC_LINK_MAX_PASSES 16384u
/* The smallest --size whose figures are the link's: below it a pass across
 * NVLink takes a few microseconds, as long as a kernel launch, so that the
 * read of local memory and the read across the link come out alike and the
 * rule that places the memory across the link (GPUIPC_LINK_LOCAL_MARGIN)
 * would fail healthy pairs. Below it --pairs measures no link figures. */
#define GPUIPC_LINK_MIN_SIZE (8ull << 20)
/* Timed batches per run, after one pass untimed; the figure is their median
 * (as nvbandwidth reports the median of its samples). */
#define GPUIPC_LINK_BATCHES 5u

/* The runs: the verify kernel over the imported memory (bytes read across
 * the link), the fill kernel over it (bytes written across the link), and
 * the verify kernel over a buffer of this GPU's own of the same size. */
enum gpuipc_link_run_kind {
    GPUIPC_LINK_READ = 0,
    GPUIPC_LINK_WRITE = 1,
    GPUIPC_LINK_LOCAL = 2,
    GPUIPC_LINK_RUNS = 3
};

/* One run: each timed batch's time, and the result words its kernels added
 * up over every timed batch. */
typedef struct gpuipc_link_run {
    uint64_t ns[GPUIPC_LINK_BATCHES]; /* by CUDA events around the batch; 0: not timed */
    uint64_t words;      /* words read or written, as the kernels counted them */
    uint64_t digest;     /* the kernels' digests, summed (mod 2^64) */
    uint64_t mismatches; /* words unlike the pattern (the verify kernel's count) */
} gpuipc_link_run;

/* What the consumer measured. Ordinals are the consumer's (-1: unknown). */
typedef struct gpuipc_link_figures {
    uint64_t passes;     /* kernels per batch; 0: nothing was measured */
    uint64_t batches;    /* timed batches per run */
    uint64_t bytes;      /* bytes each pass moves: the imported mapping's size */
    int pointer_ordinal; /* where cuPointerGetAttribute puts the imported memory */
    int home_ordinal;    /* the producer's GPU (found by its UUID) */
    int own_ordinal;     /* the consumer's GPU */
    int wrote;           /* 1: the write run was measured (not under a read-only mapping) */
    gpuipc_link_run run[GPUIPC_LINK_RUNS];
} gpuipc_link_figures;

/* The figures as the values of TIMES series GPUIPC_SERIES_LINK (laps.h). */
#define GPUIPC_LINK_VALUES (7 + GPUIPC_LINK_RUNS * (3 + GPUIPC_LINK_BATCHES))

/* Kernel passes a timed batch takes over bytes: enough to move
 * GPUIPC_LINK_BATCH_BYTES, within MIN_PASSES and MAX_PASSES; 0 for 0 bytes. */
unsigned gpuipc_link_passes(uint64_t bytes);

/* Holds one batch's (or run's) result words to passes passes over the
 * memory whose one pass once describes (the words and digest the scenario's
 * own fill wrote there): words must be passes x once's words, no mismatch,
 * and the digest passes x once's digest (mod 2^64: each pass adds its
 * terms to the same sum). what names the run in why. Returns 0, or -1 with
 * why: a figure from kernels that read or wrote less, or other bytes, is
 * no figure. */
int gpuipc_link_check_sums(const char *what, uint64_t passes, const gpuipc_written *once,
                           uint64_t words, uint64_t digest, uint64_t mismatches, char *why,
                           size_t len);

/* The imported memory must lie on the producer's GPU (home), and that must
 * not be this side's own GPU (own): else its reads and writes never cross
 * the link. pointer is where the driver puts it. Where the memory was opened
 * with cuIpcOpenMemHandle (ipc_opened), the driver names the importing
 * context's GPU for it (measured on H200, driver 580.159.04), so pointer may
 * be own there: the read of own memory, at least GPUIPC_LINK_LOCAL_MARGIN
 * times faster than the read across the link (gpuipc_link_judge), is what
 * places it across the link then. An ordinal below 0 is unknown, and
 * refused. Returns 0, or -1 with why naming the ordinals. */
int gpuipc_link_check_where(int pointer, int home, int own, int ipc_opened, char *why,
                            size_t len);

/* How much faster the read of the consumer's own GPU memory must be than the
 * read across the link: a read "across" that is as fast as local memory
 * (or nearly, within noise) did not cross a link. HBM reads run 5 to 50
 * times faster than NVLink or PCIe (2100 against 366 GB/s on H200 over NV18
 * with these kernels); 1.5 leaves room for faster links. */
#define GPUIPC_LINK_LOCAL_MARGIN 1.5

/* GB/s of run kind (enum gpuipc_link_run_kind): passes x bytes over its
 * median batch. 0 where it was not measured (no passes, a batch not timed,
 * the write run under a read-only mapping). */
double gpuipc_link_gbps(const gpuipc_link_figures *f, int kind);

/* The slowest and the fastest batch of run kind, in GB/s (0 if not measured). */
void gpuipc_link_spread(const gpuipc_link_figures *f, int kind, double *lo, double *hi);

/* The verdict on figures the consumer measured over a mapping of bytes
 * whose one pass once describes, with the write run expected or not: the
 * passes and batches the size calls for (no fewer), the memory on the
 * producer's GPU, every batch timed, each run's words, mismatches and digest
 * as its passes must give, and a read of the GPU's own memory at least
 * GPUIPC_LINK_LOCAL_MARGIN times faster than the read across the link
 * (ipc_opened: as gpuipc_link_check_where). The consumer holds its own figures to it before
 * it reports them, and the producer again on receipt. Returns 0, or -1 with
 * why. */
int gpuipc_link_judge(const gpuipc_link_figures *f, uint64_t bytes, const gpuipc_written *once,
                      int write_expected, int ipc_opened, char *why, size_t len);

/* --min-gbps over a pair's figures: "read" or "wrote", the direction below
 * min GB/s (a direction not measured is below; of two, the slower), or NULL
 * where the read, and the write where one is expected, reach it. */
const char *gpuipc_link_below(double read_gbps, double write_gbps, int write_expected,
                              double min);

/* The figures in words for the step log and the summary: each run's
 * median and spread, how many batches of how many passes over what size.
 * Returns buf. */
char *gpuipc_link_describe(const gpuipc_link_figures *f, char *buf, size_t len);

/* A figure as words: "371.2 GB/s", or "not measured" for 0. Returns buf. */
char *gpuipc_link_gbps_text(double gbps, char *buf, size_t len);

/* The summary's words for a pair whose consumer on GPU b measured f over
 * GPU a's memory: "across the link, GPU b read R GB/s from GPU a and wrote W
 * GB/s to it (GPU b's own memory: L GB/s; medians of 5 batches of 16 x 64
 * MiB)" (under a read-only mapping, "wrote nothing to it, a read-only
 * mapping"). Returns buf. */
char *gpuipc_link_pair_words(const gpuipc_link_figures *f, int a, int b, char *buf, size_t len);

/* The figures as GPUIPC_LINK_VALUES values (ordinals as two's-complement
 * 64-bit), and back. */
void gpuipc_link_to_values(const gpuipc_link_figures *f, uint64_t v[GPUIPC_LINK_VALUES]);
void gpuipc_link_from_values(const uint64_t v[GPUIPC_LINK_VALUES], gpuipc_link_figures *f);

#endif
