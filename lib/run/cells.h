/* SPDX-License-Identifier: Apache-2.0 */
/* cells.h: what each rank of a --ranks job reports of its pairs, and the
 * verdict rank 0 makes of all of them, without CUDA. A rank keeps one
 * record per ordered pair it took part in: as the producer, the session's
 * scenarios (its verdicts, derived from both sides' figures); as the
 * consumer, its own side of the session (its checks, and the counts BYE
 * gave it). Each rank publishes its records as text (through PMIx); rank 0
 * decodes every rank's strictly, and a cell (an ordered pair) is proven
 * only where the producer's record says its scenarios passed and the
 * consumer's agrees: its own checks passed and BYE's counts are the
 * producer's. A rank that never reported turns its cells into "gone". */
#ifndef GPUIPC_RUN_CELLS_H
#define GPUIPC_RUN_CELLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "wire/msg.h"

#define GPUIPC_CELL_MECH_LEN 32
#define GPUIPC_CELL_TEXT_LEN 400 /* a reason or a cause, as carried (longer ones are cut) */
#define GPUIPC_CELLS_SCENARIOS_MAX 64

/* One scenario of a pair, as its producer judged it, as fields: nothing
 * here is a sentence to take apart again. */
typedef struct gpuipc_cell_scenario {
    char mech[GPUIPC_CELL_MECH_LEN];
    int status; /* GPUIPC_PASS, _FAIL, _SKIP, _STOPPED, or -1: not run */
    int side;   /* enum gpuipc_role of a failure or skip; 0 for none (a SKIP with
                 * side 0 was left out of the session by the producer: not in
                 * the counts BYE gave the consumer) */
    unsigned step;
    /* The failure as its side recorded it: the call ("" for none, as the
     * wire carries it: [A-Za-z0-9_-]), its errno and its CUresult (0: none). */
    char call[GPUIPC_WIRE_CALL_LEN];
    int errnum, cu;
    char reason[GPUIPC_CELL_TEXT_LEN];
    /* What explains it and what to do about it, each a text of its own ("":
     * none), as core/cause.h holds them. */
    char what[GPUIPC_CELL_TEXT_LEN];
    char fix[GPUIPC_CELL_TEXT_LEN];
} gpuipc_cell_scenario;

/* How much a side's note says of why its pair had no session, for the
 * verdict's choice of which side's note leads (the more specific one). */
enum gpuipc_cell_weight {
    GPUIPC_CELL_VAGUE = 0, /* the peer did not come in time, or was not waited for */
    GPUIPC_CELL_PLAIN = 1, /* a failure of this side's own (the default) */
    GPUIPC_CELL_SURE = 2,  /* a refusal, or this rank's own state when the verdict's time came */
    GPUIPC_CELL_STUCK = 3, /* this rank was in a driver call when the verdict's time came */
};

/* Whom a side's note blames for its pair's failure: for the culprits
 * (run/rank_results.h), taken from the side whose note leads. */
enum gpuipc_cell_blame {
    GPUIPC_CELL_BLAME_NONE = 0, /* neither rank, or not known */
    GPUIPC_CELL_BLAME_SELF = 1, /* the rank that wrote it (stuck in a call) */
    GPUIPC_CELL_BLAME_PEER = 2, /* the other rank (refused, gone, never came) */
    GPUIPC_CELL_BLAME_WAITS = 3, /* the other rank, for whom this one still waited in
                                  * this pair when the verdict's time came: its
                                  * pair under way (the culprits follow such waits
                                  * to the rank that is stuck itself) */
};

/* What one side of pair p -> c recorded. Its scenarios are its own: s
 * points to exactly n of them (NULL for none), so that a run of many ranks
 * holds only the scenarios its records carry. A side is emptied with
 * gpuipc_cell_side_free and handed on with gpuipc_cell_side_move, never
 * copied (two copies would share s). */
typedef struct gpuipc_cell_side {
    int have;   /* this side reported */
    int code;   /* the session's status on this side (GPUIPC_PASS, _FAIL, _SKIP) */
    int met;    /* the session took place (HELLO went both ways) */
    /* The consumer's: the producer said BYE with these counts, and its own
     * checks' verdict. */
    int said_bye;
    unsigned passed, failed, skipped;
    int own;
    int gone;                        /* the peer died during the session (note says when) */
    int weight;                      /* what the note is worth: enum gpuipc_cell_weight */
    int blame;                       /* whom the note blames: enum gpuipc_cell_blame */
    char note[GPUIPC_CELL_TEXT_LEN]; /* why there was no session, or this side's failure */
    size_t n;                        /* the producer's scenarios, at most
                                      * GPUIPC_CELLS_SCENARIOS_MAX */
    gpuipc_cell_scenario *s;         /* s[0..n), owned by the side; NULL for none */
} gpuipc_cell_side;

/* An ordered pair, as rank 0 gathers it. */
typedef struct gpuipc_cell {
    uint32_t p, c;
    gpuipc_cell_side prod, cons;
} gpuipc_cell;

/* Gives side room for n scenarios (n at most GPUIPC_CELLS_SCENARIOS_MAX),
 * zeroed, owned by side, and sets side->n to n (n 0: s NULL); the ones it
 * held are freed. Returns 0, or -EINVAL (n too large) or -ENOMEM, side then
 * holding none. */
