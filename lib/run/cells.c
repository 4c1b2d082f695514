/* SPDX-License-Identifier: Apache-2.0 */
/* cells.c: a rank's records of its pairs as text, their strict decoder, and
 * a cell's verdict from both sides (cells.h). One record is a line
 *   R <role> <p> <c> <code> <met> <said_bye> <passed> <failed> <skipped> <own> <gone> <weight>
 *     <blame> <n>\t<note>
 * and, for a producer's, n lines
 *   S <status> <side> <step> <errno> <cu> <mech>\t<call>\t<reason>\t<what>\t<fix>
 * Text fields carry no tab, newline or other control byte (each becomes a
 * space) and are cut to GPUIPC_CELL_TEXT_LEN - 1 bytes. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cause.h"
#include "core/err.h"
#include "core/status.h"
#include "core/step.h"
#include "run/cells.h"

static int grow(char **buf, size_t *len, size_t *cap, size_t more)
{
    char *p;
    size_t want = *len + more + 1;

    if (want <= *cap)
        return 0;
    if (want < *cap * 2)
        want = *cap * 2;
    if ((p = realloc(*buf, want)) == NULL)
        return -ENOMEM;
    *buf = p;
    *cap = want;
    return 0;
}

/* Appends text, its control bytes made spaces, cut to the carried length. */
static void put_text(char *out, size_t *len, const char *text)
{
    size_t i;

    for (i = 0; text[i] != '\0' && i < GPUIPC_CELL_TEXT_LEN - 1; i++)
        out[(*len)++] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? ' ' : text[i];
    out[*len] = '\0';
}

/* What a record that does not parse may mean besides a lie: a rank of
 * another build, whose records have other fields. */
#define SAME_BUILD "does every rank run the same build of gpuipc_test? the records' fields " \
                   "differ between builds"

/* A call's name as the wire carries it: [A-Za-z0-9_-], "" for none. */
static int valid_call(const char *c)
{
    size_t i;

    for (i = 0; c[i] != '\0'; i++)
        if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= 'A' && c[i] <= 'Z') ||
              (c[i] >= '0' && c[i] <= '9') || c[i] == '_' || c[i] == '-'))
            return 0;
    return i < GPUIPC_WIRE_CALL_LEN;
}

int gpuipc_cell_side_reserve(gpuipc_cell_side *side, size_t n)
{
    free(side->s);
    side->s = NULL;
    side->n = 0;
    if (n > GPUIPC_CELLS_SCENARIOS_MAX)
        return -EINVAL;
    if (n == 0)
        return 0;
    if ((side->s = calloc(n, sizeof(*side->s))) == NULL)
        return -ENOMEM;
    side->n = n;
    return 0;
}

void gpuipc_cell_side_free(gpuipc_cell_side *side)
{
    free(side->s);
    memset(side, 0, sizeof(*side));
}

void gpuipc_cell_side_move(gpuipc_cell_side *dst, gpuipc_cell_side *src)
{
    if (dst == src)
        return;
    free(dst->s);
    *dst = *src;
    memset(src, 0, sizeof(*src));
}

void gpuipc_cells_free(gpuipc_cell *cells, uint32_t size)
{
    size_t i;

    for (i = 0; cells != NULL && i < (size_t)size * size; i++) {
        gpuipc_cell_side_free(&cells[i].prod);
        gpuipc_cell_side_free(&cells[i].cons);
    }
}

