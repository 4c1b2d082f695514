/* brief.c: --brief (brief.h). */
#include "app/brief.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

#define KEEP_MAX (4u << 20) /* the most of a run's text read back */

int gpuipc_brief_wanted(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--brief") == 0)
            return 1;
    }
    return 0;
}

int gpuipc_brief_begin(gpuipc_brief *b, gpuipc_err *why)
{
    int e;

    b->saved_out = b->saved_err = b->mem = -1;
    fflush(stdout);
    fflush(stderr);
    if ((b->mem = memfd_create("gpuipc-brief", MFD_CLOEXEC)) < 0)
        return gpuipc_err_set(why, -errno, "--brief: memfd_create: %s", strerror(errno));
    if ((b->saved_out = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 || (b->saved_err = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0 ||
        dup2(b->mem, 1) < 0 || dup2(b->mem, 2) < 0) {
        e = errno;
        if (b->saved_out >= 0)
            dup2(b->saved_out, 1);
        if (b->saved_err >= 0)
            dup2(b->saved_err, 2);
        close(b->mem);
        if (b->saved_out >= 0)
            close(b->saved_out);
        if (b->saved_err >= 0)
            close(b->saved_err);
        b->saved_out = b->saved_err = b->mem = -1;
        return gpuipc_err_set(why, -e, "--brief: dup2: %s", strerror(e));
    }
    return 0;
}

/* The line of text that starts at p, without its newline, into buf. */
static void copy_line(const char *p, const char *end, char *buf, size_t len)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);

    if (n >= len)
        n = len - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
}

/* Whether the step-log line at p ("  160.297 ms  producer  memfd  check
 * FAIL ...") reports a failure. */
static int is_fail_step(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p)), *stop = nl ? nl : end;
    const char *ms = memmem(p, (size_t)(stop - p), " ms  ", 5);

    return ms != NULL && memmem(ms, (size_t)(stop - ms), "  FAIL ", 7) != NULL;
}

/* "160.297 ms  producer  memfd   check    FAIL x" becomes "producer memfd
 * check: x": the time dropped, runs of spaces made one. */
static void squeeze_step(char *line)
{
    char *ms = strstr(line, " ms "), *r, *w;
    char *fail;

    if (ms == NULL)
        return;
    memmove(line, ms + 4, strlen(ms + 4) + 1);
    for (r = w = line; *r != '\0'; r++)
        if (*r != ' ' || (w > line && w[-1] != ' '))
            *w++ = *r;
    *w = '\0';
    if ((fail = strstr(line, " FAIL ")) != NULL) {
        fail[0] = ':';
        memmove(fail + 1, fail + 5, strlen(fail + 5) + 1);
    }
}

void gpuipc_brief_compose(const char *text, size_t len, int exit_code, char *out,
                          size_t out_len)
{
    const char *end = text + len, *p, *result = NULL, *own = NULL, *cause = NULL;
    const char *first = NULL;
    char verdict[GPUIPC_BRIEF_LEN + 32], why[GPUIPC_BRIEF_LEN], tail[32];
    size_t used;

    for (p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *q = p;

        while (q < end && *q == ' ')
            q++;
        if ((size_t)(end - p) >= 8 && strncmp(p, "result: ", 8) == 0)
            result = p + 8;
        else if ((size_t)(end - p) >= 13 && strncmp(p, "gpuipc_test: ", 13) == 0)
            own = p + 13;
        else if (cause == NULL && (size_t)(end - q) >= 7 && strncmp(q, "cause: ", 7) == 0)
            cause = q;
        else if (first == NULL && q < end && *q >= '0' && *q <= '9' && is_fail_step(q, end))
            first = q;
        p = nl ? nl + 1 : end;
    }
    why[0] = '\0';
    if (result != NULL) {
        copy_line(result, end, verdict, sizeof(verdict));
    } else if (own != NULL) {
        copy_line(own, end, why, sizeof(why));
        snprintf(verdict, sizeof(verdict), "%s%s",
                 strncmp(why, "SKIP: ", 6) == 0 ? ""
                 : exit_code == 2                ? "USAGE ERROR: "
                 : exit_code == 0                ? "PASS: "
                                                 : "FAIL: ",
                 why);
    } else {
        snprintf(verdict, sizeof(verdict), "%s: the run printed no result line",
                 exit_code == 0 ? "PASS" : exit_code == 77 ? "SKIP" : "FAIL");
    }
    used = (size_t)snprintf(out, out_len, "%s", verdict);
    if (first != NULL && used < out_len) {
        copy_line(first, end, why, sizeof(why));
        squeeze_step(why);
        used += (size_t)snprintf(out + used, out_len - used, " | first failure: %s", why);
    }
    if (cause != NULL && used < out_len) {
        copy_line(cause, end, why, sizeof(why));
        if (strstr(verdict, why) == NULL)
            used += (size_t)snprintf(out + used, out_len - used, " | %s", why);
    }
    snprintf(tail, sizeof(tail), "(exit %d)", exit_code);
    if (strstr(out, tail) == NULL && used < out_len)
        used += (size_t)snprintf(out + used, out_len - used, " %s", tail);
    (void)used;
}

void gpuipc_brief_end(gpuipc_brief *b, int exit_code)
{
    char line[GPUIPC_BRIEF_LEN];
    struct stat st;
    char *text = NULL;
    size_t len = 0;

    if (b->mem < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    if (fstat(b->mem, &st) == 0 && st.st_size > 0) {
        /* The end of a long run's text holds its result. */
        off_t from = st.st_size > (off_t)KEEP_MAX ? st.st_size - (off_t)KEEP_MAX : 0;

        len = (size_t)(st.st_size - from);
        text = malloc(len);
        if (text == NULL || pread(b->mem, text, len, from) != (ssize_t)len)
            len = 0;
    }
    gpuipc_brief_compose(text != NULL ? text : "", len, exit_code, line, sizeof(line));
    free(text);
    dup2(b->saved_out, 1);
    dup2(b->saved_err, 2);
    close(b->saved_out);
    close(b->saved_err);
    close(b->mem);
    b->saved_out = b->saved_err = b->mem = -1;
    gpuipc_log_line(1, line);
}
