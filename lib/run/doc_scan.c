/* SPDX-License-Identifier: Apache-2.0 */
/* doc_scan.c: a result document read back, with a strict JSON scanner
 * (doc_scan.h). */
#include "run/doc_scan.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "run/result_doc.h"

/* Deeper nesting than this is refused (the writer's is at most
 * GPUIPC_JSON_DEPTH), so that a hostile text cannot exhaust the stack. */
#define SCAN_DEPTH 64

/* The longest number read (the writer's are at most 24 characters). */
#define NUMBER_LEN 64

typedef struct scanner {
    const char *start, *p, *end;
    int depth;
    gpuipc_err *err;
} scanner;

/* Says what is wrong at the scanner's place. Returns -EBADMSG. */
static int bad(scanner *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(scanner *s, const char *fmt, ...)
{
    char what[GPUIPC_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return gpuipc_err_set(s->err, -EBADMSG, "the document, at byte %zu: %s",
                          (size_t)(s->p - s->start), what);
}

static void ws(scanner *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* The next character after whitespace, or -1 at the end. */
static int peek(scanner *s)
{
    ws(s);
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

static int expect(scanner *s, char c, const char *where)
{
    if (peek(s) != (unsigned char)c)
        return s->p < s->end ? bad(s, "expected '%c' %s, found '%c'", c, where, *s->p)
                             : bad(s, "the text ends where '%c' was expected %s", c, where);
    s->p++;
    return 0;
}

static int hex4(const char *p, unsigned *v)
{
    int i;

    *v = 0;
    for (i = 0; i < 4; i++) {
        char c = p[i];

        *v <<= 4;
        if (c >= '0' && c <= '9')
            *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    return 0;
}

/* Appends byte c to out (cap bytes, NUL-terminated), or marks it too long. */
static void put(char *out, size_t cap, size_t *n, int *fits, unsigned char c)
{
    if (out == NULL)
        return;
    if (*n + 1 < cap)
        out[(*n)++] = (char)c;
    else
        *fits = 0;
    out[*n] = '\0';
}

/* A string at the scanner's place, its text (escapes decoded, UTF-8) into
 * out (cap bytes; NULL: checked only); *fits 0 where it did not fit.
 * Returns 0 or -EBADMSG. */
static int scan_string(scanner *s, char *out, size_t cap, int *fits)
{
    size_t n = 0;
    int rc;

    *fits = 1;
    if (out != NULL && cap > 0)
        out[0] = '\0';
    if ((rc = expect(s, '"', "to begin a string")) < 0)
        return rc;
    for (;;) {
        unsigned char c;
        unsigned u, lo;

        if (s->p >= s->end)
            return bad(s, "the text ends inside a string");
        c = (unsigned char)*s->p;
        if (c == '"') {
            s->p++;
            return 0;
        }
        if (c < 0x20)
            return bad(s, "a control character (0x%02x) inside a string", c);
        if (c != '\\') {
            put(out, cap, &n, fits, c);
            s->p++;
            continue;
        }
        if (s->end - s->p < 2)
            return bad(s, "the text ends inside an escape");
        switch (s->p[1]) {
        case '"':
        case '\\':
        case '/':
            put(out, cap, &n, fits, (unsigned char)s->p[1]);
            break;
        case 'b':
            put(out, cap, &n, fits, '\b');
            break;
        case 'f':
            put(out, cap, &n, fits, '\f');
            break;
        case 'n':
            put(out, cap, &n, fits, '\n');
            break;
        case 'r':
            put(out, cap, &n, fits, '\r');
            break;
        case 't':
            put(out, cap, &n, fits, '\t');
            break;
        case 'u':
            if (s->end - s->p < 6 || hex4(s->p + 2, &u) < 0)
                return bad(s, "\\u without four hex digits");
            if (u >= 0xdc00 && u <= 0xdfff)
                return bad(s, "\\u%04x: a low surrogate without its high one", u);
            if (u >= 0xd800 && u <= 0xdbff) {
                if (s->end - s->p < 12 || s->p[6] != '\\' || s->p[7] != 'u' ||
                    hex4(s->p + 8, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
                    return bad(s, "\\u%04x: a high surrogate without its low one", u);
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                s->p += 6;
            }
            if (u < 0x80) {
                put(out, cap, &n, fits, (unsigned char)u);
            } else if (u < 0x800) {
                put(out, cap, &n, fits, (unsigned char)(0xc0 | (u >> 6)));
                put(out, cap, &n, fits, (unsigned char)(0x80 | (u & 0x3f)));
            } else if (u < 0x10000) {
                put(out, cap, &n, fits, (unsigned char)(0xe0 | (u >> 12)));
                put(out, cap, &n, fits, (unsigned char)(0x80 | ((u >> 6) & 0x3f)));
                put(out, cap, &n, fits, (unsigned char)(0x80 | (u & 0x3f)));
            } else {
                put(out, cap, &n, fits, (unsigned char)(0xf0 | (u >> 18)));
                put(out, cap, &n, fits, (unsigned char)(0x80 | ((u >> 12) & 0x3f)));
                put(out, cap, &n, fits, (unsigned char)(0x80 | ((u >> 6) & 0x3f)));
                put(out, cap, &n, fits, (unsigned char)(0x80 | (u & 0x3f)));
            }
            s->p += 4;
            break;
        default:
            return bad(s, "an unknown escape '\\%c'", s->p[1]);
        }
        s->p += 2;
    }
}

static int is_digit(const char *p, const char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* A number at the scanner's place, as RFC 8259's grammar has it (no
 * leading zeros, no '+', a digit on each side of '.'), into *v; *integral
 * says it has no fraction or exponent. The program sets no locale, so
 * strtod reads '.' as the decimal point, as the writer (core/sink) writes
 * it. Returns 0 or -EBADMSG. */
static int scan_number(scanner *s, double *v, int *integral)
{
    const char *p;
    char text[NUMBER_LEN + 1], *stop;
    size_t len;

    ws(s);
    p = s->p;
    *integral = 1;
    if (p < s->end && *p == '-')
        p++;
    if (!is_digit(p, s->end))
        return bad(s, "not a number");
    if (*p == '0' && is_digit(p + 1, s->end))
        return bad(s, "a number with a leading zero");
    while (is_digit(p, s->end))
        p++;
    if (p < s->end && *p == '.') {
        *integral = 0;
        if (!is_digit(++p, s->end))
            return bad(s, "a number without a digit after its '.'");
        while (is_digit(p, s->end))
            p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        *integral = 0;
        p++;
        if (p < s->end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, s->end))
            return bad(s, "a number without digits in its exponent");
        while (is_digit(p, s->end))
            p++;
    }
    len = (size_t)(p - s->p);
    if (len > NUMBER_LEN)
        return bad(s, "a number of %zu characters (at most %d)", len, NUMBER_LEN);
    memcpy(text, s->p, len);
    text[len] = '\0';
    *v = strtod(text, &stop);
    if (stop != text + len)
        return bad(s, "a number strtod does not read whole");
    /* Beyond a double's range strtod gives infinity, which no writer
     * writes and no figure can be. */
    if (!isfinite(*v))
        return bad(s, "a number out of range (%s)", text);
    s->p = p;
    return 0;
}

static int scan_literal(scanner *s, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return bad(s, "not a JSON value");
    s->p += n;
    return 0;
}

static int skip_value(scanner *s);

/* An object or array whose opening character is next: each member (or
 * element) checked and skipped. */
static int skip_container(scanner *s, char open)
{
    char close = open == '{' ? '}' : ']';
    int rc, fits;

    if (s->depth >= SCAN_DEPTH)
        return bad(s, "nested deeper than %d", SCAN_DEPTH);
    s->depth++;
    s->p++;
    if (peek(s) == (unsigned char)close) {
        s->p++;
        s->depth--;
        return 0;
    }
    for (;;) {
        if (open == '{' && ((rc = scan_string(s, NULL, 0, &fits)) < 0 ||
                            (rc = expect(s, ':', "after a key")) < 0))
            return rc;
        if ((rc = skip_value(s)) < 0)
            return rc;
        if (peek(s) == (unsigned char)close) {
            s->p++;
            s->depth--;
            return 0;
        }
        if ((rc = expect(s, ',', open == '{' ? "or '}' after a member" : "or ']' after an "
                         "element")) < 0)
            return rc;
    }
}

static int skip_value(scanner *s)
{
    double v;
    int c = peek(s), integral, fits;

    switch (c) {
    case '{':
    case '[':
        return skip_container(s, (char)c);
    case '"':
        return scan_string(s, NULL, 0, &fits);
    case 't':
        return scan_literal(s, "true");
    case 'f':
        return scan_literal(s, "false");
    case 'n':
        return scan_literal(s, "null");
    case -1:
        return bad(s, "the text ends where a value was expected");
    default:
        return scan_number(s, &v, &integral);
    }
}

/* A member's key and its ':'; the key into key (cap bytes), "" where it
 * is longer (no member this scanner reads has such a key). */
static int scan_key(scanner *s, char *key, size_t cap)
{
    int rc, fits;

    if ((rc = scan_string(s, key, cap, &fits)) < 0)
        return rc;
    if (!fits)
        key[0] = '\0';
    return expect(s, ':', "after a key");
}

/* After a member: ',' (returns 1: another follows) or '}' (returns 0). */
static int next_member(scanner *s)
{
    int rc;

    if (peek(s) == '}') {
        s->p++;
        s->depth--;
        return 0;
    }
    if ((rc = expect(s, ',', "or '}' after a member")) < 0)
        return rc;
    return 1;
}

/* '{' begun: returns 1 where the object has members, 0 for "{}". */
static int begin_object(scanner *s, const char *what)
{
    int rc;

    if (peek(s) == -1)
        return bad(s, "the text ends where %s was expected", what);
    if (peek(s) != '{')
        return bad(s, "%s is not an object", what);
    if (s->depth >= SCAN_DEPTH)
        return bad(s, "nested deeper than %d", SCAN_DEPTH);
    if ((rc = expect(s, '{', "")) < 0)
        return rc;
    s->depth++;
    if (peek(s) == '}') {
        s->p++;
        s->depth--;
        return 0;
    }
    return 1;
}

/* An integer member (no fraction, no exponent) within [min, INT_MAX], or
 * null where null_ok (then -1). */
static int scan_int(scanner *s, const char *what, int min, int null_ok, int *out)
{
    double v;
    int integral, rc;

    if (null_ok && peek(s) == 'n') {
        *out = -1;
        return scan_literal(s, "null");
    }
    if (peek(s) != '-' && (peek(s) < '0' || peek(s) > '9'))
        return bad(s, "%s is not %s", what, null_ok ? "an integer or null" : "an integer");
    if ((rc = scan_number(s, &v, &integral)) < 0)
        return rc;
    if (!integral || v < min || v > INT_MAX)
        return bad(s, "%s is %g, not an integer from %d", what, v, min);
    *out = (int)v;
    return 0;
}

/* The longest time a document's figure may say, in seconds (about 31
 * years): no run takes longer, and the reader converts the figures to
 * integers of ns (bench/bench.c), which a double beyond this would
 * overflow (undefined behaviour in C). */
#define SECONDS_MAX 1e9

/* A number member from 0 to max. */
static int scan_nonneg(scanner *s, const char *what, double max, double *out)
{
    int integral, rc;

    if (peek(s) != '-' && (peek(s) < '0' || peek(s) > '9'))
        return bad(s, "%s is not a number", what);
    if ((rc = scan_number(s, out, &integral)) < 0)
        return rc;
    if (*out < 0)
        return bad(s, "%s is %g, below 0", what, *out);
    if (*out > max)
        return bad(s, "%s is %g, above %g", what, *out, max);
    return 0;
}

/* Marks member bit of *seen read, refusing it a second time. */
static int once(scanner *s, unsigned *seen, unsigned bit, const char *what)
{
    if (*seen & bit)
        return bad(s, "%s a second time", what);
    *seen |= bit;
    return 0;
}

static int status_of(const char *name)
{
    static const int statuses[] = {GPUIPC_PASS, GPUIPC_FAIL, GPUIPC_SKIP, GPUIPC_STOPPED, -1};
    size_t i;

    for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
        if (strcmp(gpuipc_status_name(statuses[i]), name) == 0)
            return statuses[i];
    return -2;
}

enum { C_NAME = 1, C_VERDICT = 2, C_GPU = 4, C_PEER = 8, C_TIME = 16, C_ALL = 31 };

/* Scenario i's object into c. */
static int scan_cell(scanner *s, size_t i, gpuipc_doc_scan_cell *c)
{
    char key[32], word[32], what[64];
    unsigned seen = 0;
    int rc, fits, more;

    snprintf(what, sizeof(what), "scenario %zu", i);
    if ((more = begin_object(s, what)) < 0)
        return more;
    while (more > 0) {
        if ((rc = scan_key(s, key, sizeof(key))) < 0)
            return rc;
        snprintf(what, sizeof(what), "scenario %zu: %s", i, key);
        if (strcmp(key, "name") == 0) {
            if ((rc = once(s, &seen, C_NAME, what)) < 0)
                return rc;
            if (peek(s) != '"')
                return bad(s, "%s is not a string", what);
            if ((rc = scan_string(s, c->name, sizeof(c->name), &fits)) < 0)
                return rc;
            if (!fits)
                return bad(s, "%s is longer than %d bytes", what, GPUIPC_DOC_SCAN_NAME_LEN - 1);
        } else if (strcmp(key, "verdict") == 0) {
            if ((rc = once(s, &seen, C_VERDICT, what)) < 0)
                return rc;
            if (peek(s) != '"')
                return bad(s, "%s is not a string", what);
            if ((rc = scan_string(s, word, sizeof(word), &fits)) < 0)
                return rc;
            if (!fits || (c->status = status_of(word)) == -2)
                return bad(s, "%s '%s' is not a verdict", what, fits ? word : "(too long)");
        } else if (strcmp(key, "gpu") == 0) {
            if ((rc = once(s, &seen, C_GPU, what)) < 0 ||
                (rc = scan_int(s, what, 0, 1, &c->gpu)) < 0)
                return rc;
        } else if (strcmp(key, "peer_gpu") == 0) {
            if ((rc = once(s, &seen, C_PEER, what)) < 0 ||
                (rc = scan_int(s, what, 0, 1, &c->peer_gpu)) < 0)
                return rc;
        } else if (strcmp(key, "time_ms") == 0) {
            if ((rc = once(s, &seen, C_TIME, what)) < 0 ||
                (rc = scan_nonneg(s, what, SECONDS_MAX * 1e3, &c->time_ms)) < 0)
                return rc;
        } else if ((rc = skip_value(s)) < 0) {
            return rc;
        }
        if ((more = next_member(s)) < 0)
            return more;
    }
    if (seen != C_ALL) {
        static const char *const names[] = {"name", "verdict", "gpu", "peer_gpu", "time_ms"};
        unsigned k;

        for (k = 0; k < 5 && (seen & (1u << k)); k++)
            ;
        return bad(s, "scenario %zu has no %s", i, names[k]);
    }
    return 0;
}

static int scan_cells(scanner *s, gpuipc_doc_scan *out)
{
    size_t cap = 0;
    int rc;

    if (peek(s) != '[')
        return bad(s, "scenarios is not an array");
    if (s->depth >= SCAN_DEPTH)
        return bad(s, "nested deeper than %d", SCAN_DEPTH);
    s->p++;
    s->depth++;
    if (peek(s) == ']') {
        s->p++;
        s->depth--;
        return 0;
    }
    for (;;) {
        if (out->n == cap) {
            size_t more = cap ? 2 * cap : 64;
            gpuipc_doc_scan_cell *bigger = realloc(out->cells, more * sizeof(*bigger));

            if (bigger == NULL)
                return gpuipc_err_set(s->err, -ENOMEM, "the document: out of memory for "
                                      "%zu scenarios", more);
            out->cells = bigger;
            cap = more;
        }
        memset(&out->cells[out->n], 0, sizeof(out->cells[out->n]));
        if ((rc = scan_cell(s, out->n, &out->cells[out->n])) < 0)
            return rc;
        out->n++;
        if (peek(s) == ']') {
            s->p++;
            s->depth--;
            return 0;
        }
        if ((rc = expect(s, ',', "or ']' after a scenario")) < 0)
            return rc;
    }
}

static int scan_exit(scanner *s, gpuipc_doc_scan *out)
{
    char key[32];
    unsigned seen = 0;
    int rc, more;

    if ((more = begin_object(s, "exit")) < 0)
        return more;
    while (more > 0) {
        if ((rc = scan_key(s, key, sizeof(key))) < 0)
            return rc;
        if (strcmp(key, "status") == 0) {
            if ((rc = once(s, &seen, 1, "exit: status")) < 0 ||
                (rc = scan_int(s, "exit: status", 0, 0, &out->exit_status)) < 0)
                return rc;
        } else if ((rc = skip_value(s)) < 0) {
            return rc;
        }
        if ((more = next_member(s)) < 0)
            return more;
    }
    return seen ? 0 : bad(s, "exit has no status");
}

enum { D_VERSION = 1, D_EXIT = 2, D_WALL = 4, D_CELLS = 8, D_ALL = 15 };

static int scan_doc(scanner *s, gpuipc_doc_scan *out)
{
    static const char *const names[] = {"schema_version", "exit", "wall_s", "scenarios"};
    char key[32];
    unsigned seen = 0, k;
    int rc, more, version;

    if ((more = begin_object(s, "the document")) < 0)
        return more;
    while (more > 0) {
        if ((rc = scan_key(s, key, sizeof(key))) < 0)
            return rc;
        for (k = 0; k < 4 && strcmp(key, names[k]) != 0; k++)
            ;
        if (k < 4 && (rc = once(s, &seen, 1u << k, key)) < 0)
            return rc;
        switch (k) {
        case 0:
            if ((rc = scan_int(s, key, 0, 0, &version)) < 0)
                return rc;
            if (version != GPUIPC_RESULT_SCHEMA_VERSION)
                return bad(s, "schema_version %d: this program reads %d", version,
                           GPUIPC_RESULT_SCHEMA_VERSION);
            break;
        case 1:
            rc = scan_exit(s, out);
            break;
        case 2:
            rc = scan_nonneg(s, key, SECONDS_MAX, &out->wall_s);
            break;
        case 3:
            rc = scan_cells(s, out);
            break;
        default:
            rc = skip_value(s);
        }
        if (rc < 0)
            return rc;
        if ((more = next_member(s)) < 0)
            return more;
    }
    if (seen != D_ALL) {
        for (k = 0; k < 4 && (seen & (1u << k)); k++)
            ;
        return bad(s, "the document has no %s", names[k]);
    }
    if (peek(s) != -1)
        return bad(s, "more text after the document");
    return 0;
}

int gpuipc_doc_scan_read(const char *text, size_t len, gpuipc_doc_scan *out, gpuipc_err *err)
{
    scanner s = {.start = text, .p = text, .end = text + len, .err = err};

    memset(out, 0, sizeof(*out));
    return scan_doc(&s, out);
}

void gpuipc_doc_scan_free(gpuipc_doc_scan *s)
{
    free(s->cells);
    memset(s, 0, sizeof(*s));
}
