/* SPDX-License-Identifier: Apache-2.0 */
/* encode.c: a message as a frame: the header, then every field in a fixed
 * order, little-endian, at the length the type's table entry gives. */
#include "wire/msg.h"

#include <string.h>

#include "wire/frame.h"

typedef struct cursor {
    uint8_t *p;
} cursor;

static void put_u16(cursor *c, uint16_t v)
{
    c->p[0] = (uint8_t)v;
    c->p[1] = (uint8_t)(v >> 8);
    c->p += 2;
}

static void put_u32(cursor *c, uint32_t v)
{
    put_u16(c, (uint16_t)v);
    put_u16(c, (uint16_t)(v >> 16));
}

static void put_u64(cursor *c, uint64_t v)
{
    put_u32(c, (uint32_t)v);
    put_u32(c, (uint32_t)(v >> 32));
}

static void put_bytes(cursor *c, const void *src, size_t n)
{
    memcpy(c->p, src, n);
    c->p += n;
}

static void put_status(cursor *c, const gpuipc_status *st)
{
    put_u32(c, (uint32_t)st->code);
    put_u32(c, st->step);
    put_bytes(c, st->reason, sizeof(st->reason));
    put_u32(c, (uint32_t)st->errnum);
    put_u32(c, (uint32_t)st->cu);
    put_bytes(c, st->call, sizeof(st->call));
}

static void put_check(cursor *c, const gpuipc_check *k)
{
    put_u64(c, k->words);
    put_u64(c, k->mismatches);
    put_u64(c, k->first_bad);
    put_u64(c, k->expected);
    put_u64(c, k->got);
    put_u64(c, k->digest);
    put_u64(c, k->ns);
}

static void put_written(cursor *c, const gpuipc_written *w)
{
    put_u64(c, w->words);
    put_u64(c, w->digest);
    put_u64(c, w->ns);
}

static void put_usage(cursor *c, const gpuipc_usage_figures *u)
{
    put_u64(c, u->fds);
    put_u64(c, u->objects);
    put_u64(c, u->shmem);
    put_u64(c, u->gpu);
}

static void put_facts(cursor *c, const gpuipc_facts *f)
{
    int i;

    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        put_u64(c, f->ns[i]);
    put_u32(c, f->uid);
    put_u32(c, f->seccomp);
    put_u32(c, f->yama);
    put_u32(c, f->dumpable);
    put_u32(c, f->nofile_soft);
    put_u32(c, f->nofile_hard);
    put_u64(c, f->cap_eff);
    put_bytes(c, f->kernel, GPUIPC_FACTS_KERNEL_LEN);
    put_u32(c, f->flags);
    put_u64(c, f->shm_dev);
    put_u64(c, f->shm_size);
    put_u64(c, f->shm_avail);
    put_u32(c, f->ctl_errno);
    put_u32(c, f->uvm_errno);
    put_bytes(c, f->boot_id, GPUIPC_FACTS_BOOT_ID_LEN);
    put_u64(c, f->imex_channels);
    put_u32(c, f->imex_errno);
}

