/* SPDX-License-Identifier: Apache-2.0 */
/* status.h: the one table of statuses and exit statuses: the word each has
 * in the text the program prints, its name in the files machines read (the
 * result document, the Prometheus textfile, JUnit) and what an exit status
 * means. The codes are core/err.h's. */
#ifndef GPUIPC_STATUS_H
#define GPUIPC_STATUS_H

/* A scenario's or a cell's status, as GPUIPC_PASS, _FAIL, _SKIP, _STOPPED,
 * or -1 (not run): "PASS", "FAIL", "SKIP", "STOPPED", "NOT RUN". */
const char *gpuipc_status_word(int status);

/* The same in the files machines read: "pass", "fail", "skip", "stopped",
 * "not run". */
const char *gpuipc_status_name(int status);

/* Whether status is one of the table's: PASS, FAIL, SKIP, STOPPED or -1
 * (not run). */
int gpuipc_status_known(int status);

/* The one rule that judges a set of results by their counts: FAIL where
 * one failed, else STOPPED where one was stopped, else PASS where one
 * passed, else SKIP (nothing ran that could pass or fail). */
int gpuipc_status_verdict(unsigned long passed, unsigned long failed, unsigned long stopped);

/* An exit status's verdict word: "PASS" (0), "FAIL" (1, and any status
 * this table does not name), "USAGE ERROR" (2), "SKIP" (77), "STOPPED"
 * (above 128: stopped by a signal). */
const char *gpuipc_exit_word(int code);

/* What an exit status means, in words: "all that ran passed", ...,
 * "stopped by SIGINT"; "unknown" for a status this table does not name. */
const char *gpuipc_exit_meaning(int code);

#endif
