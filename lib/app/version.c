/* SPDX-License-Identifier: Apache-2.0 */
/* version.c: the commit the program was built from (version.h). The
 * Makefile writes it into build/gen/commit.h, from git or, in a tree without
 * .git, from .commit as git archive stamped it. */
#include "app/version.h"

#include "commit.h"

const char *gpuipc_version_commit(void)
{
    return GPUIPC_COMMIT;
}
