/* SPDX-License-Identifier: Apache-2.0 */
/* inject.c: parsing of the test-only fault and sabotage hooks. */
#include "session/inject.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/step.h"

static const char *const actions[GPUIPC_FAULT_ACTIONS] = {
    "none", "exit", "kill", "hang", "corrupt", "extra-fds", "close", "wedge"};
static const char *const sabotages[GPUIPC_SABOTAGE_COUNT] = {
    "none",      "wrong-seed",   "skip-write",   "leak",       "chunk-order",
    "leak-fd",   "read-nothing", "read-partial", "flip-one",   "flip-last",
    "flip-past-4g", "offer-memfd", "offer-pipe", "offer-size", "not-dumpable", "early-event",
    "wrong-token", "import-invalid-handle", "access-invalid-value", "access-not-supported"};
#define NSABOTAGES GPUIPC_SABOTAGE_COUNT
#define SABOTAGE_NAMES "wrong-seed, skip-write, leak, chunk-order, leak-fd, read-nothing, " \
                       "read-partial, flip-one, flip-last, flip-past-4g, offer-memfd, "     \
                       "offer-pipe, offer-size, not-dumpable, early-event, wrong-token, "   \
                       "import-invalid-handle, access-invalid-value or access-not-supported"

const char *gpuipc_inject_action_name(int action)
{
    return (action > 0 && action < GPUIPC_FAULT_ACTIONS) ? actions[action] : "none";
}

static int parse_role(const char *text, size_t len, int *role)
{
    if (len == 8 && strncmp(text, "producer", 8) == 0)
        *role = GPUIPC_ROLE_PRODUCER;
    else if (len == 8 && strncmp(text, "consumer", 8) == 0)
        *role = GPUIPC_ROLE_CONSUMER;
    else
        return -EINVAL;
    return 0;
}

static int index_of(const char *const *names, int count, const char *text)
{
    int i;

    for (i = 1; i < count; i++)
        if (strcmp(names[i], text) == 0)
            return i;
    return -1;
}

static int parse_fault(const char *spec, gpuipc_inject *in, gpuipc_err *err)
{
    char step[32];
    const char *a = strchr(spec, ':');
    const char *b = a ? strchr(a + 1, ':') : NULL;
    int action;

    if (a == NULL || b == NULL || (size_t)(b - a - 1) >= sizeof(step))
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_FAULT='%s': expected "
                              "<producer|consumer>:<step>:<exit|kill|hang|corrupt|extra-fds|close|wedge>", spec);
    if (parse_role(spec, (size_t)(a - spec), &in->fault_role) < 0)
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_FAULT='%s': role must be producer or "
                              "consumer", spec);
    memcpy(step, a + 1, (size_t)(b - a - 1));
    step[b - a - 1] = '\0';
    in->fault_step = gpuipc_step_parse(step);
    if (in->fault_step < 0 || !(gpuipc_step_roles((unsigned)in->fault_step) & in->fault_role))
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_FAULT='%s': '%s' is not a step of the "
                              "%s", spec, step, gpuipc_role_name(in->fault_role));
    action = index_of(actions, GPUIPC_FAULT_ACTIONS, b + 1);
    if (action < 0)
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_FAULT='%s': action must be exit, kill, "
                              "hang, corrupt, extra-fds, close or wedge", spec);
    in->fault_action = action;
    return 0;
}

