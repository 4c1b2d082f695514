/* SPDX-License-Identifier: Apache-2.0 */
/* jschema.c: the tests' one JSON reader, a strict RFC 8259 parser into a
 * tree, and the JSON Schema subset the tests hold trees to (jschema.h). */
#include "jschema.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
    int type;
    double num;
    int is_int;
    char *str;     /* J_STR: the text */
    char *key;     /* a member's key, for children of J_OBJ */
    jnode **kids;  /* J_ARR, J_OBJ */
    size_t n;
};

typedef struct {
    const char *s, *p;
    char *why;
    size_t len;
    int depth;
} parser;

/* Says what is wrong and where, unless a deeper call said it first: the
 * innermost reason is the precise one. */
static jnode *fail(parser *ps, const char *what)
{
    if (ps->why[0] == '\0')
        snprintf(ps->why, ps->len, "at offset %ld: %s at '%.20s'", (long)(ps->p - ps->s), what,
                 ps->p);
    return NULL;
}

static void ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

static jnode *node(int type)
{
    jnode *n = calloc(1, sizeof(*n));

    if (n != NULL)
        n->type = type;
    return n;
}

static int add(jnode *parent, jnode *kid)
{
    jnode **k = realloc(parent->kids, (parent->n + 1) * sizeof(*k));

    if (k == NULL)
        return 0;
    parent->kids = k;
    parent->kids[parent->n++] = kid;
    return 1;
}

/* The character the escape at ps->p (after its '\') stands for, the escape
 * skipped, or -1: RFC 8259 has \" \\ \/ \b \f \n \r \t and \u with four hex
 * digits. \uXXXX below 0x80 decodes as itself, any other as '?', which is
 * all the checks need. */
static int escape(parser *ps)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *c = *ps->p != '\0' ? strchr(from, *ps->p) : NULL;
    unsigned v = 0;
    int i;

    if (c != NULL) {
        ps->p++;
        return to[c - from];
    }
    if (*ps->p != 'u')
        return -1;
    for (i = 1; i <= 4; i++) {
        int h = (unsigned char)ps->p[i];

        if (!isxdigit(h))
            return -1;
        v = v * 16 + (unsigned)(isdigit(h) ? h - '0' : tolower(h) - 'a' + 10);
    }
    ps->p += 5;
    return v < 0x80 ? (int)v : '?';
}

/* A string's text, escapes decoded, or NULL with why. */
static char *string(parser *ps)
{
    size_t cap = 16, used = 0;
    char *s;

    if (*ps->p != '"')
        return fail(ps, "a string expected"), NULL;
    if ((s = malloc(cap)) == NULL)
        return fail(ps, "out of memory"), NULL;
    ps->p++;
    while (*ps->p != '"') {
        int c = (unsigned char)*ps->p;

        if (c == '\0')
            return free(s), fail(ps, "a string not closed"), NULL;
        if (c < 0x20)
            return free(s), fail(ps, "a control character in a string"), NULL;
        ps->p++;
        if (c == '\\' && (c = escape(ps)) < 0) {
            ps->p--;
            return free(s), fail(ps, "a bad escape"), NULL;
        }
        if (used + 2 > cap) {
            char *t = realloc(s, cap *= 2);

            if (t == NULL)
                return free(s), fail(ps, "out of memory"), NULL;
            s = t;
        }
        s[used++] = (char)c;
    }
    ps->p++;
    s[used] = '\0';
    return s;
}

/* Skips the digits at ps->p. Returns how many there were. */
static size_t digits(parser *ps)
{
    const char *start = ps->p;

    while (isdigit((unsigned char)*ps->p))
        ps->p++;
    return (size_t)(ps->p - start);
}

/* A number, held to RFC 8259's grammar before strtod reads it (strtod also
 * takes "01", "1.", "+1", ".5", hex, "inf" and "nan", none of them JSON). */
static jnode *number(parser *ps)
{
    const char *start = ps->p;
    int whole = 1;
    jnode *n;

    if (*ps->p == '-')
        ps->p++;
    if (*ps->p == '0')
        ps->p++;
    else if (digits(ps) == 0)
        return fail(ps, "a value expected");
    if (*ps->p == '.') {
        ps->p++;
        whole = 0;
        if (digits(ps) == 0)
            return fail(ps, "a bad fraction");
    }
    if (*ps->p == 'e' || *ps->p == 'E') {
        ps->p++;
        whole = 0;
        if (*ps->p == '+' || *ps->p == '-')
            ps->p++;
        if (digits(ps) == 0)
            return fail(ps, "a bad exponent");
    }
    if ((n = node(J_NUM)) == NULL)
        return fail(ps, "out of memory");
    n->num = strtod(start, NULL);
    n->is_int = whole && fabs(n->num) < 9e15;
    return n;
}