int gpuipc_cell_side_reserve(gpuipc_cell_side *side, size_t n);

/* Frees side's scenarios and empties it (every field zero, have 0), ready
 * to be filled again. */
void gpuipc_cell_side_free(gpuipc_cell_side *side);

/* Hands src's record to dst, its scenarios with it (dst's own freed
 * first); src is left empty. */
void gpuipc_cell_side_move(gpuipc_cell_side *dst, gpuipc_cell_side *src);

/* Frees the scenarios of both sides of each of cells[0..size * size),
 * emptying them; the array stays the caller's. */
void gpuipc_cells_free(gpuipc_cell *cells, uint32_t size);

/* Appends one record to *buf (malloc'd, *len bytes used, *cap allocated):
 * a producer's (role 1) or a consumer's (role 2) of pair p -> c. Returns 0
 * or -ENOMEM. */
int gpuipc_cells_encode(char **buf, size_t *len, size_t *cap, int role, uint32_t p, uint32_t c,
                        const gpuipc_cell_side *side);

/* Decodes the records of rank (its text), strictly: each names a pair that
 * rank took part in (as producer for role 1, consumer for role 2) among
 * size ranks, numbers in range, mechanism names of [a-z0-9-]. Each record
 * fills cells[p * size + c]'s side, its scenarios allocated for it (owned
 * by the side: gpuipc_cells_free). Returns 0, or -EPROTO with err naming
 * the line and field, or -ENOMEM; on an error nothing of rank's report is
 * kept: every side rank records is emptied, its scenarios freed. */
int gpuipc_cells_decode(const char *text, uint32_t rank, uint32_t size, gpuipc_cell *cells,
                        gpuipc_err *err);

/* Of a pair with no session, the side whose note leads (the one whose note
 * weighs more; the producer's on a tie or where the consumer has none). */
const gpuipc_cell_side *gpuipc_cell_lead(const gpuipc_cell *cell);

/* A cell's verdict from both sides (the producer's scenarios, checked
 * against the consumer's record): GPUIPC_PASS (proven), _FAIL, _SKIP (no
 * scenario could run, or the pair was not run). A pair is proven only where
 * both sides reported, the producer's record holds each of mechs[0..nmech)
 * once (mechs NULL: not checked), every scenario that ran passed, none is
 * "not run", the consumer's own checks passed and BYE's counts are the
 * producer's. why gets the reason of a cell that failed or was skipped as
 * a whole (a side missing, the sides disagreeing, no session: the side
 * whose note weighs more leads, the other's follows), "" where its
 * scenarios say it. who[r] names rank r in text ("rank 2 (node1, GPU 0)").
 * Counts the scenarios of a session that took place into *passed, *failed
 * and *skipped (where not NULL; a STOPPED or not-run one as failed). */
int gpuipc_cell_verdict(const gpuipc_cell *cell, const char *const *who, const char *const *mechs,
                        size_t nmech, char *why, size_t len, unsigned *passed, unsigned *failed,
                        unsigned *skipped);

/* What gpuipc_cells_judge counts: the ordered pairs by verdict, and the
 * scenarios of the sessions that took place. */
typedef struct gpuipc_cells_tally {
    unsigned proven, failed, skipped;       /* pairs */
    unsigned passed, sfailed, sskipped;     /* their scenarios */
    /* The first failure said ("p -> c mech: reason", "p -> c: why"), and
     * its cause ("cause: ...; fix: ...", where a scenario's explains it),
     * "" for none: --brief's notes. */
    char first[GPUIPC_CELL_TEXT_LEN + 96];
    char cause[2 * GPUIPC_CELL_TEXT_LEN + 32];
} gpuipc_cells_tally;

/* Where each rank is, for the lines of gpuipc_cells_judge: its node's name
 * and its GPU's, by rank (either NULL: not said); and, where left_out is
 * set, which of the scenarios the plan left out (skipped, on no side) were
 * said once already (pair p -> c, mechanism mech: a mechanism that does not
 * cross nodes, between two nodes), so that their lines are not said again
 * (they are counted). */
typedef struct gpuipc_cells_where {
    const char *const *node;
    const char *const *gpu;
    int (*left_out)(uint32_t p, uint32_t c, const char *mech, void *arg);
    void *arg;
} gpuipc_cells_where;

/* Judges every ordered pair p -> c (p != c) of size ranks, cells[p * size
 * + c], by gpuipc_cell_verdict (who, mechs, nmech as there), and says on
 * out what is not proven: a pair's reason as a whole, or each of its
 * scenarios that did not pass, with " [cause below]" where a cause
 * explains it. Lines alike (the same status and mechanism, and the same
 * text but for the pair's ranks' names and the digits) are said once, the
 * first pair's, followed by "  and N more alike: p -> c, ... (8 at most);
 * ranks ...; nodes ...; GPUs ..." (where says the last two; NULL: not
 * said); then each cause once ("  cause: ...; fix: ..."). Counts into *t
 * (zeroed first). Returns 0, or -ENOMEM (what was said may be cut). */
int gpuipc_cells_judge(gpuipc_cell *cells, uint32_t size, const char *const *who,
                       const char *const *mechs, size_t nmech,
                       const gpuipc_cells_where *where, FILE *out, gpuipc_cells_tally *t);

#endif
