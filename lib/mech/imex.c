/* SPDX-License-Identifier: Apache-2.0 */
/* imex.c: finding an IMEX channel for FABRIC handles. */
#include "mech/imex.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int listed(const char *devices_path)
{
    FILE *f = fopen(devices_path, "re");
    char line[256];
    int found = 0;

    if (f == NULL)
        return -errno;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char name[128];
        int major;

        found = sscanf(line, "%d %127s", &major, name) == 2 &&
                strcmp(name, "nvidia-caps-imex-channels") == 0;
    }
    fclose(f);
    return found;
}

int gpuipc_imex_check(const char *devices_path, const char *channel_dir, gpuipc_err *why)
{
    struct dirent *de;
    int rc = listed(devices_path), channels = 0;
    DIR *d;

    if (rc < 0)
        return gpuipc_err_set(why, -ENOTSUP, "cannot read %s: %s", devices_path, strerror(-rc));
    if (rc == 0)
        return gpuipc_err_set(why, -ENOTSUP, "%s lists no nvidia-caps-imex-channels: this "
                              "driver has no IMEX support (FABRIC handles need a driver with "
                              "IMEX, normally on NVLink multi-node systems)", devices_path);
    d = opendir(channel_dir);
    if (d == NULL)
        return gpuipc_err_set(why, -ENOTSUP, "%s: %s: no IMEX channel was created (the "
                              "nvidia-imex service creates them, or: mknod %s/channel0 c "
                              "<major> 0)", channel_dir, strerror(errno), channel_dir);
    while ((de = readdir(d)) != NULL) {
        char path[512];

        if (strncmp(de->d_name, "channel", 7) != 0)
            continue;
        channels++;
        snprintf(path, sizeof(path), "%s/%s", channel_dir, de->d_name);
        if (access(path, R_OK | W_OK) == 0) {
            closedir(d);
            return 0;
        }
    }
    closedir(d);
    if (channels == 0)
        return gpuipc_err_set(why, -ENOTSUP, "%s holds no channel file: no IMEX channel was "
                              "granted to this machine or container", channel_dir);
    return gpuipc_err_set(why, -ENOTSUP, "none of the %d channel files in %s can be opened "
                          "by this user: grant access to one (a container must be given it)",
                          channels, channel_dir);
}
