/* SPDX-License-Identifier: Apache-2.0 */
/* th_text.c: line and XML checks on what the program writes, for the
 * suites (th_text.h). */
#include "th_text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int th_line_has(const char *text, const char *a, const char *b)
{
    const char *line = text;

    while (*line != '\0') {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[2048];

        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (strstr(buf, a) != NULL && strstr(buf, b) != NULL)
            return 1;
        if (end == NULL)
            break;
        line = end + 1;
    }
    return 0;
}

/* The XML checker: a recursive-descent reader that keeps no tree, only
 * where it is (xp), and stops at the first fault with its offset. */

/* Elements nested deeper than this are reported rather than followed. */
#define XP_DEPTH 64

typedef struct xp {
    const char *s, *p, *e;
    char *why;
    size_t len;
} xp;

__attribute__((format(printf, 2, 3))) static int xp_fail(xp *x, const char *fmt, ...)
{
    int n = snprintf(x->why, x->len, "at offset %ld: ", (long)(x->p - x->s));
    va_list ap;

    if (n >= 0 && (size_t)n < x->len) {
        va_start(ap, fmt);
        vsnprintf(x->why + n, x->len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* Returns 1 if the text at x->p starts with lit. */
static int xp_at(const xp *x, const char *lit)
{
    size_t n = strlen(lit);

    return (size_t)(x->e - x->p) >= n && memcmp(x->p, lit, n) == 0;
}

static int xp_is_ws(const xp *x)
{
    return x->p < x->e && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r');
}

/* Skips whitespace. Returns 1 if there was any. */
static int xp_ws(xp *x)
{
    const char *start = x->p;

    while (xp_is_ws(x))
        x->p++;
    return x->p > start;
}

/* Returns 1 if c may stand in a name (first: at its start). Any byte of a
 * multi-byte UTF-8 character is let through. */
static int xp_name_char(int c, int first)
{
    return isalpha(c) || c == '_' || c == ':' || c >= 0x80 ||
           (!first && (isdigit(c) || c == '-' || c == '.'));
}

/* Skips a name. Returns its length, 0 where there is none. */
static size_t xp_name(xp *x)
{
    const char *start = x->p;

    while (x->p < x->e && xp_name_char((unsigned char)*x->p, x->p == start))
        x->p++;
    return (size_t)(x->p - start);
}

/* Checks and skips one character of text or of a value: XML allows no
 * control character but tab, newline and carriage return (and so no NUL,
 * which a file written over by another process may hold). */
static int xp_char(xp *x)
{
    unsigned char c = (unsigned char)*x->p;

    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
        return xp_fail(x, "control character 0x%02x", c);
    x->p++;
    return 1;
}

/* Checks and skips the reference at '&': one of the five predefined
 * entities (a document without a DTD has no others), or a character
 * reference to a character that XML allows. */
static int xp_reference(xp *x)
{
    static const char *const named[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
    unsigned long c = 0;
    const char *d, *end;
    size_t i;
    int hex;

    for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (xp_at(x, named[i])) {
            x->p += strlen(named[i]);
            return 1;
        }
    if (!xp_at(x, "&#"))
        return xp_fail(x, "'&' starts neither a predefined entity nor a character reference");
    hex = xp_at(x, "&#x");
    d = x->p + 2 + hex;
    for (end = d; end < x->e && c <= 0x10FFFF; end++) {
        int ch = (unsigned char)*end;

        if (isdigit(ch))
            c = c * (hex ? 16 : 10) + (unsigned long)(ch - '0');
        else if (hex && isxdigit(ch))
            c = c * 16 + (unsigned long)(tolower(ch) - 'a' + 10);
        else
            break;
    }
    if (end == d || end >= x->e || *end != ';')
        return xp_fail(x, "a malformed character reference");
    if (!(c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
          (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF)))
        return xp_fail(x, "a character reference to U+%lX, which XML does not allow", c);
    x->p = end + 1;
    return 1;
}

/* Skips past the first end, checking the characters on the way. */
static int xp_until(xp *x, const char *end, const char *what)
{
    while (!xp_at(x, end)) {
        if (x->p >= x->e)
            return xp_fail(x, "%s is not closed with '%s'", what, end);
        if (!xp_char(x))
            return 0;
    }
    x->p += strlen(end);
    return 1;
}

/* Checks and skips the comment at "<!--"; XML allows no "--" inside one. */
static int xp_comment(xp *x)
{
    x->p += 4;
    while (!xp_at(x, "-->")) {
        if (x->p >= x->e)
            return xp_fail(x, "a comment is not closed with '-->'");
        if (xp_at(x, "--"))
            return xp_fail(x, "'--' inside a comment");
        if (!xp_char(x))
            return 0;
    }
    x->p += 3;
    return 1;
}

/* Checks and skips the processing instruction at "<?" (not the XML
 * declaration, which only the start of the document may hold). */
static int xp_pi(xp *x)
{
    const char *target = x->p + 2;
    size_t n;

    x->p = target;
    n = xp_name(x);
    if (n == 0)
        return xp_fail(x, "a processing instruction without a target");
    if (n == 3 && strncasecmp(target, "xml", 3) == 0) {
        x->p = target - 2;
        return xp_fail(x, "an XML declaration that is not at the start");
    }
    if (xp_at(x, "?>")) {
        x->p += 2;
        return 1;
    }
    if (!xp_ws(x))
        return xp_fail(x, "expected whitespace or '?>' after the target");
    return xp_until(x, "?>", "a processing instruction");
}

/* Checks the attributes of a start tag up to the '>' or "/>" that ends it,
 * which is left to the caller. Each is name="value" or name='value', once
 * per tag. */
static int xp_attributes(xp *x)
{
    const char *names[32];
    size_t lens[32], k;
    int n = 0;

    for (;;) {
        int ws = xp_ws(x);
        const char *name;
        size_t nl;
        char q;

        if (x->p >= x->e)
            return xp_fail(x, "a tag is not closed");
        if (*x->p == '>' || xp_at(x, "/>"))
            return 1;
        if (!ws)
            return xp_fail(x, "expected whitespace, '>' or '/>'");
        name = x->p;
        nl = xp_name(x);
        if (nl == 0)
            return xp_fail(x, "expected an attribute name");
        for (k = 0; k < (size_t)n && k < 32; k++)
            if (lens[k] == nl && memcmp(names[k], name, nl) == 0)
                return xp_fail(x, "attribute %.*s appears twice", (int)nl, name);
        if (n < 32) {
            names[n] = name;
            lens[n] = nl;
        }
        n++;
        xp_ws(x);
        if (x->p >= x->e || *x->p != '=')
            return xp_fail(x, "attribute %.*s has no '='", (int)nl, name);
        x->p++;
        xp_ws(x);
        if (x->p >= x->e || (*x->p != '"' && *x->p != '\''))
            return xp_fail(x, "the value of %.*s is not quoted", (int)nl, name);
        q = *x->p++;
        while (x->p < x->e && *x->p != q) {
            if (*x->p == '<')
                return xp_fail(x, "'<' in the value of %.*s", (int)nl, name);
            if (*x->p == '&' ? !xp_reference(x) : !xp_char(x))
                return 0;
        }
        if (x->p >= x->e)
            return xp_fail(x, "the value of %.*s is not closed", (int)nl, name);
        x->p++;
    }
}

/* Returns 1 if the value from v to end may stand in the XML declaration
 * for its version (which: 0), encoding (1) or standalone (2). */
static int xp_declaration_value(int which, const char *v, const char *end)
{
    size_t n = (size_t)(end - v), k;

    if (which == 0) {
        for (k = 2; k < n && isdigit((unsigned char)v[k]); k++)
            ;
        return n >= 3 && v[0] == '1' && v[1] == '.' && k == n;
    }
    if (which == 1) {
        for (k = 1; k < n && (isalnum((unsigned char)v[k]) || strchr("._-", v[k]) != NULL); k++)
            ;
        return n >= 1 && isalpha((unsigned char)v[0]) && k == n;
    }
    return (n == 3 && memcmp(v, "yes", 3) == 0) || (n == 2 && memcmp(v, "no", 2) == 0);
}

/* Checks and skips the XML declaration, which must open the document:
 * version="1.n", then optionally encoding and standalone, in that order. */
static int xp_declaration(xp *x)
{
    static const char *const names[] = {"version", "encoding", "standalone"};
    int i;

    if (!xp_at(x, "<?xml") || x->e - x->p < 6 || strchr(" \t\r\n", x->p[5]) == NULL)
        return xp_fail(x, "no XML declaration ('<?xml version=...?>') at the start");
    x->p += 5;
    for (i = 0; i < 3; i++) {
        const char *before = x->p, *v;
        char q;

        if (!xp_ws(x) || !xp_at(x, names[i])) {
            x->p = before;
            if (i == 0)
                return xp_fail(x, "the XML declaration does not start with its version");
            continue;
        }
        x->p += strlen(names[i]);
        xp_ws(x);
        if (x->p >= x->e || *x->p != '=')
            return xp_fail(x, "%s has no '=' in the XML declaration", names[i]);
        x->p++;
        xp_ws(x);
        if (x->p >= x->e || (*x->p != '"' && *x->p != '\''))
            return xp_fail(x, "the value of %s is not quoted in the XML declaration", names[i]);
        q = *x->p++;
        v = x->p;
        while (x->p < x->e && *x->p != q)
            x->p++;
        if (x->p >= x->e)
            return xp_fail(x, "the value of %s is not closed in the XML declaration", names[i]);
        if (!xp_declaration_value(i, v, x->p)) {
            x->p = v;
            return xp_fail(x, "a value of %s that the XML declaration does not allow",
                           names[i]);
        }
        x->p++;
    }
    xp_ws(x);
    if (!xp_at(x, "?>"))
        return xp_fail(x, "expected '?>' to end the XML declaration");
    x->p += 2;
    return 1;
}

/* Skips whitespace, comments and processing instructions. */
static int xp_misc(xp *x)
{
    for (;;) {
        xp_ws(x);
        if (xp_at(x, "<!--")) {
            if (!xp_comment(x))
                return 0;
        } else if (xp_at(x, "<?")) {
            if (!xp_pi(x))
                return 0;
        } else {
            return 1;
        }
    }
}

/* Checks and skips the element at '<' followed by a name, with everything
 * inside it. Open elements are kept on a stack, not in recursion. */
static int xp_element(xp *x)
{
    const char *open[XP_DEPTH];
    size_t open_len[XP_DEPTH];
    int depth = 0;

    for (;;) {
        if (x->p >= x->e)
            return xp_fail(x, "<%.*s> is not closed", (int)open_len[depth - 1], open[depth - 1]);
        if (xp_at(x, "</")) {
            const char *name = x->p + 2;
            size_t nl;

            x->p = name;
            nl = xp_name(x);
            if (nl != open_len[depth - 1] || memcmp(name, open[depth - 1], nl) != 0)
                return xp_fail(x, "</%.*s> closes <%.*s>", (int)nl, name,
                               (int)open_len[depth - 1], open[depth - 1]);
            xp_ws(x);
            if (x->p >= x->e || *x->p != '>')
                return xp_fail(x, "expected '>' to end </%.*s", (int)nl, name);
            x->p++;
            if (--depth == 0)
                return 1;
        } else if (xp_at(x, "<!--")) {
            if (!xp_comment(x))
                return 0;
        } else if (xp_at(x, "<![CDATA[")) {
            x->p += 9;
            if (!xp_until(x, "]]>", "a CDATA section"))
                return 0;
        } else if (xp_at(x, "<?")) {
            if (!xp_pi(x))
                return 0;
        } else if (*x->p == '<') {
            const char *name = x->p + 1;
            size_t nl;

            x->p = name;
            nl = xp_name(x);
            if (nl == 0) {
                x->p = name - 1;
                return xp_fail(x, "a '<' that starts no tag");
            }
            if (!xp_attributes(x))
                return 0;
            if (*x->p == '/') {
                x->p += 2;
                if (depth == 0)
                    return 1;
            } else {
                if (depth == XP_DEPTH)
                    return xp_fail(x, "elements nested more than %d deep", XP_DEPTH);
                open[depth] = name;
                open_len[depth++] = nl;
                x->p++;
            }
        } else if (*x->p == '&') {
            if (!xp_reference(x))
                return 0;
        } else if (xp_at(x, "]]>")) {
            return xp_fail(x, "']]>' in text");
        } else if (!xp_char(x)) {
            return 0;
        }
    }
}

/* Checks that the whole text is UTF-8, which a document whose declaration
 * names no encoding is: no stray continuation byte, no truncated or
 * overlong sequence, no surrogate, nothing above U+10FFFF. */
static int xp_utf8(xp *x)
{
    while (x->p < x->e) {
        const unsigned char *u = (const unsigned char *)x->p;
        size_t need = (size_t)(x->e - x->p), k, n;
        unsigned long c;

        if (u[0] < 0x80) {
            x->p++;
            continue;
        }
        if (u[0] >= 0xC2 && u[0] <= 0xDF)
            n = 2, c = u[0] & 0x1F;
        else if (u[0] >= 0xE0 && u[0] <= 0xEF)
            n = 3, c = u[0] & 0x0F;
        else if (u[0] >= 0xF0 && u[0] <= 0xF4)
            n = 4, c = u[0] & 0x07;
        else
            return xp_fail(x, "byte 0x%02x is not UTF-8", u[0]);
        if (need < n)
            return xp_fail(x, "a UTF-8 sequence cut short by the end");
        for (k = 1; k < n; k++) {
            if ((u[k] & 0xC0) != 0x80)
                return xp_fail(x, "a UTF-8 sequence cut short by byte 0x%02x", u[k]);
            c = c << 6 | (u[k] & 0x3F);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10FFFF ||
            (c >= 0xD800 && c <= 0xDFFF) || c == 0xFFFE || c == 0xFFFF)
            return xp_fail(x, "a UTF-8 sequence for U+%lX, which XML does not allow", c);
        x->p += n;
    }
    x->p = x->s;
    return 1;
}

int th_xml_valid(const char *text, size_t n, char *why, size_t len)
{
    xp x = {.s = text, .p = text, .e = text + n, .why = why, .len = len};

    why[0] = '\0';
    if (!xp_utf8(&x) || !xp_declaration(&x) || !xp_misc(&x))
        return 0;
    if (!xp_at(&x, "<") || x.e - x.p < 2 || !xp_name_char((unsigned char)x.p[1], 1))
        return xp_fail(&x, "expected the root element");
    if (!xp_element(&x) || !xp_misc(&x))
        return 0;
    if (x.p != x.e)
        return xp_fail(&x, "text after the root element, from byte 0x%02x on",
                       (unsigned char)*x.p);
    return 1;
}