int gpuipc_cells_encode(char **buf, size_t *len, size_t *cap, int role, uint32_t p, uint32_t c,
                        const gpuipc_cell_side *side)
{
    size_t i, n = role == 1 ? side->n : 0;

    if (n > GPUIPC_CELLS_SCENARIOS_MAX)
        n = GPUIPC_CELLS_SCENARIOS_MAX;
    if (grow(buf, len, cap, 128 + GPUIPC_CELL_TEXT_LEN +
             n * (128 + GPUIPC_CELL_MECH_LEN + GPUIPC_WIRE_CALL_LEN +
                  3 * GPUIPC_CELL_TEXT_LEN)) < 0)
        return -ENOMEM;
    *len += (size_t)sprintf(*buf + *len, "R %d %u %u %d %d %d %u %u %u %d %d %d %d %zu\t", role,
                            p, c, side->code, side->met, side->said_bye, side->passed,
                            side->failed, side->skipped, side->own != GPUIPC_PASS,
                            side->gone != 0,
                            side->weight >= GPUIPC_CELL_VAGUE &&
                            side->weight <= GPUIPC_CELL_STUCK ? side->weight : GPUIPC_CELL_PLAIN,
                            side->blame >= GPUIPC_CELL_BLAME_NONE &&
                            side->blame <= GPUIPC_CELL_BLAME_WAITS ? side->blame
                                                                  : GPUIPC_CELL_BLAME_NONE,
                            n);
    put_text(*buf, len, side->note);
    (*buf)[(*len)++] = '\n';
    for (i = 0; i < n; i++) {
        const gpuipc_cell_scenario *s = &side->s[i];

        *len += (size_t)sprintf(*buf + *len, "S %d %d %u %d %d ", s->status, s->side, s->step,
                                s->errnum, s->cu);
        put_text(*buf, len, s->mech);
        (*buf)[(*len)++] = '\t';
        put_text(*buf, len, valid_call(s->call) ? s->call : "");
        (*buf)[(*len)++] = '\t';
        put_text(*buf, len, s->reason);
        (*buf)[(*len)++] = '\t';
        put_text(*buf, len, s->what);
        (*buf)[(*len)++] = '\t';
        put_text(*buf, len, s->fix);
        (*buf)[(*len)++] = '\n';
    }
    (*buf)[*len] = '\0';
    return 0;
}

/* A decimal number from *p (an optional '-' where neg is allowed), in
 * [lo, hi], followed by a space, tab or the end. */
static int number(const char **p, long lo, long hi, long *out)
{
    const char *s = *p;
    char *end;
    long v;

    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || v < lo || v > hi || (*end != ' ' && *end != '\t' && *end != '\n' &&
                                           *end != '\0'))
        return -1;
    *out = v;
    *p = *end == ' ' ? end + 1 : end;
    return 0;
}

/* Copies text up to the next stop byte (tab or newline) into out (len),
 * refusing a field too long or with a control byte. */
static int text_field(const char **p, char *out, size_t len, int last)
{
    const char *s = *p;
    size_t n = 0;

    while (*s != '\0' && *s != '\n' && (last || *s != '\t')) {
        if ((unsigned char)*s < 0x20 || n + 1 >= len)
            return -1;
        out[n++] = *s++;
    }
    out[n] = '\0';
    *p = s;
    return 0;
}

/* A status the table knows (run/cells never parses a number it has no
 * word for). */
static int valid_status(long v)
{
    return v >= -1 && v <= 255 && gpuipc_status_known((int)v);
}

static int valid_mech(const char *m)
{
    size_t i;

    if (m[0] == '\0')
        return 0;
    for (i = 0; m[i] != '\0'; i++)
        if (!((m[i] >= 'a' && m[i] <= 'z') || (m[i] >= '0' && m[i] <= '9') || m[i] == '-'))
            return 0;
    return 1;
}

/* Empties every side rank records: its producer's of rank -> c and its
 * consumer's of p -> rank. */
static void forget_rank(gpuipc_cell *cells, uint32_t size, uint32_t rank)
{
    uint32_t k;

    for (k = 0; k < size; k++) {
        gpuipc_cell_side_free(&cells[(size_t)rank * size + k].prod);
        gpuipc_cell_side_free(&cells[(size_t)k * size + rank].cons);
    }
}

/* Decodes one record at *p (line *line, counted on) of rank into rec (empty
 * on entry, its scenarios allocated here), cells telling a pair reported
 * twice; *at gets the side it fills. Returns 0, or a negative errno with
 * err (rec then freed by the caller). */
