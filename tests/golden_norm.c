/* SPDX-License-Identifier: Apache-2.0 */
/* golden_norm.c: a JSON document the program wrote (--json), printed as it
 * was written, byte for byte, except the values that differ from run to run
 * or from machine to machine, which become a placeholder naming their type
 * ("<number>", "<string>", "<bool>"; a null stays null). For tests/golden.sh:
 * keys, their order, every array's length, the layout and every other value
 * are compared as they are, so a refactor of the writers must keep them.
 *
 * Usage: golden_norm FILE. Exits 0, or 1 (saying why on stderr) where FILE
 * cannot be read or is not JSON (tests/jschema.c's parser decides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jschema.h"

/* The volatile values, by key path: members joined by '.', an array's
 * element as "[]", '*' for any one member. Kept as narrow as the runs
 * allow: a value is here only because it is a time, a rate, a pid or a
 * fact of the machine that ran it; everything else is held exactly. */
static const char *const volatile_paths[] = {
    /* The build: the commit (with -dirty) moves with every change. */
    "program.commit",
    /* Times and rates: the clock and the machine's speed. */
    "time", "start_time", "end_time", "wall_s",
    "scenarios.[].time_ms", "scenarios.[].steps_ns.*",
    "scenarios.[].producer_to_consumer.read_gbps",
    "scenarios.[].consumer_to_producer.read_gbps", "scenarios.[].consumer_write_gbps",
    "round_records.[].time_ms", "fault_matrix.seconds",
    /* What a process holds counts the FDs it inherited (make -j passes its
     * jobserver's, a shell its own): that count is not the run's. */
    "scenarios.[].consumer_holds_after.fds", "round_records.[].*.fds",
    /* The machine: which host, boot and kernel ran it. */
    "machine.hostname", "machine.boot_id", "machine.kernel",
    /* The processes' facts that belong to the machine or the moment, not to
     * the run: namespace inodes, pids, the user, limits, capabilities,
     * confinement, /dev/shm's size and where the machine runs. */
    "facts.*.namespaces.*", "facts.*.pid", "facts.*.uid", "facts.*.seccomp",
    "facts.*.yama_ptrace_scope", "facts.*.nofile_soft", "facts.*.nofile_hard",
    "facts.*.cap_eff", "facts.*.kernel", "facts.*.shm.dev", "facts.*.shm.size",
    "facts.*.shm.available", "facts.*.wsl", "facts.*.selinux_enforcing",
    "facts.*.container", "facts.*.boot_id",
    /* --list: the file limit. */
    "list.host.rlimit_nofile.soft", "list.host.rlimit_nofile.hard",
    /* --ranks: the launcher's PMIx, and each rank's host and pid. */
    "pmix", "ranks.[].host", "ranks.[].pid",
};

enum { MAX_DEPTH = 64 };

typedef struct {
    const char *p;         /* the next byte of the document */
    const char *comp[MAX_DEPTH];
    size_t comp_len[MAX_DEPTH];
    int depth;
} walker;

/* Whether the component [c, c + n) matches the pattern's [q, q + m). */
static int comp_matches(const char *q, size_t m, const char *c, size_t n)
{
    return (m == 1 && q[0] == '*') || (m == n && memcmp(q, c, n) == 0);
}

/* Whether the walker's path matches pattern, component by component. */
static int path_matches(const walker *w, const char *pattern)
{
    const char *q = pattern;
    int i;

    for (i = 0; i < w->depth; i++) {
        size_t m = strcspn(q, ".");

        if (m == 0 || !comp_matches(q, m, w->comp[i], w->comp_len[i]))
            return 0;
        q += m;
        if (*q == '.')
            q++;
        else if (i + 1 < w->depth)
            return 0;
    }
    return *q == '\0';
}

static int is_volatile(const walker *w)
{
    size_t i;

    for (i = 0; i < sizeof(volatile_paths) / sizeof(volatile_paths[0]); i++)
        if (path_matches(w, volatile_paths[i]))
            return 1;
    return 0;
}

/* Copies whitespace as it is. */
static void copy_ws(walker *w)
{
    while (*w->p == ' ' || *w->p == '\n' || *w->p == '\t' || *w->p == '\r')
        putchar(*w->p++);
}

/* The end of the string that starts at p (its opening quote). */
static const char *string_end(const char *p)
{
    for (p++; *p != '"'; p++)
        if (*p == '\\')
            p++;
    return p + 1;
}

static void copy_value(walker *w);

static void push(walker *w, const char *c, size_t n)
{
    if (w->depth < MAX_DEPTH) {
        w->comp[w->depth] = c;
        w->comp_len[w->depth] = n;
    }
    w->depth++;
}

static void copy_container(walker *w)
{
    char close = *w->p == '{' ? '}' : ']';

    putchar(*w->p++);
    copy_ws(w);
    while (*w->p != close) {
        if (close == '}') {
            const char *key = w->p, *end = string_end(w->p);

            fwrite(key, 1, (size_t)(end - key), stdout);
            w->p = end;
            push(w, key + 1, (size_t)(end - key) - 2);
            copy_ws(w);
            putchar(*w->p++); /* ':' */
        } else {
            push(w, "[]", 2);
        }
        copy_value(w);
        w->depth--;
        copy_ws(w);
        if (*w->p == ',') {
            putchar(*w->p++);
            copy_ws(w);
        }
    }
    putchar(*w->p++);
}

static void copy_value(walker *w)
{
    const char *start, *end;

    copy_ws(w);
    start = w->p;
    if (*start == '{' || *start == '[') {
        copy_container(w);
        return;
    }
    if (*start == '"')
        end = string_end(start);
    else
        end = start + strcspn(start, ",]} \t\r\n");
    w->p = end;
    if (*start == 'n' || w->depth > MAX_DEPTH || !is_volatile(w))
        fwrite(start, 1, (size_t)(end - start), stdout);
    else
        fputs(*start == '"' ? "\"<string>\"" : *start == 't' || *start == 'f' ? "\"<bool>\""
                                                                              : "\"<number>\"",
              stdout);
}

/* The whole of path, NUL-terminated, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 65536, used = 0, n;
    char *text = malloc(cap);

    if (f == NULL || text == NULL)
        goto fail;
    while ((n = fread(text + used, 1, cap - used - 1, f)) > 0) {
        used += n;
        if (used + 1 == cap) {
            char *t = realloc(text, cap *= 2);

            if (t == NULL)
                goto fail;
            text = t;
        }
    }
    if (ferror(f))
        goto fail;
    fclose(f);
    text[used] = '\0';
    if (strlen(text) != used) /* a NUL inside: no JSON document */
        return free(text), NULL;
    return text;
fail:
    if (f != NULL)
        fclose(f);
    free(text);
    return NULL;
}

int main(int argc, char **argv)
{
    char why[256];
    char *text;
    jnode *doc;
    walker w = {0};

    if (argc != 2) {
        fprintf(stderr, "usage: golden_norm FILE\n");
        return 2;
    }
    if ((text = slurp(argv[1])) == NULL) {
        fprintf(stderr, "golden_norm: %s: cannot be read\n", argv[1]);
        return 1;
    }
    /* The walk below trusts the document's syntax: the parser checks it
     * first, so a broken document is named, never half printed. */
    if ((doc = js_parse(text, why, sizeof(why))) == NULL) {
        fprintf(stderr, "golden_norm: %s: not JSON: %s\n", argv[1], why);
        free(text);
        return 1;
    }
    js_free(doc);
    w.p = text;
    copy_value(&w);
    fputs(w.p, stdout); /* what follows the document: whitespace only */
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}
