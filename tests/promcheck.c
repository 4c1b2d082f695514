/* SPDX-License-Identifier: Apache-2.0 */
/* promcheck.c: holds a Prometheus text-format file (what node-exporter's
 * textfile collector reads) to the rules of the exposition format, for the
 * tests on machines without promtool (CI installs Debian's prometheus and
 * uses `promtool check metrics` as well). Reads standard input; exits 0, or
 * 1 naming the line and what is wrong. Checked: comment lines (# HELP and
 * # TYPE at most once per metric, TYPE before its samples, a known type),
 * metric and label names, label values (only \\, \" and \n escapes, no raw
 * newline), values (floats, NaN, +Inf, -Inf), an optional integer
 * timestamp, each metric's samples together, no series twice. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS 512
#define MAX_SERIES 4096

static char metrics[MAX_METRICS][128];
static int typed[MAX_METRICS], helped[MAX_METRICS], closed[MAX_METRICS], sampled[MAX_METRICS];
static int nmetrics;
static char *series[MAX_SERIES];
static int nseries;

static int bad(int line, const char *what, const char *text)
{
    printf("promcheck: line %d: %s: %s", line, what, text);
    return 1;
}

/* The length of a metric (colon) or label name at p, 0 if none. */
static size_t name_len(const char *p, int colon)
{
    size_t n = 0;

    if (!(isalpha((unsigned char)p[0]) || p[0] == '_' || (colon && p[0] == ':')))
        return 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || (colon && p[n] == ':'))
        n++;
    return n;
}

static int metric_index(const char *name, size_t n)
{
    int i;

    for (i = 0; i < nmetrics; i++)
        if (strlen(metrics[i]) == n && strncmp(metrics[i], name, n) == 0)
            return i;
    if (nmetrics == MAX_METRICS || n >= sizeof(metrics[0]))
        return -1;
    memcpy(metrics[nmetrics], name, n);
    metrics[nmetrics][n] = '\0';
    return nmetrics++;
}

static int value_ok(const char *v, char **end)
{
    if (strncmp(v, "NaN", 3) == 0 || strncmp(v, "+Inf", 4) == 0 || strncmp(v, "-Inf", 4) == 0) {
        *end = (char *)v + (v[0] == 'N' ? 3 : 4);
        return 1;
    }
    strtod(v, end);
    return *end != v;
}

static int comment(int ln, const char *line)
{
    const char *p = line + 2;
    size_t n;
    int i;

    if (strncmp(line, "# HELP ", 7) != 0 && strncmp(line, "# TYPE ", 7) != 0)
        return 0; /* any other comment is allowed */
    p = line + 7;
    if ((n = name_len(p, 1)) == 0 || (p[n] != ' ' && p[n] != '\n'))
        return bad(ln, "no metric name after HELP or TYPE", line);
    if ((i = metric_index(p, n)) < 0)
        return bad(ln, "too many metrics", line);
    if (closed[i] || sampled[i])
        return bad(ln, "HELP or TYPE after the metric's samples", line);
    if (line[2] == 'H') {
        if (helped[i]++)
            return bad(ln, "a second HELP for the metric", line);
        return 0;
    }
    if (typed[i]++)
        return bad(ln, "a second TYPE for the metric", line);
    p += n + 1;
    if (strcmp(p, "gauge\n") != 0 && strcmp(p, "counter\n") != 0 &&
        strcmp(p, "untyped\n") != 0 && strcmp(p, "histogram\n") != 0 &&
        strcmp(p, "summary\n") != 0)
        return bad(ln, "an unknown type", line);
    return 0;
}

static int sample(int ln, const char *line, int *current)
{
    const char *p = line;
    size_t n = name_len(p, 1), key;
    char *end;
    int i, k;

    if (n == 0)
        return bad(ln, "no metric name", line);
    if ((i = metric_index(p, n)) < 0)
        return bad(ln, "too many metrics", line);
    if (*current != i && closed[i])
        return bad(ln, "the metric's samples are not together", line);
    if (*current >= 0 && *current != i)
        closed[*current] = 1;
    *current = i;
    sampled[i] = 1;
    p += n;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            if ((n = name_len(p, 0)) == 0 || p[n] != '=' || p[n + 1] != '"')
                return bad(ln, "a bad label", line);
            p += n + 2;
            while (*p != '"') {
                if (*p == '\0' || *p == '\n')
                    return bad(ln, "an unterminated label value", line);
                if (*p == '\\' && p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                    return bad(ln, "a bad escape in a label value", line);
                p += *p == '\\' ? 2 : 1;
            }
            p++;
            if (*p == ',')
                p++;
            else if (*p != '}')
                return bad(ln, "no comma or brace after a label", line);
        }
        p++;
    }
    key = (size_t)(p - line);
    if (*p++ != ' ' || !value_ok(p, &end))
        return bad(ln, "no value", line);
    p = end;
    if (*p == ' ') {
        strtoll(p + 1, &end, 10);
        if (end == p + 1)
            return bad(ln, "a bad timestamp", line);
        p = end;
    }
    if (*p != '\n')
        return bad(ln, "text after the value", line);
    for (k = 0; k < nseries; k++)
        if (strlen(series[k]) == key && strncmp(series[k], line, key) == 0)
            return bad(ln, "a series given twice", line);
    if (nseries < MAX_SERIES && (series[nseries] = strndup(line, key)) != NULL)
        nseries++;
    return 0;
}

int main(void)
{
    char line[8192];
    int ln = 0, current = -1, rc = 0, k;

    while (rc == 0 && fgets(line, sizeof(line), stdin) != NULL) {
        ln++;
        if (strchr(line, '\n') == NULL)
            rc = bad(ln, "a line too long or without its newline", "\n");
        else if (line[0] == '#')
            rc = comment(ln, line);
        else if (line[0] != '\n')
            rc = sample(ln, line, &current);
    }
    for (k = 0; k < nseries; k++)
        free(series[k]);
    return rc;
}
