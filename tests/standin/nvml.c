/* SPDX-License-Identifier: Apache-2.0 */
/* nvml.c: a stand-in for the driver's libnvidia-ml.so.1, built by the tests
 * as build/tests/standin/libnvidia-ml.so.1 and found before the real one
 * through LD_LIBRARY_PATH (gpu/nvml.c loads the bare soname). It answers
 * the GPU fabric calls from a file, so that the plan by NVLink domain runs
 * end to end on a machine without the hardware (tests/ranks.sh).
 *
 * The file is named by GPUIPC_STANDIN_NVML; each line is
 *   RANK STATE STATUS CLUSTER CLIQUE HEALTH SUMMARY
 * RANK a rank number or "*" (any rank; the first line that fits wins), the
 * rank being PMIX_RANK's, else OMPI_COMM_WORLD_RANK's; STATE 0 to 3 (or 9,
 * a state no driver has); STATUS an NVML return code; CLUSTER 32 hex
 * digits, or "0" for all zero; CLIQUE a number; HEALTH the mask in hex;
 * SUMMARY -1 to 3, where -1 plays an older driver that refuses version 3 of
 * the fabric info. Lines starting with '#' are comments. A rank with no
 * line, or no file, gets NVML_ERROR_NOT_SUPPORTED from the fabric call.
 *
 * Every GPU it is asked of is one device; process lists are not supported
 * (the leak check's second opinion says so). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK 0
#define NOT_SUPPORTED 3
#define INVALID_ARGUMENT 2
#define VERSION_MISMATCH 25

typedef struct standin_fabric {
    unsigned int version;
    unsigned char cluster[16];
    int status;
    unsigned int clique;
    unsigned char state;
    unsigned int health;
    unsigned char summary; /* version 3 only */
} standin_fabric;

static int device_token;

/* This process's rank as the launcher said it, or -1. */
static long my_rank(void)
{
    const char *r = getenv("PMIX_RANK");

    if (r == NULL)
        r = getenv("OMPI_COMM_WORLD_RANK");
    return r != NULL ? strtol(r, NULL, 10) : -1;
}

static int hex_nibble(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* This rank's line of the file into f; returns 1 if there is one. */
static int my_line(standin_fabric *f, int *summary)
{
    const char *path = getenv("GPUIPC_STANDIN_NVML");
    char line[256], rank[16], cluster[40];
    unsigned int state, clique, health;
    int status, found = 0, i;
    long me = my_rank();
    FILE *in;

    if (path == NULL || (in = fopen(path, "re")) == NULL)
        return 0;
    while (!found && fgets(line, sizeof(line), in) != NULL) {
        if (line[0] == '#' ||
            sscanf(line, "%15s %u %d %39s %u %x %d", rank, &state, &status, cluster, &clique,
                   &health, summary) != 7)
            continue;
        if (strcmp(rank, "*") != 0 && strtol(rank, NULL, 10) != me)
            continue;
        memset(f->cluster, 0, sizeof(f->cluster));
        for (i = 0; strcmp(cluster, "0") != 0 && i < 16; i++)
            f->cluster[i] = (unsigned char)(hex_nibble(cluster[2 * i]) << 4 |
                                            hex_nibble(cluster[2 * i + 1]));
        f->state = (unsigned char)state;
        f->status = status;
        f->clique = clique;
        f->health = health;
        found = 1;
    }
    fclose(in);
    return found;
}

int nvmlInit_v2(void)
{
    return OK;
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = 1;
    return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **dev)
{
    if (index != 0)
        return INVALID_ARGUMENT;
    *dev = &device_token;
    return OK;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
    (void)uuid;
    *dev = &device_token;
    return OK;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n, void *infos)
{
    (void)dev;
    (void)n;
    (void)infos;
    return NOT_SUPPORTED;
}

const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case OK:
        return "Success";
    case NOT_SUPPORTED:
        return "Not Supported";
    case VERSION_MISMATCH:
        return "Argument version mismatch";
    default:
        return "Unknown Error (stand-in)";
    }
}

int nvmlDeviceGetGpuFabricInfoV(void *dev, standin_fabric *out)
{
    standin_fabric f;
    unsigned int version = out->version >> 24;
    int summary = -1;

    (void)dev;
    memset(&f, 0, sizeof(f));
    if (!my_line(&f, &summary))
        return NOT_SUPPORTED;
    if (version == 3 && summary < 0)
        return VERSION_MISMATCH; /* an older driver's */
    if (version != 2 && version != 3)
        return VERSION_MISMATCH;
    f.version = out->version;
    f.summary = (unsigned char)(summary < 0 ? 0 : summary);
    /* Version 2 ends before the summary. */
    memcpy(out, &f, version == 3 ? sizeof(f) : offsetof(standin_fabric, summary));
    return OK;
}
