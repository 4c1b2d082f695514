/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_wire.c: libFuzzer target for the message decoder, with the control
 * message path: gpuipc_wire_take() gets the frame bytes together with a
 * msghdr whose control data carries real FDs (and, if asked, a foreign
 * control message) and the receive flags, as recvmsg() would return them.
 *
 * Input: byte 0 flags (bit 0 MSG_CTRUNC, bit 1 MSG_TRUNC, bit 2 an
 * SCM_CREDENTIALS header too, bit 3 POLLHUP), byte 1 how many FDs arrive
 * (up to 253), bytes 2-3 the accepted types (a bit mask; 0: any), byte 4 the
 * step; the rest is the frame.
 *
 * Besides the sanitizers, it checks what the wire promises: every FD that
 * arrived is either handed to the caller (on success, exactly msg->nfds of
 * them) or closed, never both and never anything else; and a frame that
 * decodes encodes back to the same bytes. Built by make fuzz. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/step.h"
#include "wire/wire.h"

#define HEAD 5

static int is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GPUIPC_WIRE_MAX_FDS * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
    } ctrl;
    int sent[GPUIPC_WIRE_MAX_FDS], fds[GPUIPC_WIRE_MAX_FDS];
    uint8_t frame[GPUIPC_WIRE_MAX_MSG];
    unsigned nsent, accept, i, j;
    struct cmsghdr *cm;
    struct msghdr mh;
    gpuipc_wire *w;
    gpuipc_msg msg;
    gpuipc_err err;
    size_t len;
    int rc;

    if (size < HEAD || size - HEAD > sizeof(frame))
        return 0;
    nsent = data[1] % (GPUIPC_WIRE_MAX_FDS + 1);
    accept = ((unsigned)data[2] | (unsigned)data[3] << 8) & 0x0ffeu;
    len = size - HEAD;
    memcpy(frame, data + HEAD, len);

    memset(&mh, 0, sizeof(mh));
    memset(&ctrl, 0, sizeof(ctrl));
    mh.msg_control = ctrl.buf;
    mh.msg_controllen = 0;
    if (nsent > 0 || (data[0] & 4)) {
        mh.msg_controllen = sizeof(ctrl.buf);
        cm = CMSG_FIRSTHDR(&mh);
        if (nsent > 0) {
            for (i = 0; i < nsent; i++) {
                sent[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (sent[i] < 0)
                    abort();
            }
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(nsent * sizeof(int));
            memcpy(CMSG_DATA(cm), sent, nsent * sizeof(int));
            cm = CMSG_NXTHDR(&mh, cm);
        }
        if ((data[0] & 4) && cm != NULL) {
            struct ucred cred = {getpid(), getuid(), getgid()};

            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_CREDENTIALS;
            cm->cmsg_len = CMSG_LEN(sizeof(cred));
            memcpy(CMSG_DATA(cm), &cred, sizeof(cred));
            cm = CMSG_NXTHDR(&mh, cm);
        }
        mh.msg_controllen = cm == NULL ? sizeof(ctrl.buf)
                                       : (size_t)((char *)cm - ctrl.buf);
    }
    mh.msg_flags = ((data[0] & 1) ? MSG_CTRUNC : 0) | ((data[0] & 2) ? MSG_TRUNC : 0);

    if (gpuipc_wire_open(&w, -1, "producer", &err) < 0)
        abort();
    for (i = 0; i < GPUIPC_WIRE_MAX_FDS; i++)
        fds[i] = -2;
    rc = gpuipc_wire_take(w, frame, len, &mh, (data[0] & 8) ? POLLHUP : 0, accept, &msg, fds,
                          data[4] % GPUIPC_STEP_COUNT, &err);

    if (rc == 0) {
        uint8_t again[GPUIPC_WIRE_MAX_MSG];
        size_t n;

        /* Exactly the FDs that arrived, in order, now the caller's. */
        if (msg.nfds != nsent)
            abort();
        for (i = 0; i < nsent; i++)
            if (fds[i] != sent[i] || !is_open(fds[i]))
                abort();
        n = gpuipc_wire_encode(&msg, msg.seq, again, sizeof(again));
        if (n != len || memcmp(again, frame, len) != 0)
            abort(); /* a frame that decodes must be the canonical encoding */
        if (gpuipc_wire_broken(w) != NULL)
            abort();
        for (i = 0; i < nsent; i++)
            close(sent[i]);
    } else {
        /* Every FD that arrived is closed; none is handed over. */
        if (err.msg[0] == '\0' || gpuipc_wire_broken(w) == NULL) {
            if (rc != -EMFILE)
                abort();
        }
        for (i = 0; i < nsent; i++)
            if (is_open(sent[i]))
                abort();
        for (j = 0; j < GPUIPC_WIRE_MAX_FDS; j++)
            if (fds[j] >= 0)
                for (i = 0; i < nsent; i++)
                    if (fds[j] == sent[i])
                        abort();
    }
    gpuipc_wire_close(w);
    return 0;
}