static int decode_record(const char **p, unsigned *line, uint32_t rank, uint32_t size,
                         const gpuipc_cell *cells, gpuipc_cell_side *rec, size_t *at,
                         int *producer, gpuipc_err *err)
{
    long role, a, b, code, met, bye, np, nf, ns, own, gone, weight, blame, n, i;
    const char *f = *p;

    (*line)++;
    if (f[0] != 'R' || f[1] != ' ')
        return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: not a record",
                              rank, *line);
    f += 2;
    if (number(&f, 1, 2, &role) < 0 || number(&f, 0, (long)size - 1, &a) < 0 ||
        number(&f, 0, (long)size - 1, &b) < 0 || a == b ||
        number(&f, 0, 255, &code) < 0 || !valid_status(code) || code < 0 ||
        number(&f, 0, 1, &met) < 0 || number(&f, 0, 1, &bye) < 0 ||
        number(&f, 0, GPUIPC_CELLS_SCENARIOS_MAX, &np) < 0 ||
        number(&f, 0, GPUIPC_CELLS_SCENARIOS_MAX, &nf) < 0 ||
        number(&f, 0, GPUIPC_CELLS_SCENARIOS_MAX, &ns) < 0 ||
        number(&f, 0, 1, &own) < 0 || number(&f, 0, 1, &gone) < 0 ||
        number(&f, GPUIPC_CELL_VAGUE, GPUIPC_CELL_STUCK, &weight) < 0 ||
        number(&f, GPUIPC_CELL_BLAME_NONE, GPUIPC_CELL_BLAME_WAITS, &blame) < 0 ||
        number(&f, 0, role == 1 ? GPUIPC_CELLS_SCENARIOS_MAX : 0, &n) < 0 || *f != '\t')
        return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: a bad field in "
                              "its record (%s)", rank, *line, SAME_BUILD);
    if ((uint32_t)(role == 1 ? a : b) != rank)
        return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: a record of pair "
                              "%ld -> %ld, which it was not the %s of", rank, *line, a, b,
                              role == 1 ? "producer" : "consumer");
    *at = (size_t)a * size + (size_t)b;
    *producer = role == 1;
    if (role == 1 ? cells[*at].prod.have : cells[*at].cons.have)
        return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: pair %ld -> %ld "
                              "reported twice", rank, *line, a, b);
    f++;
    if (text_field(&f, rec->note, sizeof(rec->note), 1) < 0 || *f != '\n')
        return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: a bad note",
                              rank, *line);
    *p = f + 1;
    rec->code = (int)code;
    rec->met = (int)met;
    rec->said_bye = (int)bye;
    rec->passed = (unsigned)np;
    rec->failed = (unsigned)nf;
    rec->skipped = (unsigned)ns;
    rec->own = own ? GPUIPC_FAIL : GPUIPC_PASS;
    rec->gone = (int)gone;
    rec->weight = (int)weight;
    rec->blame = (int)blame;
    /* Room for the scenarios the record announces (at most the bound
     * above), no more: a lie about their count is caught line by line. */
    if (gpuipc_cell_side_reserve(rec, (size_t)n) < 0)
        return gpuipc_err_set(err, -ENOMEM, "rank %u's results, line %u: out of memory for "
                              "its %ld scenarios", rank, *line, n);
    for (i = 0; i < n; i++) {
        gpuipc_cell_scenario *s = &rec->s[i];
        long st, sd, step, en, cu;

        (*line)++;
        f = *p;
        if (f[0] != 'S' || f[1] != ' ')
            return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: a scenario "
                                  "is missing", rank, *line);
        f += 2;
        if (number(&f, -1, 255, &st) < 0 || !valid_status(st) ||
            number(&f, 0, 3, &sd) < 0 || number(&f, 0, 64, &step) < 0 ||
            number(&f, 0, 4095, &en) < 0 || number(&f, 0, INT_MAX, &cu) < 0 ||
            text_field(&f, s->mech, sizeof(s->mech), 0) < 0 || !valid_mech(s->mech) ||
            *f++ != '\t' || text_field(&f, s->call, sizeof(s->call), 0) < 0 ||
            !valid_call(s->call) ||
            *f++ != '\t' || text_field(&f, s->reason, sizeof(s->reason), 0) < 0 ||
            *f++ != '\t' || text_field(&f, s->what, sizeof(s->what), 0) < 0 ||
            *f++ != '\t' || text_field(&f, s->fix, sizeof(s->fix), 1) < 0 ||
            *f != '\n')
            return gpuipc_err_set(err, -EPROTO, "rank %u's results, line %u: a bad "
                                  "scenario (%s)", rank, *line, SAME_BUILD);
        s->status = (int)st;
        s->side = (int)sd;
        s->step = (unsigned)step;
        s->errnum = (int)en;
        s->cu = (int)cu;
        *p = f + 1;
    }
    rec->have = 1;
    return 0;
}