static jnode *value(parser *ps);

static jnode *container(parser *ps, int type)
{
    jnode *n = node(type), *kid;
    char close = type == J_OBJ ? '}' : ']';

    if (n == NULL)
        return fail(ps, "out of memory");
    if (++ps->depth > 64)
        return js_free(n), fail(ps, "nested too deep");
    ps->p++;
    ws(ps);
    if (*ps->p == close) {
        ps->p++;
        ps->depth--;
        return n;
    }
    for (;;) {
        char *key = NULL;

        ws(ps);
        if (type == J_OBJ) {
            if (*ps->p != '"')
                return js_free(n), fail(ps, "a key expected");
            if ((key = string(ps)) == NULL)
                return js_free(n), NULL;
            ws(ps);
            if (*ps->p != ':')
                return free(key), js_free(n), fail(ps, "':' expected");
            ps->p++;
        }
        if ((kid = value(ps)) == NULL)
            return free(key), js_free(n), NULL;
        kid->key = key;
        if (!add(n, kid))
            return js_free(kid), js_free(n), fail(ps, "out of memory");
        ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p != close)
            return js_free(n), fail(ps, type == J_OBJ ? "',' or '}' expected"
                                                      : "',' or ']' expected");
        ps->p++;
        ps->depth--;
        return n;
    }
}

static jnode *value(parser *ps)
{
    jnode *n;

    ws(ps);
    switch (*ps->p) {
    case '{':
        return container(ps, J_OBJ);
    case '[':
        return container(ps, J_ARR);
    case '"':
        if ((n = node(J_STR)) == NULL)
            return fail(ps, "out of memory");
        if ((n->str = string(ps)) == NULL)
            return js_free(n), NULL;
        return n;
    case 't':
    case 'f':
    case 'n': {
        const char *word = *ps->p == 't' ? "true" : *ps->p == 'f' ? "false" : "null";

        if (strncmp(ps->p, word, strlen(word)) != 0)
            return fail(ps, "a bad literal");
        if ((n = node(*word == 'n' ? J_NULL : J_BOOL)) == NULL)
            return fail(ps, "out of memory");
        n->num = *word == 't';
        ps->p += strlen(word);
        return n;
    }
    default:
        return number(ps);
    }
}

jnode *js_parse(const char *text, char *why, size_t len)
{
    parser ps = {.s = text, .p = text, .why = why, .len = len};
    jnode *n;

    why[0] = '\0';
    n = value(&ps);
    if (n == NULL)
        return NULL;
    ws(&ps);
    if (*ps.p != '\0') {
        js_free(n);
        return fail(&ps, "text after the value");
    }
    return n;
}

int js_valid(const char *text, char *why, size_t len)
{
    jnode *n = js_parse(text, why, len);
    int ok = n != NULL;

    js_free(n);
    return ok;
}

void js_free(jnode *n)
{
    size_t i;

    if (n == NULL)
        return;
    for (i = 0; i < n->n; i++)
        js_free(n->kids[i]);
    free(n->kids);
    free(n->str);
    free(n->key);
    free(n);
}

const jnode *js_get(const jnode *n, const char *key)
{
    size_t i;

    for (i = 0; n != NULL && n->type == J_OBJ && i < n->n; i++)
        if (strcmp(n->kids[i]->key, key) == 0)
            return n->kids[i];
    return NULL;
}

const char *js_str(const jnode *n)
{
    return n != NULL && n->type == J_STR ? n->str : NULL;
}

double js_num(const jnode *n)
{
    return n != NULL && n->type == J_NUM ? n->num : NAN;
}

int js_bool(const jnode *n)
{
    return n != NULL && n->type == J_BOOL ? n->num != 0 : -1;
}

size_t js_len(const jnode *n)
{
    return n != NULL && n->type == J_ARR ? n->n : 0;
}

const jnode *js_at(const jnode *n, size_t i)
{
    return i < js_len(n) ? n->kids[i] : NULL;
}

static int check(const jnode *s, const jnode *d, const char *path, char *why, size_t len);
static int check_rest(const jnode *s, const jnode *d, const char *path, char *why, size_t len);

