/* SPDX-License-Identifier: Apache-2.0 */
/* phases.h: the forked mode's phases, a phase's cells at once (phases.c). */
#ifndef GPUIPC_APP_PHASES_H
#define GPUIPC_APP_PHASES_H

struct gpuipc_producer_run;

/* Whether run's cells across several GPUs run in phases: the forked
 * one-shot run over two GPUs or more, without --pairs, --repeat, --bench,
 * Check's filters (CK_RUN_SUITE, ...) or GPUIPC_PHASES=off. */
int gpuipc_app_phases_wanted(const struct gpuipc_producer_run *run);

/* Plays every phase of run's cells that can run (each GPU alone, then every
 * ordered pair; host memory and a destructive mechanism aside), a phase's
 * cells at once, and marks them in run->played. Returns 0, or a negative
 * errno if the session's connection broke (said). Cells it did not play
 * run one at a time after it, as without phases. */
int gpuipc_app_play_phases(struct gpuipc_producer_run *run);

#endif