int gpuipc_cells_decode(const char *text, uint32_t rank, uint32_t size, gpuipc_cell *cells,
                        gpuipc_err *err)
{
    const char *p = text;
    unsigned line = 0;

    while (*p != '\0') {
        gpuipc_cell_side rec;
        size_t at = 0;
        int producer = 0, rc;

        /* Each record is decoded apart, and taken only whole. */
        memset(&rec, 0, sizeof(rec));
        if ((rc = decode_record(&p, &line, rank, size, cells, &rec, &at, &producer, err)) < 0) {
            gpuipc_cell_side_free(&rec);
            forget_rank(cells, size, rank);
            return rc;
        }
        gpuipc_cell_side_move(producer ? &cells[at].prod : &cells[at].cons, &rec);
    }
    return 0;
}

/* Whether the producer's record holds each of mechs once, and nothing else;
 * the first missing or foreign one into what (len bytes) where not. */
static int holds_the_run(const gpuipc_cell_side *pr, const char *const *mechs, size_t nmech,
                         char *what, size_t len)
{
    size_t i, k, seen;

    for (i = 0; i < nmech; i++) {
        for (k = seen = 0; k < pr->n; k++)
            seen += strcmp(pr->s[k].mech, mechs[i]) == 0;
        if (seen != 1) {
            snprintf(what, len, "%s %s", mechs[i], seen ? "more than once" : "missing");
            return 0;
        }
    }
    if (pr->n != nmech) {
        snprintf(what, len, "%zu scenarios for %zu mechanisms", pr->n, nmech);
        return 0;
    }
    return 1;
}

const gpuipc_cell_side *gpuipc_cell_lead(const gpuipc_cell *cell)
{
    const gpuipc_cell_side *pr = &cell->prod, *co = &cell->cons;

    if (co->have && co->note[0] && (!pr->have || co->weight > pr->weight || !pr->note[0]))
        return co;
    return pr;
}

int gpuipc_cell_verdict(const gpuipc_cell *cell, const char *const *who, const char *const *mechs,
                        size_t nmech, char *why, size_t len, unsigned *passed, unsigned *failed,
                        unsigned *skipped)
{
    const gpuipc_cell_side *pr = &cell->prod, *co = &cell->cons;
    unsigned np = 0, nf = 0, ns = 0, left_out = 0, failed_out = 0;
    char what[96];
    int verdict;
    size_t i;

    why[0] = '\0';
    if (!pr->have) {
        snprintf(why, len, "%s never reported (it died, hung, or its records were refused)"
                 "%s%.300s%s", who[cell->p],
                 co->have && co->note[0] ? " (the consumer saw: " : "",
                 co->have ? co->note : "", co->have && co->note[0] ? ")" : "");
        return GPUIPC_FAIL;
    }
    if (!pr->met) {
        /* No session: each side says why (a skip: not on this node), the
         * more specific first (a refusal, or a rank's own state, before a
         * timeout waiting for it). */
        int skip = pr->code == GPUIPC_SKIP && (!co->have || co->code == GPUIPC_SKIP);
        int both = !skip && co->have && co->note[0] && strcmp(co->note, pr->note) != 0;
        int co_first = both && gpuipc_cell_lead(cell) == co;

        if (co_first)
            snprintf(why, len, "%.300s; the producer: %.300s", co->note,
                     pr->note[0] ? pr->note : "no session took place");
        else
            snprintf(why, len, "%.300s%s%.300s",
                     pr->note[0] ? pr->note : "no session took place",
                     both ? "; the consumer: " : "", both ? co->note : "");
        return skip ? GPUIPC_SKIP : GPUIPC_FAIL;
    }
    if (mechs != NULL && !holds_the_run(pr, mechs, nmech, what, sizeof(what))) {
        snprintf(why, len, "%s's record of this pair does not hold the run's mechanisms (%s)",
                 who[cell->p], what);
        return GPUIPC_FAIL;
    }
    for (i = 0; i < pr->n; i++) {
        np += pr->s[i].status == GPUIPC_PASS;
        /* A scenario that never ran proves nothing: a failure here. */
        nf += pr->s[i].status == GPUIPC_FAIL || pr->s[i].status == GPUIPC_STOPPED ||
              pr->s[i].status < 0;
        ns += pr->s[i].status == GPUIPC_SKIP;
        /* Left out of the session by the producer (on no side): not in
         * BYE's counts, whether skipped or, by the plan, failed. */
        left_out += pr->s[i].status == GPUIPC_SKIP && pr->s[i].side == 0;
        failed_out += pr->s[i].status == GPUIPC_FAIL && pr->s[i].side == 0;
    }
    if (pr->gone)
        snprintf(why, len, "%.390s", pr->note);
    else if (!co->have)
        snprintf(why, len, "%s never reported its side of this pair", who[cell->c]);
    else if (!co->said_bye || co->own != GPUIPC_PASS)
        snprintf(why, len, "%s's side of the session failed: %.300s", who[cell->c],
                 co->note[0] ? co->note : "(it said no more)");
    else if (co->passed != np || co->failed != nf - failed_out || co->skipped != ns - left_out)
        snprintf(why, len, "the ranks disagree: the producer counted %u passed, %u failed and "
                 "%u skipped, the consumer was told %u, %u and %u", np, nf - failed_out,
                 ns - left_out,
                 co->passed,
                 co->failed, co->skipped);
    else if (pr->code == GPUIPC_FAIL && nf == 0)
        snprintf(why, len, "the end of the session failed: %.300s",
                 pr->note[0] ? pr->note : "(no reason recorded)");
    verdict = nf > 0 || why[0] != '\0' ? GPUIPC_FAIL : np > 0 ? GPUIPC_PASS : GPUIPC_SKIP;
    if (passed != NULL)
        *passed += np;
    if (failed != NULL)
        *failed += nf;
    if (skipped != NULL)
        *skipped += ns;
    return verdict;
}