static int type_is(const jnode *d, const char *t)
{
    return strcmp(t, "null") == 0 ? d->type == J_NULL
         : strcmp(t, "boolean") == 0 ? d->type == J_BOOL
         : strcmp(t, "number") == 0 ? d->type == J_NUM
         : strcmp(t, "integer") == 0 ? d->type == J_NUM && d->is_int
         : strcmp(t, "string") == 0 ? d->type == J_STR
         : strcmp(t, "array") == 0 ? d->type == J_ARR
         : strcmp(t, "object") == 0 ? d->type == J_OBJ : 0;
}

static const jnode *root_schema;

/* "#/$defs/name" in the schema being checked against. */
static const jnode *resolve(const char *ref)
{
    return strncmp(ref, "#/$defs/", 8) == 0 ? js_get(js_get(root_schema, "$defs"), ref + 8)
                                           : NULL;
}

static int check(const jnode *s, const jnode *d, const char *path, char *why, size_t len)
{
    const jnode *ref = js_get(s, "$ref"), *any = js_get(s, "anyOf"), *cst = js_get(s, "const");

    if (ref != NULL) {
        const jnode *target = js_str(ref) ? resolve(ref->str) : NULL;

        if (target == NULL)
            return snprintf(why, len, "%s: the schema's $ref is not found", path), 0;
        if (!check(target, d, path, why, len))
            return 0;
    }
    if (any != NULL) {
        size_t k;

        for (k = 0; k < js_len(any); k++)
            if (check(js_at(any, k), d, path, why, len))
                break;
        if (k == js_len(any)) {
            char last[320];

            snprintf(last, sizeof(last), "%s", why);
            return snprintf(why, len, "%s: matches none of anyOf (%s)", path, last), 0;
        }
        why[0] = '\0';
    }
    if (cst != NULL && cst->type == J_NUM && (d->type != J_NUM || d->num != cst->num))
        return snprintf(why, len, "%s: not the schema's constant %g", path, cst->num), 0;
    return check_rest(s, d, path, why, len);
}

static int check_rest(const jnode *s, const jnode *d, const char *path, char *why, size_t len)
{
    const jnode *t = js_get(s, "type"), *req = js_get(s, "required");
    const jnode *props = js_get(s, "properties"), *items = js_get(s, "items");
    const jnode *en = js_get(s, "enum"), *add_p = js_get(s, "additionalProperties");
    const jnode *min = js_get(s, "minimum");
    char sub[512];
    size_t i;

    if (t != NULL) {
        int ok = 0;

        if (t->type == J_STR)
            ok = type_is(d, t->str);
        for (i = 0; t->type == J_ARR && i < t->n; i++)
            ok |= t->kids[i]->type == J_STR && type_is(d, t->kids[i]->str);
        if (!ok)
            return snprintf(why, len, "%s: not of the schema's type", path), 0;
    }
    if (en != NULL && d->type == J_STR) {
        for (i = 0; i < en->n; i++)
            if (js_str(en->kids[i]) != NULL && strcmp(en->kids[i]->str, d->str) == 0)
                break;
        if (i == en->n)
            return snprintf(why, len, "%s: '%s' is not one of the schema's values", path,
                            d->str), 0;
    }
    if (min != NULL && d->type == J_NUM && d->num < min->num)
        return snprintf(why, len, "%s: %g is below the minimum %g", path, d->num, min->num), 0;
    if (d->type == J_OBJ) {
        for (i = 0; req != NULL && i < req->n; i++)
            if (js_get(d, js_str(req->kids[i]) ? req->kids[i]->str : "") == NULL)
                return snprintf(why, len, "%s: '%s' is required and missing", path,
                                js_str(req->kids[i])), 0;
        for (i = 0; i < d->n; i++) {
            const jnode *ps = js_get(props, d->kids[i]->key);

            snprintf(sub, sizeof(sub), "%s.%s", path, d->kids[i]->key);
            if (ps == NULL && add_p != NULL && add_p->type == J_BOOL && add_p->num == 0)
                return snprintf(why, len, "%s: not in the schema", sub), 0;
            if (ps != NULL && !check(ps, d->kids[i], sub, why, len))
                return 0;
        }
    }
    if (d->type == J_ARR && items != NULL)
        for (i = 0; i < d->n; i++) {
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            if (!check(items, d->kids[i], sub, why, len))
                return 0;
        }
    return 1;
}

int js_check(const jnode *schema, const jnode *doc, char *why, size_t len)
{
    why[0] = '\0';
    root_schema = schema;
    return check(schema, doc, "$", why, len);
}