size_t gpuipc_wire_encode(const gpuipc_msg *msg, uint32_t seq, uint8_t *buf, size_t cap)
{
    cursor c = {.p = buf};
    size_t len;

    if (msg->type < 1 || msg->type > GPUIPC_MSG_TYPE_MAX)
        return 0;
    len = gpuipc_wire_type_len(msg->type);
    if (cap < GPUIPC_WIRE_HEADER_LEN + len)
        return 0;
    put_u32(&c, GPUIPC_WIRE_MAGIC);
    put_u16(&c, GPUIPC_WIRE_VERSION);
    put_u16(&c, msg->type);
    put_u32(&c, seq);
    put_u32(&c, (uint32_t)len);
    put_u16(&c, msg->nfds);
    put_u16(&c, 0);
    switch (msg->type) {
    case GPUIPC_MSG_HELLO:
        put_u32(&c, msg->u.hello.pid);
        put_u32(&c, msg->u.hello.role);
        put_u32(&c, msg->u.hello.flags);
        put_bytes(&c, msg->u.hello.nonce, GPUIPC_WIRE_NONCE_LEN);
        put_u32(&c, msg->u.hello.rank);
        put_u32(&c, msg->u.hello.peer_rank);
        put_bytes(&c, msg->u.hello.mac, GPUIPC_WIRE_MAC_LEN);
        put_facts(&c, &msg->u.hello.facts);
        break;
    case GPUIPC_MSG_AUTH:
        put_u32(&c, msg->u.auth.pid);
        put_bytes(&c, msg->u.auth.mac, GPUIPC_WIRE_MAC_LEN);
        put_facts(&c, &msg->u.auth.facts);
        break;
    case GPUIPC_MSG_BEGIN:
        put_bytes(&c, msg->u.begin.mech, GPUIPC_WIRE_NAME_LEN);
        put_u32(&c, msg->u.begin.index);
        put_u32(&c, msg->u.begin.flags);
        put_u32(&c, msg->u.begin.iters);
        put_u64(&c, msg->u.begin.size);
        put_bytes(&c, msg->u.begin.uuid, GPUIPC_UUID_LEN);
        put_bytes(&c, msg->u.begin.consumer_uuid, GPUIPC_UUID_LEN);
        break;
    case GPUIPC_MSG_READY:
        put_status(&c, &msg->u.ready);
        break;
    case GPUIPC_MSG_OFFER:
        put_status(&c, &msg->u.offer.st);
        put_u64(&c, msg->u.offer.size);
        put_u64(&c, msg->u.offer.granularity);
        put_u64(&c, msg->u.offer.seed);
        put_bytes(&c, msg->u.offer.uuid, GPUIPC_UUID_LEN);
        put_u32(&c, msg->u.offer.blob_len);
        put_bytes(&c, msg->u.offer.blob, GPUIPC_WIRE_BLOB_LEN);
        put_u32(&c, msg->u.offer.fds_total);
        put_written(&c, &msg->u.offer.wrote);
        break;
    case GPUIPC_MSG_REPORT:
        put_status(&c, &msg->u.report.st);
        put_check(&c, &msg->u.report.check);
        put_u64(&c, msg->u.report.seed);
        put_u32(&c, msg->u.report.flags);
        put_written(&c, &msg->u.report.wrote);
        break;
    case GPUIPC_MSG_END:
        put_status(&c, &msg->u.end.st);
        put_check(&c, &msg->u.end.check);
        break;
    case GPUIPC_MSG_END_ACK:
        put_status(&c, &msg->u.end_ack.st);
        put_usage(&c, &msg->u.end_ack.usage);
        break;
    case GPUIPC_MSG_BYE:
        put_u32(&c, (uint32_t)msg->u.bye.code);
        put_u32(&c, msg->u.bye.passed);
        put_u32(&c, msg->u.bye.failed);
        put_u32(&c, msg->u.bye.skipped);
        break;
    case GPUIPC_MSG_BYE_ACK:
        put_status(&c, &msg->u.bye_ack);
        break;
    case GPUIPC_MSG_PHASE:
        put_u32(&c, msg->u.phase.phase);
        put_u32(&c, msg->u.phase.flags);
        put_u32(&c, msg->u.phase.workers);
        put_u32(&c, msg->u.phase.cells);
        break;
    case GPUIPC_MSG_PHASE_ACK:
        put_status(&c, &msg->u.phase_ack.st);
        put_usage(&c, &msg->u.phase_ack.usage);
        break;
    case GPUIPC_MSG_PROBE:
        put_bytes(&c, msg->u.probe.mech, GPUIPC_WIRE_NAME_LEN);
        put_bytes(&c, msg->u.probe.uuid, GPUIPC_UUID_LEN);
        put_bytes(&c, msg->u.probe.consumer_uuid, GPUIPC_UUID_LEN);
        break;
    case GPUIPC_MSG_PROBE_ACK:
        put_status(&c, &msg->u.probe_ack);
        break;
    case GPUIPC_MSG_FDS:
        put_status(&c, &msg->u.fds.st);
        put_u32(&c, msg->u.fds.first);
        break;
    case GPUIPC_MSG_TIMES: {
        unsigned i;

        put_u32(&c, msg->u.times.series);
        put_u32(&c, msg->u.times.first);
        put_u32(&c, msg->u.times.count);
        put_u32(&c, msg->u.times.flags);
        for (i = 0; i < GPUIPC_WIRE_TIMES_MAX; i++)
            put_u64(&c, msg->u.times.v[i]);
        break;
    }
    }
    return (size_t)(c.p - buf);
}