/* One line of the judgement: a pair not proven as a whole (mech NULL), or
 * one of its scenarios that did not pass. */
typedef struct judged {
    uint32_t p, c;
    int status;
    const char *mech, *text;
    const gpuipc_cell_scenario *s; /* its cause, where a scenario's */
    char *key;                     /* what it is grouped by (malloc'd) */
    uint64_t hash;                 /* of its status, mechanism and key */
    size_t group;                  /* the index of its group's first line */
    size_t count;                  /* a group's first line: the lines of its group */
    size_t next, last;             /* the group's next line + 1 (0: none); a group's
                                    * first line: its last line */
    int figures;                   /* a group's first line: their figures differ */
} judged;

/* text without the names of its pair's ranks, and without digits where
 * digits is 0: lines that differ only by which pair, or by their figures
 * (a count, a time, another rank's number), are alike. */
static char *key_of(const char *text, const char *a, const char *b, int digits)
{
    size_t la = a != NULL ? strlen(a) : 0, lb = b != NULL ? strlen(b) : 0, k = 0;
    char *key = malloc(strlen(text) + 1);

    if (key == NULL)
        return NULL;
    while (*text != '\0') {
        if (la > 0 && strncmp(text, a, la) == 0)
            text += la;
        else if (lb > 0 && strncmp(text, b, lb) == 0)
            text += lb;
        else if (!digits && *text >= '0' && *text <= '9')
            text++;
        else
            key[k++] = *text++;
    }
    key[k] = '\0';
    return key;
}

/* FNV-1a over n bytes, on from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    while (n-- > 0)
        h = (h ^ *b++) * 1099511628211ull;
    return h;
}

/* The lines so far, grouped by a table of nb buckets (a power of two, more
 * than the lines): each bucket holds a group's first line + 1, 0 empty. */
typedef struct judged_set {
    judged *rows;
    size_t n;
    size_t *buckets, nb;
} judged_set;

/* The cause of line r, "" for none. */
static const char *cause_of(const judged *r)
{
    return r->s != NULL ? r->s->what : "";
}

