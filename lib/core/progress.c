/* SPDX-License-Identifier: Apache-2.0 */
/* progress.c: the live progress line (progress.h). */
#include "core/progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/clock.h"

static struct {
    int on;            /* allowed, and standard error is a terminal */
    const char *what, *units;
    uint64_t total, done;
    uint64_t t0, drawn; /* start, and when the line was last drawn */
    int active, shown;
    int dumb;          /* TERM is unset or "dumb": no escape sequences, spaces erase */
    size_t last;       /* the length of the line last drawn, '\r' included */
} g;

static void put(const char *s, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = write(2, s + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

void gpuipc_progress_enable(int allowed)
{
    const char *term = getenv("TERM");

    g.on = allowed && isatty(2);
    g.dumb = term == NULL || term[0] == '\0' || strcmp(term, "dumb") == 0;
}

/* Erases the line drawn last: an escape sequence, or spaces on a terminal
 * that may not know one. */
static void erase(void)
{
    char blanks[258];
    size_t n = g.last < sizeof(blanks) - 1 ? g.last : sizeof(blanks) - 1;

    if (!g.dumb) {
        put("\r\033[K", 4);
        return;
    }
    memset(blanks, ' ', sizeof(blanks));
    blanks[0] = '\r';
    blanks[n] = '\r';
    put(blanks, n + 1);
}

void gpuipc_progress_format(char *buf, unsigned long len, const char *what, const char *units,
                            uint64_t done, uint64_t total, uint64_t elapsed_ns)
{
    double s = (double)elapsed_ns / 1e9;
    int used;

    if (done > total)
        done = total;
    used = snprintf(buf, len, "%s: %llu of %llu %s (%.0f%%), %.1f s", what,
                    (unsigned long long)done, (unsigned long long)total, units,
                    total ? 100.0 * (double)done / (double)total : 0.0, s);
    if (used > 0 && (unsigned long)used < len && done > 0 && done < total)
        snprintf(buf + used, len - (unsigned long)used, ", about %.0f s left",
                 s * (double)(total - done) / (double)done);
}

void gpuipc_progress_clear(void)
{
    if (!g.shown)
        return;
    erase();
    g.shown = 0;
}

static void draw(uint64_t now)
{
    struct winsize ws;
    char line[256];
    size_t n;

    gpuipc_progress_format(line + 1, sizeof(line) - 5, g.what, g.units, g.done, g.total,
                           now - g.t0);
    line[0] = '\r';
    n = strlen(line);
    /* One row only: a line that wrapped could not be rewritten in place. */
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 && n > ws.ws_col) {
        n = ws.ws_col; /* '\r' and ws_col - 1 characters */
        line[n] = '\0';
    }
    if (g.dumb) {
        /* Spaces over what a longer line left. */
        while (n < g.last && n + 1 < sizeof(line))
            line[n++] = ' ';
        put(line, n);
    } else {
        memcpy(line + n, "\033[K", 3); /* erase what a longer line left */
        put(line, n + 3);
    }
    g.last = n;
    g.shown = 1;
    g.drawn = now;
}

void gpuipc_progress_begin(const char *what, const char *units, uint64_t total)
{
    gpuipc_progress_end();
    if (!g.on)
        return;
    g.what = what;
    g.units = units;
    g.total = total;
    g.done = 0;
    g.t0 = gpuipc_clock_ns();
    g.drawn = 0;
    g.active = 1;
}

void gpuipc_progress_update(uint64_t done)
{
    uint64_t now;

    if (!g.active)
        return;
    g.done = done;
    now = gpuipc_clock_ns();
    if (now - g.t0 < GPUIPC_PROGRESS_AFTER_NS)
        return;
    if (g.shown && now - g.drawn < GPUIPC_PROGRESS_EVERY_NS)
        return;
    draw(now);
}

void gpuipc_progress_end(void)
{
    gpuipc_progress_clear();
    g.active = 0;
}
