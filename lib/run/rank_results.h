/* SPDX-License-Identifier: Apache-2.0 */
/* rank_results.h: a --ranks run's cells (run/cells.h) as the other outputs
 * take them, without CUDA: each ordered pair's scenarios as the rows that
 * --prom's and --junit's renderers read (run/prom.h, run/junit.h), the
 * ranks a failed pair implicates (the culprits of the gpuipc-ranks/1
 * document), and the run's result in words. */
#ifndef GPUIPC_RUN_RANK_RESULTS_H
#define GPUIPC_RUN_RANK_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "run/cells.h"
#include "session/producer.h"

/* The rows of a --ranks run: one per scenario of each ordered pair p -> c,
 * named "<mechanism> <p>-><c>" (ranks, not GPUs), its gpu p and its
 * peer_gpu c; a pair failed or skipped as a whole without scenarios (a rank
 * gone, no session, another node) is one row, mechanism "pair", named
 * "pair <p>-><c>", with the pair's reason. A scenario that passed in a pair
 * that is not proven (the consumer never reported, the sides disagree) is
 * a failure here, with the pair's reason: no row claims more than its pair.
 * No scenario has a time (the records carry none): each row's ns is 0. */
typedef struct gpuipc_rank_results {
    gpuipc_result *results; /* n rows (malloc'd) */
    size_t n;
    char *names;            /* the rows' names and mechanisms (malloc'd) */
} gpuipc_rank_results;

/* Makes out from cells (size x size, by producer * size + consumer),
 * judged as gpuipc_cell_verdict judges them (who, mechs, nmech as there).
 * Every row is made: nothing is cut. Returns 0, or -ENOMEM (out empty).
 * The rows own their text: cells may go before them. */
int gpuipc_rank_results_make(gpuipc_rank_results *out, const gpuipc_cell *cells, uint32_t size,
                             const char *const *who, const char *const *mechs, size_t nmech);

/* Frees what out holds, and empties it. */
void gpuipc_rank_results_free(gpuipc_rank_results *out);

/* Which ranks a pair implicates (a bit each). */
#define GPUIPC_CELL_BLAMES_PRODUCER 1u
#define GPUIPC_CELL_BLAMES_CONSUMER 2u

/* The ranks that cell (not proven: gpuipc_cell_verdict's FAIL) implicates,
 * from its data, never its words: a side that never reported (gone, hung,
 * its records refused) or that the other saw die; else the side of each
 * scenario that failed; a producer whose record does not hold the run's
 * mechanisms, or whose end failed after every scenario passed; and both
 * where the side is not known (no session between two ranks that reported,
 * the sides disagreeing, a scenario failed on no side). Returns the bits
 * GPUIPC_CELL_BLAMES_*, 0 for a pair that passed or was skipped. */
unsigned gpuipc_cell_blames(const gpuipc_cell *cell, const char *const *who,
                            const char *const *mechs, size_t nmech);

/* The culprits of a run of size ranks: for each ordered pair p -> c, the
 * ranks it implicates (gpuipc_cell_blames); for a pair that had no
 * session, each is followed along the waits that the records name (a rank
 * that waited for its peer in its pair under way when the verdict's time
 * came is not the culprit: the rank it waited for is, or the one that rank
 * waited for, and so on, to a rank stuck itself), as for a pair one of
 * whose sides timed out waiting for the other. A pair that failed on its
 * own data names its own ranks. Into *out (malloc'd, size * size * 2: [(p * size + c) * 2 + k],
 * UINT32_MAX for none, the two never equal). Returns 0 or -ENOMEM. */
int gpuipc_rank_culprits(const gpuipc_cell *cells, uint32_t size, const char *const *who,
                         const char *const *mechs, size_t nmech, uint32_t **out);

/* The run's result in words, as the result line of the rank that gives the
 * verdict says it: "PASS: 4 ranks, 12 ordered pairs: 12 proven, 0 failed,
 * 0 skipped (their scenarios: 24 passed, 0 failed, 0 skipped), in 1.22 s
 * (exit 0)", the time left out where wall_ns is 0, into buf (len bytes, cut
 * to fit). Returns buf. */
const char *gpuipc_rank_results_line(char *buf, size_t len, int code, uint32_t size,
                                     const gpuipc_cells_tally *t, uint64_t wall_ns);

#endif