/* The next character of text *at that is no figure, *at stepped past it
 * ('\0' at the end; *xid 0 at the start). Digits are figures (a time in
 * the kernel log, a count, another rank's number), except an Xid line's
 * own, from "Xid" to the next ',' ("Xid (PCI:0000:1b:00): 79,": its GPU
 * and its code): Xid 43, an application's channel stopped, and Xid 79, a
 * GPU fallen off the bus, are two causes, whose lines a cause's 400
 * characters may have cut to their code. */
static char next_word(const char **at, int *xid)
{
    for (;;) {
        char ch = **at;

        if (ch == '\0')
            return ch;
        if (strncmp(*at, "Xid", 3) == 0)
            *xid = 1;
        else if (ch == ',')
            *xid = 0;
        (*at)++;
        if (*xid || ch < '0' || ch > '9')
            return ch;
    }
}

/* Whether texts a and b are alike but for their figures (next_word). */
static int alike_but_digits(const char *a, const char *b)
{
    int xa = 0, xb = 0;

    for (;;) {
        char ca = next_word(&a, &xa), cb = next_word(&b, &xb);

        if (ca != cb)
            return 0;
        if (ca == '\0')
            return 1;
    }
}

/* FNV-1a over text less its figures (next_word), on from h: texts alike
 * but for their figures hash alike. */
static uint64_t fnv_but_digits(uint64_t h, const char *text)
{
    int xid = 0;
    char ch;

    while ((ch = next_word(&text, &xid)) != '\0')
        h = (h ^ (unsigned char)ch) * 1099511628211ull;
    return h;
}

/* Whether two scenarios' causes are one cause, said with other figures. */
static int same_cause(const gpuipc_cell_scenario *a, const gpuipc_cell_scenario *b)
{
    return alike_but_digits(a->what, b->what) && alike_but_digits(a->fix, b->fix);
}

static int same_kind(const judged *a, const judged *b)
{
    return a->hash == b->hash && a->status == b->status &&
           (a->mech == NULL) == (b->mech == NULL) &&
           (a->mech == NULL || strcmp(a->mech, b->mech) == 0) && strcmp(a->key, b->key) == 0 &&
           alike_but_digits(cause_of(a), cause_of(b));
}

static int judged_add(judged_set *js, uint32_t p, uint32_t c, int status, const char *mech,
                      const char *text, const gpuipc_cell_scenario *s, const char *const *who)
{
    judged *r = &js->rows[js->n];
    size_t b;

    r->p = p;
    r->c = c;
    r->status = status;
    r->mech = mech;
    r->text = text;
    r->s = s;
    if ((r->key = key_of(text, who[p], who[c], 0)) == NULL)
        return -ENOMEM;
    r->hash = fnv_but_digits(fnv(fnv(fnv(14695981039346656037ull, &status, sizeof(status)),
                                     mech ? mech : "", mech ? strlen(mech) + 1 : 0),
                                 r->key, strlen(r->key)), cause_of(r));
    for (b = r->hash & (js->nb - 1); js->buckets[b] != 0; b = (b + 1) & (js->nb - 1))
        if (same_kind(&js->rows[js->buckets[b] - 1], r))
            break;
    if (js->buckets[b] == 0) {
        js->buckets[b] = js->n + 1;
        r->group = js->n;
        r->count = 1;
        r->last = js->n;
    } else {
        judged *first = &js->rows[js->buckets[b] - 1];
        char *a = key_of(first->text, who[first->p], who[first->c], 1);
        char *k = key_of(text, who[p], who[c], 1);

        if (a == NULL || k == NULL) {
            free(a);
            free(k);
            free(r->key);
            return -ENOMEM;
        }
        r->group = js->buckets[b] - 1;
        first->count++;
        js->rows[first->last].next = js->n + 1;
        first->last = js->n;
        first->figures |= strcmp(a, k) != 0 || strcmp(cause_of(first), cause_of(r)) != 0;
        free(a);
        free(k);
    }
    js->n++;
    return 0;
}

/* Adds label to the list in buf (len bytes, used of them so far in *used)
 * unless it is there already; where it does not fit whole, the list ends
 * with ", ..." instead. */
