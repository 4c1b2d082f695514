/* SPDX-License-Identifier: Apache-2.0 */
/* imex_facts.h: what this node's IMEX daemon says of itself and of its
 * domain, as data: mech/imex_ctl asks nvidia-imex-ctl and fills it; the
 * outputs (run/result_doc, --list) say it. */
#ifndef GPUIPC_IMEX_FACTS_H
#define GPUIPC_IMEX_FACTS_H

#define GPUIPC_IMEX_MAX_NODES 128 /* an NVL72 rack has 18 trays; room for more */

typedef struct gpuipc_imex_daemon {
    int tool;       /* 1 the tool exists and is executable, 0 not installed */
    int ready;      /* 1 -q said READY, 0 it said something else, -1 not known */
    char state[32]; /* -q's answer, its first line, printable ASCII only ("" if none) */
    int nnodes;     /* nodes -N -j listed, -1 not known */
    struct {
        char addr[64];   /* the node's "host": the address nodes_config.cfg lists */
        char host[64];   /* its "hostName" where the tool gave one, else "" */
        char status[32]; /* its "status": READY, UNAVAILABLE, ... */
    } node[GPUIPC_IMEX_MAX_NODES];
    char error[200]; /* why an answer is missing: timeout, exit status, bad output */
} gpuipc_imex_daemon;

#endif
