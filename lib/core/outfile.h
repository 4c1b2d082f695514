/* SPDX-License-Identifier: Apache-2.0 */
/* outfile.h: the one way the program writes a file it is given (--json
 * FILE, and any output file to come). It runs as root, so the path may name
 * a device node, a FIFO, a symbolic link, a directory or another program's
 * file, now or by the time the run ends:
 * - before the run, PATH must be absent (in a directory that exists and can
 *   be written) or a regular file, looked at without following a symbolic
 *   link; anything else is refused, with what it is;
 * - the content goes to a new file in PATH's directory (the directory held
 *   open from the check), created with O_CREAT|O_EXCL|O_NOFOLLOW under a
 *   name of 128 random bits (.PATH.<32 hex digits>.tmp), so nothing planted
 *   there is followed or reused, and no name can be planted beforehand;
 *   it then takes PATH's place by a rename that never replaces anything but
 *   a regular file (renameat2 NOREPLACE, or EXCHANGE and a look at what it
 *   displaced, which is put back if it is not a regular file);
 * - where the directory cannot be written but PATH is a regular file with
 *   one link (a file mounted into a container), it is written in place,
 *   after fstat confirms that what was opened is such a file.
 * With err NULL, gpuipc_outfile_open, _commit and _abort make system calls
 * only, no stdio or malloc: a watchdog may use them while another thread
 * holds those locks. */
#ifndef GPUIPC_OUTFILE_H
#define GPUIPC_OUTFILE_H

#include <sys/types.h>

#include "core/err.h"

#define GPUIPC_OUTFILE_NAME_MAX 256

typedef struct gpuipc_outfile {
    int dirfd;      /* PATH's directory (O_PATH), held from the check; -1 before */
    int in_place;   /* written in place (the directory cannot be written) */
    dev_t dev;      /* in place: the file the check saw */
    ino_t ino;
    int replaces;   /* a regular file was there: its mode and owner are kept */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    char base[GPUIPC_OUTFILE_NAME_MAX]; /* PATH's last component */
    char tmp[GPUIPC_OUTFILE_NAME_MAX];  /* the temporary name in use, "" for none */
} gpuipc_outfile;

/* Looks at path and prepares f. Returns 0, or a negative errno with err
 * saying what path is and why it is refused, without the path itself (the
 * caller puts it in front): a usage error for the caller. */
int gpuipc_outfile_check(gpuipc_outfile *f, const char *path, gpuipc_err *err);

/* Opens the file the content goes to. Returns an FD (the caller writes and
 * closes it, then calls _commit or _abort), or a negative errno. */
int gpuipc_outfile_open(gpuipc_outfile *f, gpuipc_err *err);

/* Puts the written file in PATH's place. Returns 0 or a negative errno (the
 * temporary file is then removed). */
int gpuipc_outfile_commit(gpuipc_outfile *f, gpuipc_err *err);

/* Makes the regular file at PATH claim nothing, where its new content
 * cannot be written (no FD to spare, no inode or space for a temporary
 * file): it is emptied in place (opened without following a link, checked
 * to be the regular file of one link just looked at), or, where it cannot be
 * opened, its name is removed (never in place: the directory cannot be
 * written there). Nothing at PATH is fine. Returns 0, or a negative errno
 * (the file is as it was). System calls only. */
int gpuipc_outfile_void(gpuipc_outfile *f);

/* The same for path itself, where no FD was free to check it with
 * (gpuipc_outfile_check failed with EMFILE or ENFILE): the regular file of
 * one link at path, looked at without following a symbolic link, is
 * emptied if an FD can be had for it, else its name is removed. Nothing
 * at path is fine; anything else there is left as it is. Returns 0, or a
 * negative errno (the file is as it was). System calls only. */
int gpuipc_outfile_void_path(const char *path);

/* Removes the temporary file, if any: the content is not to be kept. */
void gpuipc_outfile_abort(gpuipc_outfile *f);

/* Lets go of the directory. */
void gpuipc_outfile_close(gpuipc_outfile *f);

/* Test-only: when set, _commit calls this instead of renameat2(2) (same
 * arguments, the same directory FD for both names), so that a test can be a
 * file system without renameat2's flags. */
extern int (*gpuipc_outfile_renameat2_hook)(int dirfd, const char *from, const char *to,
                                            unsigned flags);

#endif
