/* SPDX-License-Identifier: Apache-2.0 */
/* containers.h: the two-terminal pair run across the boundaries containers
 * put between processes (namespaces, a bind-mounted socket directory), what
 * the no-GPU suite and the GPU suite share: the splits, running one, reading
 * the producer's summary back, and the table of mechanism by split. */
#ifndef GPUIPC_TESTS_CONTAINERS_H
#define GPUIPC_TESTS_CONTAINERS_H

#include <stddef.h>
#include <stdio.h>

#include "run/pair.h"

#define CT_ROWS 24

enum ct_sock {
    CT_SOCK_FILE,     /* a socket file in a directory of the test's */
    CT_SOCK_ABSTRACT, /* @name */
    CT_SOCK_BIND,     /* the consumer reaches the file through a bind mount of its
                       * directory, in a mount namespace of its own */
};

typedef struct ct_split {
    const char *name;               /* a column of the table */
    const char *what;               /* one line: what separates the two */
    const char *const *pwrap;       /* the producer's wrapper (unshare ...), or NULL */
    const char *const *cwrap;       /* the consumer's */
    int sock;                       /* enum ct_sock */
    int no_session;                 /* the consumer cannot reach the producer at all */
} ct_split;

extern const ct_split ct_splits[];
extern const size_t ct_nsplits;

/* One summary row of the producer. */
typedef struct ct_row {
    char mech[32];
    char result[8];   /* PASS, FAIL or SKIP */
    char reason[512]; /* for FAIL and SKIP */
    char cause[512];  /* "cause: ...; fix: ...", or "" */
} ct_row;

typedef struct ct_run {
    gpuipc_pair pair;
    ct_row rows[CT_ROWS];
    size_t nrows;
} ct_run;

/* Whether this process may make namespaces with unshare(1): 1, or 0 with
 * why (not root, unshare missing, refused in this container). */
int ct_unshare_works(char *why, size_t len);

/* Whether split s can be made here: root, and each of its unshare(1)
 * wrappers runs (a chroot refuses new user namespaces, for one). 1, or 0
 * with why. */
int ct_split_works(const ct_split *s, char *why, size_t len);

/* Runs prog as a --serve/--connect pair across split s, over the
 * mechanisms in only, with --timeout timeout (both sides) and --size 1M
 * unless size is given; reads the producer's summary rows into out.
 * Returns 0, or -1 with why if the pair could not be started. */
int ct_run_split(const char *prog, const ct_split *s, const char *only, const char *size,
                 double timeout, ct_run *out, char *why, size_t len);

/* Reads the producer's summary rows of r->pair into r->rows. */
void ct_read_rows(ct_run *r);

/* The row of mech in r, or NULL. */
const ct_row *ct_row_of(const ct_run *r, const char *mech);

/* The exit code of side i (0 producer, 1 consumer), or -1 if it did not exit. */
int ct_exit(const ct_run *r, int i);

/* Writes the markdown table of mechanisms (rows) by splits (columns) for
 * runs[0..nsplits), then a numbered list of the reasons and causes of every
 * cell that is not PASS, each written once. */
void ct_table(FILE *f, const char *const *mechs, size_t nmechs, const ct_run *runs);

#endif