static void covers_add(char *buf, size_t len, size_t *used, const char *label)
{
    const char *at = buf;
    size_t l = strlen(label);

    /* A label in the list: at its start or after ", ", and before "," or
     * its end (not "0" inside "10"). */
    while ((at = strstr(at, label)) != NULL) {
        if ((at == buf || (at - buf >= 2 && at[-2] == ',' && at[-1] == ' ')) &&
            (at[l] == ',' || at[l] == '\0'))
            return;
        at += l;
    }
    if (*used >= 5 && strcmp(buf + *used - 5, ", ...") == 0)
        return;
    if (*used + 2 + l + 5 + 1 > len) {
        if (*used + 5 + 1 <= len) {
            memcpy(buf + *used, ", ...", 6);
            *used += 5;
        }
        return;
    }
    if (*used > 0) {
        memcpy(buf + *used, ", ", 2);
        *used += 2;
    }
    memcpy(buf + *used, label, l + 1);
    *used += l;
}

/* The second line of a group of more than one: the other pairs alike (8 at
 * most named), and the ranks, nodes and GPUs the whole group covers. */
static void say_covers(FILE *out, const judged *rows, size_t g, const gpuipc_cells_where *where)
{
    char ranks[512] = "", nodes[512] = "", gpus[512] = "", label[32];
    size_t i, shown = 0, ur = 0, un = 0, ug = 0;

    fprintf(out, "  and %zu more alike%s:", rows[g].count - 1,
            rows[g].figures ? " but for their figures" : "");
    for (i = g + 1; i != 0; i = rows[i - 1].next) {
        const judged *r = &rows[i - 1];

        if (i - 1 != g && shown < 8)
            fprintf(out, "%s %u -> %u", shown++ ? "," : "", r->p, r->c);
        snprintf(label, sizeof(label), "%u", r->p);
        covers_add(ranks, sizeof(ranks), &ur, label);
        snprintf(label, sizeof(label), "%u", r->c);
        covers_add(ranks, sizeof(ranks), &ur, label);
        if (where != NULL && where->node != NULL) {
            covers_add(nodes, sizeof(nodes), &un, where->node[r->p]);
            covers_add(nodes, sizeof(nodes), &un, where->node[r->c]);
        }
        if (where != NULL && where->gpu != NULL) {
            covers_add(gpus, sizeof(gpus), &ug, where->gpu[r->p]);
            covers_add(gpus, sizeof(gpus), &ug, where->gpu[r->c]);
        }
    }
    fprintf(out, "%s; ranks %s%s%s%s%s\n", rows[g].count - 1 > shown ? ", ..." : "", ranks,
            nodes[0] ? "; nodes " : "", nodes, gpus[0] ? "; GPUs " : "", gpus);
}