static int parse_sabotage(const char *spec, gpuipc_inject *in, gpuipc_err *err)
{
    const char *a = strchr(spec, ':');
    int what;

    if (a == NULL || parse_role(spec, (size_t)(a - spec), &in->sabotage_role) < 0)
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_SABOTAGE='%s': expected "
                              "<producer|consumer>:<what>, what being " SABOTAGE_NAMES, spec);
    what = index_of(sabotages, NSABOTAGES, a + 1);
    if (what < 0)
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_SABOTAGE='%s': expected " SABOTAGE_NAMES
                              " after the role", spec);
    if (what >= GPUIPC_SABOTAGE_IMPORT_INVALID_HANDLE &&
        in->sabotage_role != GPUIPC_ROLE_CONSUMER)
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_SABOTAGE='%s': %s is the consumer's (only "
                              "it imports)", spec, sabotages[what]);
    if (what >= GPUIPC_SABOTAGE_OFFER_MEMFD && what <= GPUIPC_SABOTAGE_EARLY_EVENT &&
        in->sabotage_role != GPUIPC_ROLE_PRODUCER)
        return gpuipc_err_set(err, -EINVAL, "GPUIPC_SABOTAGE='%s': %s is the producer's (%s)",
                              spec, sabotages[what],
                              what == GPUIPC_SABOTAGE_NOT_DUMPABLE
                                  ? "only its FDs are taken with pidfd_getfd"
                              : what == GPUIPC_SABOTAGE_EARLY_EVENT ? "only it records the event"
                                                                    : "only it makes offers");
    in->sabotage = what;
    return 0;
}

int gpuipc_inject_parse(const char *fault, const char *sabotage, gpuipc_inject *in,
                        gpuipc_err *err)
{
    int rc;

    memset(in, 0, sizeof(*in));
    if (fault != NULL && fault[0] != '\0' && (rc = parse_fault(fault, in, err)) < 0)
        return rc;
    if (sabotage != NULL && sabotage[0] != '\0' &&
        (rc = parse_sabotage(sabotage, in, err)) < 0)
        return rc;
    return 0;
}

int gpuipc_inject_fault(const gpuipc_inject *in, int role, unsigned step)
{
    if (in->fault_action != GPUIPC_FAULT_NONE && in->fault_role == role &&
        in->fault_step == (int)step)
        return in->fault_action;
    return GPUIPC_FAULT_NONE;
}

int gpuipc_inject_sabotage(const gpuipc_inject *in, int role, int what)
{
    return in->sabotage == what && in->sabotage_role == role;
}

int gpuipc_inject_flip(const gpuipc_inject *in, int role, uint64_t nwords, uint64_t first,
                       uint64_t *index)
{
    uint64_t k;

    if (in->sabotage_role != role)
        return 0;
    switch (in->sabotage) {
    case GPUIPC_SABOTAGE_FLIP_ONE:
        k = nwords / 3 + 1;
        break;
    case GPUIPC_SABOTAGE_FLIP_LAST:
        k = nwords - 1;
        break;
    case GPUIPC_SABOTAGE_FLIP_PAST_4G:
        k = (4ull << 30) / 8 + 1; /* byte offset 4 GiB + 8 */
        break;
    default:
        return 0;
    }
    if (nwords == 0 || k >= nwords)
        return -ERANGE;
    *index = first + k;
    return 1;
}

int gpuipc_inject_wrong_fd(const gpuipc_inject *in, int role, int fd)
{
    int wrong = -1, pipefd[2], e;

    if (in->sabotage_role != role || (in->sabotage != GPUIPC_SABOTAGE_OFFER_MEMFD &&
                                      in->sabotage != GPUIPC_SABOTAGE_OFFER_PIPE))
        return 0;
    if (in->sabotage == GPUIPC_SABOTAGE_OFFER_MEMFD) {
        /* A memfd of one page, neither sealed nor of the offer's size. */
        wrong = memfd_create("gpuipc_test-wrong-kind", MFD_CLOEXEC);
        if (wrong >= 0 && ftruncate(wrong, 4096) < 0) {
            e = errno;
            close(wrong);
            return -e;
        }
    } else if (pipe2(pipefd, O_CLOEXEC) == 0) {
        close(pipefd[1]);
        wrong = pipefd[0];
    }
    if (wrong < 0)
        return -errno;
    e = dup3(wrong, fd, O_CLOEXEC) < 0 ? -errno : 1;
    close(wrong);
    return e;
}

void gpuipc_inject_leak_fd(const gpuipc_inject *in, int role)
{
    if (gpuipc_inject_sabotage(in, role, GPUIPC_SABOTAGE_LEAK_FD))
        (void)open("/dev/null", O_RDONLY | O_CLOEXEC); /* kept on purpose */
}