int gpuipc_cells_judge(gpuipc_cell *cells, uint32_t size, const char *const *who,
                       const char *const *mechs, size_t nmech,
                       const gpuipc_cells_where *where, FILE *out, gpuipc_cells_tally *t)
{
    const gpuipc_cell_scenario **causes;
    char line[2 * GPUIPC_CELL_TEXT_LEN + 32], (*whys)[GPUIPC_CELL_TEXT_LEN];
    size_t ncauses = 0, nscenarios = 0, i, k, most;
    judged_set js = {0};
    judged *rows;
    uint32_t p, c;
    int rc = 0;

    memset(t, 0, sizeof(*t));
    /* A cause is a scenario's: room for as many as the records hold, and
     * a line for each of them and each pair. */
    for (i = 0; i < (size_t)size * size; i++)
        nscenarios += cells[i].prod.n;
    most = nscenarios + (size_t)size * size + 1;
    causes = calloc(nscenarios + 1, sizeof(*causes));
    rows = js.rows = calloc(most, sizeof(*rows));
    whys = calloc((size_t)size * size + 1, sizeof(*whys));
    for (js.nb = 16; js.nb < 2 * most; js.nb *= 2)
        ;
    js.buckets = calloc(js.nb, sizeof(*js.buckets));
    if (causes == NULL || rows == NULL || whys == NULL || js.buckets == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (p = 0; p < size && rc == 0; p++)
        for (c = 0; c < size && rc == 0; c++) {
            gpuipc_cell *cell = &cells[(size_t)p * size + c];
            char *why = whys[(size_t)p * size + c];
            int v;

            if (p == c)
                continue;
            cell->p = p;
            cell->c = c;
            v = gpuipc_cell_verdict(cell, who, mechs, nmech, why, GPUIPC_CELL_TEXT_LEN,
                                    &t->passed, &t->sfailed, &t->sskipped);
            t->proven += v == GPUIPC_PASS;
            t->failed += v == GPUIPC_FAIL;
            t->skipped += v == GPUIPC_SKIP;
            if (why[0] != '\0') {
                /* The pair as a whole; where the consumer's side failed,
                 * with the cause of its first scenario that failed on the
                 * consumer's side, where one explains it (never another
                 * scenario's, which would explain the wrong failure). */
                const gpuipc_cell_scenario *first = NULL;

                for (i = 0; cell->cons.have && cell->cons.own != GPUIPC_PASS &&
                            i < cell->prod.n && first == NULL; i++)
                    if (cell->prod.s[i].status == GPUIPC_FAIL &&
                        cell->prod.s[i].side == GPUIPC_ROLE_CONSUMER)
                        first = &cell->prod.s[i];
                if (first != NULL && first->what[0] == '\0')
                    first = NULL;
                rc = judged_add(&js, p, c, v == GPUIPC_FAIL ? GPUIPC_FAIL : GPUIPC_SKIP, NULL,
                                why, first, who);
                for (k = 0; first != NULL && k < ncauses && !same_cause(causes[k], first); k++)
                    ;
                if (first != NULL && k == ncauses)
                    causes[ncauses++] = first;
                if (v == GPUIPC_FAIL && t->first[0] == '\0') {
                    snprintf(t->first, sizeof(t->first), "%u -> %u: %.*s", p, c,
                             GPUIPC_CELL_TEXT_LEN, why);
                    if (first != NULL)
                        gpuipc_cause_line_of(first->what, first->fix, t->cause,
                                             sizeof(t->cause));
                }
                continue;
            }
            for (i = 0; i < cell->prod.n && rc == 0; i++) {
                const gpuipc_cell_scenario *s = &cell->prod.s[i];

                if (s->status == GPUIPC_PASS)
                    continue;
                /* Said once already, as the plan's (where->left_out). */
                if (s->status == GPUIPC_SKIP && s->side == 0 && where != NULL &&
                    where->left_out != NULL && where->left_out(p, c, s->mech, where->arg))
                    continue;
                rc = judged_add(&js, p, c, s->status, s->mech, s->reason, s, who);
                if (s->status != GPUIPC_SKIP && t->first[0] == '\0') {
                    snprintf(t->first, sizeof(t->first), "%u -> %u %s: %s", p, c, s->mech,
                             s->reason);
                    if (s->what[0] != '\0')
                        gpuipc_cause_line_of(s->what, s->fix, t->cause, sizeof(t->cause));
                }
                for (k = 0; k < ncauses && !same_cause(causes[k], s); k++)
                    ;
                if (s->what[0] != '\0' && k == ncauses)
                    causes[ncauses++] = s;
            }
        }
    /* Each kind of line once, with the pairs, ranks, nodes and GPUs it
     * covers: a rack's 5112 pairs failing alike are two lines. */
    for (i = 0; i < js.n && rc == 0; i++) {
        const judged *r = &rows[i];

        if (r->group != i)
            continue;
        if (r->mech == NULL)
            fprintf(out, "%s %u -> %u: %s%s\n", gpuipc_status_word(r->status), r->p, r->c,
                    r->text, r->s != NULL ? " [cause below]" : "");
        else
            fprintf(out, "%s %u -> %u %s: %s%s\n", gpuipc_status_word(r->status), r->p, r->c,
                    r->mech, r->text, r->s->what[0] ? " [cause below]" : "");
        if (r->count > 1)
            say_covers(out, rows, i, where);
    }
    for (i = 0; i < ncauses && rc == 0; i++)
        fprintf(out, "  %s\n", gpuipc_cause_line_of(causes[i]->what, causes[i]->fix, line,
                                                    sizeof(line)));
out:
    for (i = 0; rows != NULL && i < js.n; i++)
        free(rows[i].key);
    free(rows);
    free(js.buckets);
    free(whys);
    free(causes);
    return rc;
}
