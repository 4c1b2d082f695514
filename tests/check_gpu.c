/* SPDX-License-Identifier: Apache-2.0 */
/* check_gpu.c: the GPU suite, run on a machine with a GPU (make check-gpu):
 * ./gpuipc_test with the default and a 4 GiB size, each sabotage on the VMM
 * path, a consumer killed with SIGKILL in the middle of a GPU scenario, a
 * driver call that never returns (ended by --deadline) and Ctrl-C in a soak.
 * Exits 77 with the reason if this machine has no GPU. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include <check.h>
#include <dirent.h>
#include <fcntl.h>

#include "run/pair.h"
#include "containers.h"
#include "helpers.h"
#include "jschema.h"

static th_run run;

#define OUT_HAS(text) ck_assert_msg(strstr(run.out, (text)) != NULL, "output lacks '%s':\n%s", \
                                    (text), run.out)

/* Whether an --only list names host-memory mechanisms alone (memfd and
 * its kin), which use no GPU and so take no --device. */
static int host_only(const char *list)
{
    const char *p = list;

    while (*p != '\0') {
        if (strncmp(p, "memfd", 5) != 0)
            return 0;
        p += strcspn(p, ",");
        p += *p == ',';
    }
    return 1;
}

/* Runs the program with args on GPU 0 alone (--device 0 put in front,
 * unless args choose the GPUs themselves or cannot take it): the tests
 * below hold one GPU's counts and rows. The runs over every GPU are
 * spawn_all's. */
static void spawn(const char *const *args, const char *const *env, double timeout_s,
                  th_line_fn on_line)
{
    const char *pinned[40] = {"--device", "0"};
    size_t i, n = 2;
    int own = 0;

    for (i = 0; args[i] != NULL; i++)
        own |= strcmp(args[i], "--pairs") == 0 || strcmp(args[i], "--device") == 0 ||
               strcmp(args[i], "--connect") == 0 ||
               (strcmp(args[i], "--only") == 0 && args[i + 1] != NULL &&
                host_only(args[i + 1]));
    for (i = 0; args[i] != NULL && n < 39; i++)
        pinned[n++] = args[i];
    pinned[n] = NULL;
    ck_assert_int_eq(th_spawn(&run, own ? args : pinned, env, timeout_s, 5.0, on_line, NULL),
                     0);
}

/* Runs the program with args as given: every GPU by default. */
static void spawn_all(const char *const *args, const char *const *env, double timeout_s)
{
    ck_assert_int_eq(th_spawn(&run, args, env, timeout_s, 5.0, NULL, NULL), 0);
}

/* The mechanisms that run on a single GPU with a POSIX-FD driver (the
 * H100 machine): each must pass both ways in the default run. */
static const char *const runnable[] = {"vmm",           "vmm-pidfd",  "vmm-chunks",
                                       "vmm-compressible", "vmm-host-numa", "vmm-alias",
                                       "vmm-readonly",  "legacy-ipc", "mempool-ipc",
                                       "ipc-event"};
#define N_RUNNABLE (int)(sizeof(runnable) / sizeof(runnable[0]))

/* Those whose consumer writes (all but vmm-readonly), for the sabotages that
 * need a consumer write to spoil. */
static const char *const writers[] = {"vmm",           "vmm-pidfd",  "vmm-chunks",
                                      "vmm-compressible", "vmm-host-numa", "vmm-alias",
                                      "legacy-ipc",    "mempool-ipc", "ipc-event"};
#define N_WRITERS (int)(sizeof(writers) / sizeof(writers[0]))

/* The first two spoil the producer's bytes, the last two the consumer's. */
static const char *const sabotages[] = {
    "GPUIPC_SABOTAGE=producer:skip-write",
    "GPUIPC_SABOTAGE=producer:wrong-seed",
    "GPUIPC_SABOTAGE=consumer:skip-write",
    "GPUIPC_SABOTAGE=consumer:wrong-seed",
};
#define N_SABOTAGES (int)(sizeof(sabotages) / sizeof(sabotages[0]))

/* Whether the summary has the row of mech that goes on with rest: the first
 * column is as wide as the run's longest name, so any run of spaces may
 * stand between them. */
static int has_row(const char *mech, const char *rest)
{
    size_t len = strlen(mech);
    const char *p;

    for (p = run.out; (p = strstr(p, "\n  ")) != NULL; p++) {
        const char *q = p + 3;

        if (strncmp(q, mech, len) != 0 || q[len] != ' ')
            continue;
        for (q += len; *q == ' '; q++)
            ;
        if (strncmp(q, rest, strlen(rest)) == 0)
            return 1;
    }
    return 0;
}

/* The counts of the default run on one GPU of this machine: fabric passes
 * where this process can open an IMEX channel, and is skipped where not;
 * vmm-offset is skipped by this driver either way. */
static const char *one_gpu_counts(void)
{
    DIR *d = opendir("/dev/nvidia-caps-imex-channels");
    struct dirent *e;
    int open_one = 0;

    while (d != NULL && !open_one && (e = readdir(d)) != NULL) {
        char path[320];
        int fd;

        if (strncmp(e->d_name, "channel", 7) != 0)
            continue;
        snprintf(path, sizeof(path), "/dev/nvidia-caps-imex-channels/%s", e->d_name);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
            open_one = 1;
            close(fd);
        }
    }
    if (d != NULL)
        closedir(d);
    return open_one ? "PASS: 11 passed, 0 failed, 1 skipped" : "PASS: 10 passed, 0 failed, 2 skipped";
}

static void out_has_row(const char *mech, const char *rest)
{
    ck_assert_msg(has_row(mech, rest), "output lacks the row '%s ... %s':\n%s", mech, rest,
                  run.out);
}

START_TEST(test_gpu_default_run_passes_both_ways)
{
    const char *args[] = {NULL};
    int i;

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    for (i = 0; i < N_RUNNABLE; i++)
        out_has_row(runnable[i], "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    OUT_HAS("kernels self-tested");
    OUT_HAS("consumer: exited 0");
    ck_assert_int_eq(run.leftover, 0);
    /* vmm-offset passes where the driver maps at an offset, else is a skip. */
    ck_assert_msg(has_row("vmm-offset", "PASS   64 MiB     0/8388608 bad") ||
                  has_row("vmm-offset", "SKIP"), "vmm-offset:\n%s", run.out);
}
END_TEST

/* A non-zero cuMemMap offset into an imported handle: verified where the
 * driver allows it, else a skip that names the refusal and the driver. */
START_TEST(test_gpu_offset_passes_or_names_the_refusal)
{
    const char *args[] = {"--only", "vmm,vmm-offset", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    if (has_row("vmm-offset", "PASS")) {
        OUT_HAS("mapped from offset 2 MiB of the allocation");
        return;
    }
    out_has_row("vmm-offset", "SKIP");
    OUT_HAS("unsupported by driver ");
    OUT_HAS("into an imported handle returns CUDA_ERROR_NOT_SUPPORTED");
}
END_TEST

/* The capability report on a GPU machine: valid JSON naming the driver,
 * each device's granularity and attributes, and the verdicts. */
START_TEST(test_gpu_list_json_describes_the_devices)
{
    const char *args[] = {"--list", "--json", NULL};
    char why[160];

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(js_valid(run.out, why, sizeof(why)), "%s:\n%s", why, run.out);
    OUT_HAS("\"cuda\": true");
    OUT_HAS("\"granularity_posix_fd\": {");
    OUT_HAS("\"VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED\": 1");
    OUT_HAS("\"MULTICAST_SUPPORTED\": ");
    OUT_HAS("\"name\": \"vmm\",");
}
END_TEST

/* --pairs all: with two or more GPUs, vmm passes both ways between every
 * ordered pair; with one, it is a usage error that says so. */
START_TEST(test_gpu_pairs_pass_or_need_two_gpus)
{
    const char *args[] = {"--pairs", "all", NULL};

    spawn(args, NULL, 120, NULL);
    if (th_exited(&run, 2)) {
        OUT_HAS("--pairs: this machine has 1 GPU; pairs need two or more");
        return;
    }
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    out_has_row("vmm 0->1", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    out_has_row("vmm 1->0", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    OUT_HAS("read and written by this process's GPU over the peer path");
    OUT_HAS("across the link, GPU 1 read ");
    OUT_HAS("; link: ");
}
END_TEST

/* --min-gbps: no link moves 100000 GB/s, so every pair fails, named, with
 * the link's cause; with one GPU, --pairs is a usage error as above. */
START_TEST(test_gpu_min_gbps_fails_a_slow_pair)
{
    const char *args[] = {"--pairs", "all", "--min-gbps", "100000", NULL};

    spawn(args, NULL, 120, NULL);
    if (th_exited(&run, 2)) {
        OUT_HAS("--pairs: this machine has 1 GPU; pairs need two or more");
        return;
    }
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    out_has_row("vmm 0->1", "FAIL");
    OUT_HAS("GPU pair 0->1: ");
    OUT_HAS("below --min-gbps 100000");
    OUT_HAS("cause: the link between the two GPUs moves less than --min-gbps 100000");
}
END_TEST

/* --brief and --json on the GPU: one line saying the counts, and a
 * document that holds against the schema and names the device. */
START_TEST(test_gpu_brief_line_and_result_document)
{
    char path[64], why[512];
    const char *args[] = {"--brief", "--json", path, NULL};
    size_t n;
    char *schema_text = th_read_file("docs/result.schema.json", &n), *text;
    jnode *schema, *doc;
    const char *nl;

    snprintf(path, sizeof(path), "/tmp/gpuipc-gpu-doc-%d.json", (int)getpid());
    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    nl = strchr(run.out, '\n');
    ck_assert_msg(nl != NULL && nl[1] == '\0', "not one line:\n%s", run.out);
    ck_assert_msg(strncmp(run.out, one_gpu_counts(), 36) == 0, "%s",
                  run.out);
    ck_assert_ptr_nonnull(schema_text);
    ck_assert_ptr_nonnull(text = th_read_file(path, &n));
    schema = js_parse(schema_text, why, sizeof(why));
    doc = js_parse(text, why, sizeof(why));
    ck_assert_msg(doc != NULL && js_check(schema, doc, why, sizeof(why)), "%s:\n%s", why,
                  text);
    ck_assert_msg(strstr(text, "\"pci_bus_id\": \"0000:") != NULL, "no PCI bus id:\n%s", text);
    ck_assert_msg(strstr(text, "\"name\": \"ipc-event\",\n      \"verdict\": \"pass\"") != NULL,
                  "ipc-event did not pass:\n%s", text);
    js_free(doc);
    js_free(schema);
    free(text);
    free(schema_text);
    unlink(path);
}
END_TEST

/* The GPUs this machine shows (--list's lines). */
static int gpu_count(void)
{
    const char *list[] = {"--list", NULL};
    const char *p;
    int n = 0;

    spawn(list, NULL, 60, NULL);
    for (p = run.out; (p = strstr(p, "\nGPU ")) != NULL; p++)
        n++;
    ck_assert_msg(n >= 1, "--list names no GPU:\n%s", run.out);
    return n;
}

/* The document at path, held against the schema (the caller frees it). */
static jnode *valid_document(const char *path)
{
    char why[512], *schema_text, *text;
    jnode *schema, *doc;
    size_t n;

    ck_assert_ptr_nonnull(schema_text = th_read_file("docs/result.schema.json", &n));
    ck_assert_ptr_nonnull(text = th_read_file(path, &n));
    schema = js_parse(schema_text, why, sizeof(why));
    doc = js_parse(text, why, sizeof(why));
    ck_assert_msg(doc != NULL && js_check(schema, doc, why, sizeof(why)), "%s:\n%s", why,
                  text);
    js_free(schema);
    free(schema_text);
    free(text);
    return doc;
}

/* --pairs all, the link's figures (issue 38): under each pair's row the
 * read and the write across the link and the read of the consumer's own
 * memory, each the median of 5 timed batches of 16 passes over 64 MiB, the
 * read of its own memory the faster; the consumer's log says where the
 * memory lies and that every batch's sums held; --json carries the same
 * read and write. The figures go to stderr, for the log of the GPU run.
 * With one GPU, --pairs is a usage error as above. */
START_TEST(test_gpu_pairs_link_figures_hold)
{
    char path[64];
    const char *args[] = {"--pairs", "all", "--json", path, NULL};
    const jnode *scen, *sc;
    const char *p;
    int n = gpu_count(), pairs = 0;
    size_t i;
    jnode *doc;

    snprintf(path, sizeof(path), "/tmp/gpuipc-gpu-link-%d.json", (int)getpid());
    spawn(args, NULL, 180, NULL);
    if (n < 2) {
        ck_assert_msg(th_exited(&run, 2), "one GPU: status 0x%x:\n%s", run.status, run.out);
        OUT_HAS("--pairs: this machine has 1 GPU; pairs need two or more");
        unlink(path);
        return;
    }
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("link: the imported memory lies on GPU 0, the producer's, by cuPointerGetAttribute "
            "(DEVICE_ORDINAL); this process reads and writes it from GPU 1");
    OUT_HAS("; each the median of 5 batches of 16 passes over 64 MiB, timed with CUDA events; "
            "every batch's words and digest as its passes give, 0 bad");
    for (p = run.out; (p = strstr(p, "across the link, GPU ")) != NULL; p++) {
        int a, b, b2;
        double rd, wr, local;

        ck_assert_msg(sscanf(p, "across the link, GPU %d read %lf GB/s from GPU %d and wrote %lf "
                                "GB/s to it (GPU %d's own memory: %lf GB/s; medians of 5 "
                                "batches of 16 x 64 MiB)", &b, &rd, &a, &wr, &b2, &local) == 6,
                      "a pair's line without its figures: %.300s", p);
        fprintf(stderr, "link figures: GPU %d read %.1f GB/s from GPU %d, wrote %.1f GB/s; its "
                "own memory %.1f GB/s\n", b, rd, a, wr, local);
        ck_assert_msg(a != b && b == b2, "%.300s", p);
        ck_assert_msg(rd > 0 && wr > 0, "%.300s", p);
        ck_assert_msg(local > rd, "GPU %d's own memory (%.1f GB/s) no faster than GPU %d's "
                      "across the link (%.1f GB/s)", b, local, a, rd);
        pairs++;
    }
    ck_assert_int_eq(pairs, n * (n - 1));
    doc = valid_document(path);
    scen = js_get(doc, "scenarios");
    ck_assert_uint_eq(js_len(scen), (size_t)(n * (n - 1)));
    for (i = 0; i < js_len(scen); i++) {
        sc = js_at(scen, i);
        ck_assert_msg(js_num(js_get(js_get(sc, "producer_to_consumer"), "read_gbps")) > 0 &&
                      js_num(js_get(sc, "consumer_write_gbps")) > 0, "scenario %zu: no figures",
                      i);
    }
    js_free(doc);
    unlink(path);
}
END_TEST

/* The default run proves every GPU: each one's verdict in the document is
 * pass, each GPU has its heading, and with two or more GPUs every ordered
 * pair passes with every mechanism, under its phase's heading (in phase k
 * GPU i exports to i+k). */
START_TEST(test_gpu_default_run_proves_every_gpu)
{
    char path[64], row[32];
    const char *args[] = {"-q", "--json", path, NULL};
    int n = gpu_count(), g;
    const jnode *gpus;
    jnode *doc;

    snprintf(path, sizeof(path), "/tmp/gpuipc-gpu-all-%d.json", (int)getpid());
    spawn_all(args, NULL, 120);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_document(path);
    gpus = js_get(doc, "gpus");
    ck_assert_msg(gpus != NULL && js_len(gpus) == (size_t)n, "%zu GPUs in the document, %d "
                  "here", gpus ? js_len(gpus) : 0, n);
    for (g = 0; g < n; g++)
        ck_assert_msg(strcmp(js_str(js_get(js_at(gpus, (size_t)g), "verdict")), "pass") == 0,
                      "GPU %d's verdict is %s", g,
                      js_str(js_get(js_at(gpus, (size_t)g), "verdict")));
    if (n >= 2) {
        int i;
        char head[160];
        int k, h;

        OUT_HAS("\n GPU 1: ");
        snprintf(head, sizeof(head), "\n across GPUs, every ordered pair, phase 1 of %d: each "
                 "GPU exports to the next (every GPU mechanism above)", n - 1);
        OUT_HAS(head);
        for (k = 2; k < n; k++) {
            snprintf(head, sizeof(head), "\n across GPUs, every ordered pair, phase %d of %d: "
                     "each GPU exports to the one %d after it", k, n - 1, k);
            OUT_HAS(head);
        }
        /* Every mechanism crosses GPUs, on every ordered pair. */
        for (g = 0; g < n; g++)
            for (h = 0; h < n; h++)
                for (i = 0; g != h && i < N_RUNNABLE; i++) {
                    snprintf(row, sizeof(row), "%s %d->%d", runnable[i], g, h);
                    out_has_row(row, "PASS");
                }
    }
    js_free(doc);
    unlink(path);
}
END_TEST

/* --pairs ring keeps the quicker ring: GPU i exports to i+1 only, the last
 * to the first, under the ring's heading; with three or more GPUs no other
 * pair runs. */
START_TEST(test_gpu_pairs_ring_keeps_the_ring)
{
    const char *args[] = {"-q", "--pairs", "ring", "--only", "vmm,legacy-ipc", NULL};
    int n = gpu_count(), g, h;
    char row[32];

    if (n < 2)
        return; /* one GPU: no pair to keep or leave out */
    spawn_all(args, NULL, 120);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("\n across GPUs, the ring (--pairs ring): each GPU exports to the next");
    ck_assert_msg(strstr(run.out, "every ordered pair") == NULL, "--pairs ring ran every "
                  "ordered pair:\n%s", run.out);
    for (g = 0; g < n; g++)
        for (h = 0; h < n; h++) {
            if (g == h)
                continue;
            snprintf(row, sizeof(row), "vmm %d->%d", g, h);
            if (h == (g + 1) % n)
                out_has_row(row, "PASS");
            else
                ck_assert_msg(!has_row(row, ""), "--pairs ring ran %s:\n%s", row, run.out);
        }
}
END_TEST

/* --device narrows the run: one GPU, its own rows only. */
START_TEST(test_gpu_device_narrows_the_run)
{
    char path[64], last[16];
    const char *args[] = {"-q", "--device", last, "--only", "vmm", "--json", path, NULL};
    int n = gpu_count();
    const jnode *gpus;
    jnode *doc;

    snprintf(last, sizeof(last), "%d", n - 1);
    snprintf(path, sizeof(path), "/tmp/gpuipc-gpu-one-%d.json", (int)getpid());
    spawn_all(args, NULL, 60);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_document(path);
    gpus = js_get(doc, "gpus");
    ck_assert_msg(gpus != NULL && js_len(gpus) == 1 &&
                  (int)js_num(js_get(js_at(gpus, 0), "ordinal")) == n - 1,
                  "not GPU %d alone", n - 1);
    ck_assert_msg(js_len(js_get(doc, "scenarios")) == 1 &&
                  isnan(js_num(js_get(js_at(js_get(doc, "scenarios"), 0), "peer_gpu"))),
                  "more than vmm on GPU %d, or a ring with one GPU:\n%s", n - 1, run.out);
    js_free(doc);
    unlink(path);
}
END_TEST

/* --list names each GPU's modes as NVML reports them. */
START_TEST(test_gpu_list_names_the_modes)
{
    const char *args[] = {"--list", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("modes (NVML)");
    OUT_HAS("MIG o");
    OUT_HAS(", confidential computing o");
    OUT_HAS(", GPU fabric ");
}
END_TEST

/* --destructive: a kernel store into a read-only mapping faults in the
 * sacrificial consumer, which exits; the producer's bytes are unchanged and
 * nothing leaks once it is gone; the main consumer is untouched. */
START_TEST(test_gpu_destructive_fault_is_the_expected_outcome)
{
    const char *args[] = {"--only", "vmm,vmm-ro-fault", "--destructive", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("mapped read-only in a sacrificial consumer");
    OUT_HAS("refused, as it must be: the kernel's store faulted, as expected: ");
    OUT_HAS("sacrificial consumer exited 0");
    OUT_HAS("0 mismatches in 8388608 words: own pattern unchanged");
    out_has_row("vmm-ro-fault", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    out_has_row("vmm", "PASS   64 MiB");
    OUT_HAS("consumer: exited 0; its last checks passed; sacrificial consumer: exited 0");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* The sacrificial consumer's verification must be able to fail too. */
START_TEST(test_gpu_destructive_sabotage_is_caught)
{
    const char *env[] = {sabotages[_i], NULL};
    const char *args[] = {"--only", "vmm-ro-fault", "--destructive", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS("the producer's bytes: 8388608 mismatches in 8388608 words; first bad word 0");
    OUT_HAS("sacrificial consumer: exited ");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* 4096 chunks: 17 messages of FDs, mapped back to back, both ways. */
START_TEST(test_gpu_4096_chunks_pass)
{
    const char *args[] = {"--only", "vmm-chunks", "--chunks", "4096", NULL};

    spawn(args, NULL, 120, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("export   4096 FDs, the first 253 of them now");
    OUT_HAS("FDs 253 to 4095 received in 16 more messages and imported");
    out_has_row("vmm-chunks", "PASS   8 GiB      0/1073741824 bad       0/1073741824 bad");
}
END_TEST

static const char *const chunk_sabotages[] = {
    "GPUIPC_SABOTAGE=producer:chunk-order",
    "GPUIPC_SABOTAGE=consumer:chunk-order",
};

/* Chunks 0 and 1 swapped by either side: the pattern over the whole range
 * finds it at the first word, both ways. */
START_TEST(test_gpu_chunk_order_is_caught)
{
    const char *env[] = {chunk_sabotages[_i], NULL};
    const char *args[] = {"--only", "vmm-chunks", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS("the producer's bytes: 2097152 mismatches in 8388608 words; first bad word 0 ");
    OUT_HAS("check: the consumer's bytes: 2097152 mismatches in 8388608 words; first bad "
            "word 0 ");
}
END_TEST

/* `ulimit -n 64` (soft and hard) with 4096 chunks: a clean failure that
 * names RLIMIT_NOFILE and its number, within the deadline, nothing left.
 * Which step meets the limit first is the machine's: the chunks that do
 * not fit, the consumer's MSG_CTRUNC, or, with several GPUs, the driver's
 * own context (CUDA_ERROR_OPERATING_SYSTEM); each names the limit. */
START_TEST(test_gpu_chunks_under_a_low_fd_limit_fail_cleanly)
{
    const char *args[] = {"--only", "vmm-chunks", "--chunks", "4096", "--timeout", "20", NULL};
    struct rlimit low = {.rlim_cur = 64, .rlim_max = 64};

    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strstr(run.out, "RLIMIT_NOFILE is 64") != NULL,
                  "no RLIMIT_NOFILE explanation:\n%s", run.out);
    ck_assert_msg(run.seconds < 20.0, "took %.2f s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* The IMEX channels' character device major from /proc/devices, or -1
 * where the driver has none (too old for FABRIC handles). */
static int imex_major(void)
{
    FILE *f = fopen("/proc/devices", "re");
    char line[128], name[96];
    int major, found = -1;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "%d %95s", &major, name) == 2 &&
            strcmp(name, "nvidia-caps-imex-channels") == 0)
            found = major;
    if (f != NULL)
        fclose(f);
    return found;
}

#define IMEX_DIR "/dev/nvidia-caps-imex-channels"

/* This test's process alone sees a tmpfs at IMEX_DIR, with channel0 (mode
 * 0600) if with_channel: a private mount namespace, so that no channel of
 * the machine's is touched or removed and none is left behind. Where the
 * directory was absent it is made (empty, in the machine's /dev) and *made
 * is set for the caller to remove. */
static void private_imex(int with_channel, int major, int *made)
{
    *made = mkdir(IMEX_DIR, 0755) == 0;
    ck_assert_msg(*made || errno == EEXIST, "mkdir " IMEX_DIR ": %s", strerror(errno));
    ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare CLONE_NEWNS: %s", strerror(errno));
    ck_assert_msg(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0,
                  "mount --make-rprivate /: %s", strerror(errno));
    ck_assert_msg(mount("tmpfs", IMEX_DIR, "tmpfs", 0, "size=64k,mode=0755") == 0,
                  "mount tmpfs " IMEX_DIR ": %s", strerror(errno));
    if (with_channel)
        ck_assert_msg(mknod(IMEX_DIR "/channel0", S_IFCHR | 0600, makedev(major, 0)) == 0,
                      "mknod " IMEX_DIR "/channel0: %s", strerror(errno));
}

/* FABRIC handles both ways: without an IMEX channel a skip that names the
 * missing channel and its fix (never a pass); with one (made as the docs
 * tell a user of one node to) a pass, both ways, every word checked. */
START_TEST(test_gpu_fabric_needs_a_channel_and_passes_with_one)
{
    const char *args[] = {"--only", "fabric", "--size", "64M", NULL};
    int major = imex_major(), made;

    private_imex(_i == 1, major, &made);
    spawn(args, NULL, 60, NULL);
    umount2(IMEX_DIR, MNT_DETACH); /* this namespace's tmpfs, then the mount point */
    if (made)
        ck_assert_msg(rmdir(IMEX_DIR) == 0, "rmdir " IMEX_DIR ", made here: %s",
                      strerror(errno));
    if (_i == 0) {
        ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
        OUT_HAS("gpuipc_test: SKIP: fabric: probe: ");
        OUT_HAS("CUDA_ERROR_NOT_PERMITTED");
        OUT_HAS("cause: no IMEX channel that this process can open");
        return;
    }
    ck_assert_msg(major >= 0, "no nvidia-caps-imex-channels in /proc/devices: this driver "
                  "has no IMEX channels, and FABRIC handles cannot be tested here");
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    out_has_row("fabric", "PASS");
    OUT_HAS("result: PASS: 1 passed, 0 failed, 0 skipped");
}
END_TEST

START_TEST(test_gpu_require_turns_a_skip_into_a_failure)
{
    const char *args[] = {"--only", "vmm,fabric", "--require", "fabric", "--quiet", NULL};

    spawn(args, NULL, 60, NULL);
    if (has_row("fabric", "PASS"))
        return; /* nothing to turn into a failure on a machine with IMEX */
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("required by --require, but skipped: ");
    out_has_row("vmm", "PASS");
}
END_TEST

/* --expect-gpus: one more GPU than this machine shows is a failure (exit
 * 1, never 77) that names both counts; as many as it shows passes. */
START_TEST(test_gpu_expect_gpus_fails_a_missing_gpu)
{
    char more[16], want[128];
    int n = gpu_count();

    snprintf(more, sizeof(more), "%d", n + 1);
    {
        const char *args[] = {"--expect-gpus", more, "--only", "vmm", "--brief", NULL};

        spawn(args, NULL, 60, NULL);
    }
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    snprintf(want, sizeof(want), "FAIL: no scenario ran: --expect-gpus %d: the driver shows "
             "this process %d GPU", n + 1, n);
    OUT_HAS(want);
    snprintf(more, sizeof(more), "%d", n);
    {
        const char *args[] = {"--expect-gpus", more, "--only", "vmm", "--brief", NULL};

        spawn(args, NULL, 60, NULL);
    }
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
}
END_TEST

START_TEST(test_gpu_legacy_ipc_shows_the_vmm_refusal)
{
    const char *args[] = {"--only", "legacy-ipc", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("expected refusal: cuIpcGetMemHandle on a VMM (cuMemCreate) allocation returns "
            "CUDA_ERROR_INVALID_VALUE");
}
END_TEST

/* A read-only mapping: reads pass, copy-engine writes are refused with the
 * context intact, and the producer's bytes are unchanged. */
START_TEST(test_gpu_readonly_refuses_writes)
{
    const char *args[] = {"--only", "vmm-readonly", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("mapped read-only");
    OUT_HAS("refused, as it must be: cuMemGetAccess PROT_READ; cuMemcpyHtoD "
            "CUDA_ERROR_INVALID_VALUE; cuMemsetD32 CUDA_ERROR_INVALID_VALUE");
    OUT_HAS("0 mismatches in 8388608 words: own pattern unchanged");
}
END_TEST

/* The read-only consumer writes nothing to spoil; its verification must
 * still fail when the producer's bytes are wrong. */
START_TEST(test_gpu_readonly_sabotage_is_caught)
{
    const char *env[] = {sabotages[_i], NULL};
    const char *args[] = {"--only", "vmm-readonly", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS("the producer's bytes: 8388608 mismatches in 8388608 words; first bad word 0");
}
END_TEST

/* HOST_NUMA memory: the producer's CPU writes, the consumer's GPU and CPU
 * read it; the consumer's GPU writes, its CPU and the producer's CPU read. */
START_TEST(test_gpu_host_numa_is_shared_by_cpus_and_gpu)
{
    const char *args[] = {"--only", "vmm-host-numa", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("on host NUMA node 0, granularity 2 MiB; the CPU fills and checks it");
    OUT_HAS("the producer's bytes read through this process's CPU: 0 mismatches in 8388608 words");
    OUT_HAS("this side's own write read through this process's CPU: 0 mismatches in 8388608 "
            "words");
}
END_TEST

START_TEST(test_gpu_alias_reads_what_the_other_mapping_wrote)
{
    const char *args[] = {"--only", "vmm-alias", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("this side's own write read through the alias at 0x");
}
END_TEST

START_TEST(test_gpu_compressible_reports_what_was_granted)
{
    const char *args[] = {"--only", "vmm-compressible", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("compression to the producer: ");
    OUT_HAS("compression as the importer sees it: ");
}
END_TEST

START_TEST(test_gpu_4g_passes_both_ways)
{
    const char *args[] = {"--size", "4G", NULL};
    int i;

    spawn(args, NULL, 120, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    for (i = 0; i < N_RUNNABLE; i++)
        out_has_row(runnable[i], "PASS   4 GiB      0/536870912 bad        0/536870912 bad");
}
END_TEST

START_TEST(test_gpu_vmm_and_memfd_in_one_session)
{
    const char *args[] = {"--only", "vmm,memfd", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    out_has_row("vmm", "PASS");
    out_has_row("memfd", "PASS");
}
END_TEST


/* Every mechanism's verification must be able to fail, on the GPU, in both
 * directions. */
START_TEST(test_gpu_sabotage_is_caught)
{
    const char *mech = writers[_i / N_SABOTAGES];
    const char *env[] = {sabotages[_i % N_SABOTAGES], NULL};
    const char *args[] = {"--only", mech, NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s %s: status 0x%x:\n%s", mech, env[0], run.status,
                  run.out);
    OUT_HAS("8388608 mismatches in 8388608 words; first bad word 0 (byte offset 0x0)");
    out_has_row(mech, "FAIL");
}
END_TEST

/* Every sabotage that applies to a mechanism is caught across GPUs too,
 * each failure on the row of its GPU pair: GPUs 0 and 1 (--device 0,1),
 * every mechanism the sabotage spoils at once. With one GPU, the run is
 * refused (exit 2) instead: there is no pair to sabotage. */
static const struct {
    const char *sabotage, *only, *says;
} cross_sabotages[] = {
    {"GPUIPC_SABOTAGE=producer:skip-write", "writers", "mismatches in 8388608 words"},
    {"GPUIPC_SABOTAGE=producer:wrong-seed", "writers", "mismatches in 8388608 words"},
    {"GPUIPC_SABOTAGE=consumer:skip-write", "writers", "mismatches in 8388608 words"},
    {"GPUIPC_SABOTAGE=consumer:wrong-seed", "writers", "mismatches in 8388608 words"},
    {"GPUIPC_SABOTAGE=producer:flip-one", "writers",
     "1 mismatches in 8388608 words; first bad word 2796203 "},
    {"GPUIPC_SABOTAGE=consumer:flip-one", "writers",
     "1 mismatches in 8388608 words; first bad word 2796203 "},
    {"GPUIPC_SABOTAGE=producer:chunk-order", "vmm-chunks", "2097152 mismatches in 8388608 words"},
    {"GPUIPC_SABOTAGE=consumer:chunk-order", "vmm-chunks", "2097152 mismatches in 8388608 words"},
    {"GPUIPC_SABOTAGE=producer:early-event", "ipc-event", "the producer's bytes: "},
    {"GPUIPC_SABOTAGE=producer:leak", "vmm,vmm-host-numa", "driver objects still held"},
    {"GPUIPC_SABOTAGE=consumer:leak", "vmm,vmm-host-numa", "driver objects still held"},
    {"GPUIPC_SABOTAGE=consumer:read-nothing", "vmm,vmm-readonly,legacy-ipc",
     "it did not read these bytes"},
    {"GPUIPC_SABOTAGE=consumer:read-partial", "vmm,vmm-readonly,legacy-ipc",
     "the consumer read 2 of the 8388608 words"},
};
#define N_CROSS_SABOTAGES (int)(sizeof(cross_sabotages) / sizeof(cross_sabotages[0]))

START_TEST(test_gpu_sabotage_is_caught_across_gpus)
{
    char only[256] = "", row[48];
    const char *env[] = {cross_sabotages[_i].sabotage, NULL};
    const char *args[] = {"--device", "0,1", "--only", only, "--quiet", NULL};
    const char *p;
    int n = gpu_count(), i;

    if (strcmp(cross_sabotages[_i].only, "writers") == 0)
        for (i = 0; i < N_WRITERS; i++)
            snprintf(only + strlen(only), sizeof(only) - strlen(only), "%s%s", i ? "," : "",
                     writers[i]);
    else
        snprintf(only, sizeof(only), "%s", cross_sabotages[_i].only);
    spawn(args, env, 180, NULL);
    if (n < 2) {
        ck_assert_msg(th_exited(&run, 2), "one GPU: --device 0,1 not refused: 0x%x:\n%s",
                      run.status, run.out);
        return;
    }
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS(cross_sabotages[_i].says);
    for (p = only; *p != '\0'; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        int len = (int)strcspn(p, ",");

        snprintf(row, sizeof(row), "%.*s 0->1", len, p);
        out_has_row(row, "FAIL");
        snprintf(row, sizeof(row), "%.*s 1->0", len, p);
        out_has_row(row, "FAIL");
    }
}
END_TEST

static pid_t killed;

/* The consumer has imported, mapped and verified the GPU memory and stops
 * before writing: kill -9 it there, from outside, as a crash would. */
static void kill_consumer_mid_scenario(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (killed == 0 && strstr(line, "FAULT INJECTED: hang at write") != NULL) {
        killed = th_child_of(pgid);
        if (killed > 0)
            kill(killed, SIGKILL);
    }
}

START_TEST(test_gpu_consumer_killed_mid_scenario_is_reported)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:write:hang", NULL};
    const char *args[] = {"--only", "vmm", "--size", "1G", "--timeout", "20", NULL};

    spawn(args, env, 60, kill_consumer_mid_scenario);
    ck_assert_msg(killed > 0, "the consumer was never found to kill:\n%s", run.out);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("producer  vmm              report   FAIL peer gone during report: the consumer closed the "
            "connection");
    OUT_HAS("consumer: killed by signal 9 (SIGKILL)");
    ck_assert_msg(run.seconds < 20.0, "took %.2f s, the deadline is 20 s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* A driver call that never returns (GPUIPC_FAULT wedge: every signal
 * blocked, a sleep nothing ends) at alloc, export, import, check and the
 * consumer's verify: the run ends by --deadline 3 with exit 1, naming the
 * stuck process, its step and the CUDA call it is stuck in; nothing is left
 * behind. */
static const char *const wedges[][2] = {
    {"producer", "alloc"}, {"producer", "export"}, {"consumer", "import"},
    {"producer", "check"}, {"consumer", "verify"},
};

START_TEST(test_gpu_a_wedged_driver_call_ends_by_the_deadline)
{
    char fault[64], want[128];
    const char *env[] = {fault, NULL};
    const char *args[] = {"--only", "vmm", "--deadline", "3", "-q", NULL};

    snprintf(fault, sizeof(fault), "GPUIPC_FAULT=%s:%s:wedge", wedges[_i][0], wedges[_i][1]);
    snprintf(want, sizeof(want), "result: FAIL: --deadline 3.000 s passed: the %s is stuck at %s "
             "in cu", wedges[_i][0], wedges[_i][1]);
    spawn(args, env, 30, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x after %.2f s:\n%s", fault, run.status,
                  run.seconds, run.out);
    OUT_HAS(want);
    ck_assert_msg(run.seconds < 3.0 + 2.0, "%s: ended after %.2f s", fault, run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* Ctrl-C (SIGINT to the process group) during an 8 GiB soak, once 5 rounds
 * have passed: both processes stop within 2 s, with 130 and STOPPED. */
static double ctrl_c_at;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ctrl_c_after_a_round(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (ctrl_c_at == 0 && strstr(line, "round 5/50 passed") != NULL) {
        ctrl_c_at = now_s();
        kill(-pgid, SIGINT);
    }
}

START_TEST(test_gpu_ctrl_c_during_a_soak_stops_both_within_2s)
{
    const char *args[] = {"--only", "vmm", "--size", "8G", "--repeat", "50", NULL};
    double t0 = now_s();

    ctrl_c_at = 0;
    spawn(args, NULL, 120, ctrl_c_after_a_round);
    ck_assert_msg(ctrl_c_at > 0, "no round 5 was seen:\n%s", run.out);
    ck_assert_msg(th_exited(&run, 130), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("result: STOPPED: ");
    OUT_HAS("consumer: exited 130");
    ck_assert_msg(t0 + run.seconds - ctrl_c_at < 2.0, "ended %.2f s after Ctrl-C",
                  t0 + run.seconds - ctrl_c_at);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* The steps at which one side holds GPU memory, and the step the survivor is
 * waiting in. With CUDA, the consumer has driver threads, which changes how
 * the parent-death signal reaches it, so these run here and not only on memfd. */
static const struct {
    const char *fault, *survivor, *waiting;
} deaths[] = {
    {"GPUIPC_FAULT=consumer:import:kill", "  producer  ", "peer gone during report"},
    {"GPUIPC_FAULT=consumer:verify:kill", "  producer  ", "peer gone during report"},
    {"GPUIPC_FAULT=consumer:release:kill", "  producer  ", "peer gone during end-ack"},
    {"GPUIPC_FAULT=producer:export:kill", "  consumer  ", "peer gone during offer"},
    {"GPUIPC_FAULT=producer:check:kill", "  consumer  ", "peer gone during end"},
    {"GPUIPC_FAULT=producer:check:exit", "  consumer  ", "peer gone during end"},
    {"GPUIPC_FAULT=producer:release:kill", "  consumer  ", "peer gone during begin"},
    {"GPUIPC_FAULT=producer:end:kill", "  consumer  ", "peer gone during end"},
};

START_TEST(test_gpu_survivor_reports_a_dead_peer)
{
    const char *env[] = {deaths[_i].fault, NULL};
    const char *args[] = {"--only", "vmm", "--timeout", "20", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_line_has(run.out, deaths[_i].survivor, deaths[_i].waiting),
                  "%s: no%sline says '%s':\n%s", deaths[_i].fault, deaths[_i].survivor,
                  deaths[_i].waiting, run.out);
    ck_assert_msg(run.seconds < 20.0, "%s: took %.2f s", deaths[_i].fault, run.seconds);
    ck_assert_msg(run.leftover == 0, "%s: a process was left behind", deaths[_i].fault);
}
END_TEST

/* ---- issue 12: verdicts that hold on a shared GPU ---- */

/* Runs the program with args and env in a new process, its output in a
 * file, without waiting. Returns its pid. */
static pid_t start_bg(const char *prog, const char *const *args, const char *const *env,
                      const char *out_path)
{
    const char *argv[32];
    pid_t pid;
    int i;

    argv[0] = prog;
    for (i = 0; args[i] != NULL && i < 30; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    pid = fork();
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        setpgid(0, 0);
        /* This suite's Check selection (CK_RUN_CASE ...) is not the program's. */
        gpuipc_pair_clear_check_env();
        for (i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    size_t n = f != NULL ? fread(buf, 1, len - 1, f) : 0;

    buf[n] = '\0';
    if (f != NULL)
        fclose(f);
}

/* Three one-shot runs at once, while another process allocates and frees
 * 64 MiB in a loop on the same GPU: the device's free memory moves all the
 * time, and every run must still pass, since each counts only its own. */
START_TEST(test_gpu_three_runs_beside_a_churning_process_pass)
{
    static char out[3][1 << 15], churned[4096], beside[4096];
    const char *churn = getenv("GPUIPC_CHURN_BIN");
    const char *cargs[] = {"25", "64", NULL};
    const char *args[] = {"--quiet", "--device", "0", NULL};
    char path[4][64];
    pid_t cpid, pid[3];
    int i, status;

    /* Unless told, the churner built beside this suite (build/tests/). */
    if (churn == NULL || churn[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", beside, sizeof(beside) - 16);
        char *slash;

        beside[n > 0 ? n : 0] = '\0';
        if ((slash = strrchr(beside, '/')) != NULL)
            strcpy(slash + 1, "gpu_churn");
        churn = beside;
    }
    ck_assert_msg(access(churn, X_OK) == 0, "%s: no churning program there (set "
                  "GPUIPC_CHURN_BIN; make check-gpu does)", churn);
    for (i = 0; i < 4; i++)
        snprintf(path[i], sizeof(path[i]), "/tmp/gpuipc-churn-%d-%d.txt", (int)getpid(), i);
    cpid = start_bg(churn, cargs, NULL, path[3]);
    ck_assert_int_gt(cpid, 0);
    for (i = 0; i < 200; i++) { /* up to 10 s for it to start looping */
        read_text(path[3], churned, sizeof(churned));
        if (strstr(churned, "churning") != NULL)
            break;
        usleep(50000);
    }
    ck_assert_msg(strstr(churned, "churning") != NULL, "the churn never started: %s", churned);
    for (i = 0; i < 3; i++)
        pid[i] = start_bg(th_program(), args, NULL, path[i]);
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
        read_text(path[i], out[i], sizeof(out[i]));
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "run %d: status 0x%x:\n%s",
                      i, (unsigned)status, out[i]);
        ck_assert_msg(strstr(out[i], one_gpu_counts()) != NULL,
                      "run %d:\n%s", i, out[i]);
    }
    /* The churn was still going, or it would prove nothing. */
    ck_assert_int_eq(waitpid(cpid, &status, WNOHANG), 0);
    kill(cpid, SIGKILL);
    waitpid(cpid, &status, 0);
    for (i = 0; i < 4; i++)
        unlink(path[i]);
}
END_TEST

/* Every leak of ours is still found on every kind of memory, by its own
 * process's count, alone and under --repeat 3: producer and consumer, a
 * skipped release (GPU memory: vmm; host memory the GPU maps: vmm-host-numa;
 * a memfd) and an FD kept after the scenario's count. */
static const char *const leak_roles[] = {"producer", "consumer"};
static const struct {
    const char *what, *mech, *named;
} leak_kinds[] = {
    {"leak", "vmm", "driver objects still held"},
    {"leak", "vmm-host-numa", "driver objects still held"},
    {"leak", "memfd", "leaked"},
    {"leak-fd", "vmm", "(/dev/null)"},
};
#define N_LEAK_KINDS (int)(sizeof(leak_kinds) / sizeof(leak_kinds[0]))

START_TEST(test_gpu_every_leak_is_named)
{
    int k = _i % N_LEAK_KINDS, role = (_i / N_LEAK_KINDS) % 2, repeat = _i / (2 * N_LEAK_KINDS);
    char sab[64];
    const char *env[] = {sab, NULL};
    const char *once[] = {"--only", leak_kinds[k].mech, "--quiet", NULL};
    const char *soak[] = {"--only", leak_kinds[k].mech, "--quiet", "--repeat", "3", NULL};

    snprintf(sab, sizeof(sab), "GPUIPC_SABOTAGE=%s:%s", leak_roles[role], leak_kinds[k].what);
    spawn(repeat ? soak : once, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s --only %s%s: status 0x%x:\n%s", sab,
                  leak_kinds[k].mech, repeat ? " --repeat 3" : "", run.status, run.out);
    OUT_HAS(leak_kinds[k].named);
    ck_assert_msg(th_line_has(run.out, leak_roles[role], "leaked"), "%s: no %s line names the "
                  "leak:\n%s", sab, leak_roles[role], run.out);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* Every GPU mechanism is offered an FD of the wrong kind (a memfd, a pipe)
 * or a handle of another size than claimed: the consumer names the failure,
 * both exit 1, no process dies of a signal, nothing leaks. */
static const char *const offer_sabotages[] = {
    "GPUIPC_SABOTAGE=producer:offer-memfd",
    "GPUIPC_SABOTAGE=producer:offer-pipe",
    "GPUIPC_SABOTAGE=producer:offer-size",
};
#define N_OFFER_SABOTAGES (int)(sizeof(offer_sabotages) / sizeof(offer_sabotages[0]))

START_TEST(test_gpu_wrong_kind_offer_is_refused)
{
    const char *mech = runnable[_i / N_OFFER_SABOTAGES];
    const char *env[] = {offer_sabotages[_i % N_OFFER_SABOTAGES], NULL};
    const char *args[] = {"--only", mech, NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s %s: status 0x%x:\n%s", mech, env[0], run.status,
                  run.out);
    ck_assert_msg(th_line_has(run.out, "consumer", "FAIL import: ") ||
                  th_line_has(run.out, "consumer", "FAIL offer: "),
                  "%s %s: the consumer names no failed import:\n%s", mech, env[0], run.out);
    ck_assert_msg(strstr(run.out, "leaked") == NULL, "%s %s: a leak:\n%s", mech, env[0],
                  run.out);
    /* Where the driver refused the FD, the consumer says what the FD is. */
    if (_i % N_OFFER_SABOTAGES < 2 && strstr(run.out, "ImportFromShareableHandle: ") != NULL)
        OUT_HAS(_i % N_OFFER_SABOTAGES == 0 ? "; the FD offered is a memfd"
                                            : "; the FD offered is a pipe");
    OUT_HAS("consumer: exited 1");
    out_has_row(mech, "FAIL");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* One wrong word is found and named by its index: a third of the way in,
 * the last word, and (with --size 5G) the word after byte 4 GiB, written
 * wrong by either side after its fill. */
static const struct {
    const char *sabotage, *size, *found;
} flips[] = {
    {"GPUIPC_SABOTAGE=producer:flip-one", "64M",
     "the producer's bytes: 1 mismatches in 8388608 words; first bad word 2796203 "},
    {"GPUIPC_SABOTAGE=consumer:flip-one", "64M",
     "check: the consumer's bytes: 1 mismatches in 8388608 words; first bad word 2796203 "},
    {"GPUIPC_SABOTAGE=producer:flip-last", "64M",
     "the producer's bytes: 1 mismatches in 8388608 words; first bad word 8388607 "},
    {"GPUIPC_SABOTAGE=consumer:flip-last", "64M",
     "check: the consumer's bytes: 1 mismatches in 8388608 words; first bad word 8388607 "},
    {"GPUIPC_SABOTAGE=producer:flip-past-4g", "5G",
     "the producer's bytes: 1 mismatches in 671088640 words; first bad word 536870913 (byte "
     "offset 0x100000008)"},
    {"GPUIPC_SABOTAGE=consumer:flip-past-4g", "5G",
     "check: the consumer's bytes: 1 mismatches in 671088640 words; first bad word 536870913 "
     "(byte offset 0x100000008)"},
};

START_TEST(test_gpu_one_wrong_word_is_found_by_its_index)
{
    const char *env[] = {flips[_i].sabotage, NULL};
    const char *args[] = {"--only", "vmm", "--size", flips[_i].size, NULL};

    spawn(args, env, 120, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS(flips[_i].found);
    OUT_HAS("SABOTAGE: one bit of word ");
}
END_TEST

/* A reader that reads nothing (or two words) but reports success is caught
 * by the writer, on GPU memory, read-write and read-only. */
static const struct {
    const char *mech, *sabotage, *found;
} readers[] = {
    {"vmm", "GPUIPC_SABOTAGE=consumer:read-nothing", "it did not read these bytes"},
    {"vmm", "GPUIPC_SABOTAGE=consumer:read-partial", "the consumer read 2 of the 8388608 words"},
    {"vmm-readonly", "GPUIPC_SABOTAGE=consumer:read-nothing", "it did not read these bytes"},
    {"vmm-readonly", "GPUIPC_SABOTAGE=consumer:read-partial",
     "the consumer read 2 of the 8388608 words"},
    {"vmm", "GPUIPC_SABOTAGE=producer:read-nothing", "it did not read these bytes"},
};

START_TEST(test_gpu_a_reader_that_did_not_read_fails)
{
    const char *env[] = {readers[_i].sabotage, NULL};
    const char *args[] = {"--only", readers[_i].mech, NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s %s: status 0x%x:\n%s", readers[_i].mech, env[0],
                  run.status, run.out);
    OUT_HAS(readers[_i].found);
}
END_TEST

/* The kernels' self-test at every GPU open goes round the grid-stride loop
 * (more words than threads, a size that is not a multiple of the grid) and
 * finds planted words by their index, and says so. */
START_TEST(test_gpu_self_test_covers_the_grid_stride_loop)
{
    const char *args[] = {"--only", "vmm", "-v", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("self-test: 5194 words on 2 blocks of 256 threads (5.07 rounds of the loop)");
    OUT_HAS("planted wrong words found at their indexes; digests and word counts match the "
            "CPU's");
}
END_TEST

/* Two-terminal mode on the GPU: both processes exit with the session's
 * status, whichever side failed. */
static const struct {
    const char *env, *cenv, *why;
} sessions[] = {
    {NULL, "CUDA_VISIBLE_DEVICES=", "the consumer cannot see the producer's GPU"},
    {"GPUIPC_SABOTAGE=consumer:skip-write", NULL, "the consumer wrote nothing"},
};

START_TEST(test_gpu_two_terminal_session_exits_alike)
{
    static gpuipc_pair pair;
    const char *env[] = {sessions[_i].env, NULL};
    const char *cenv[] = {sessions[_i].cenv, NULL};
    const char *args[] = {"--timeout", "20", NULL};
    const char *cargs[] = {"--timeout", "20", NULL};
    char sock[64];
    gpuipc_err err;
    int k;

    snprintf(sock, sizeof(sock), "@gpuipc-gpu-2t-%d-%d", (int)getpid(), _i);
    ck_assert_int_eq(gpuipc_pair_run_env(th_program(), sock, args, cargs,
                                         sessions[_i].env ? env : NULL,
                                         sessions[_i].cenv ? cenv : NULL, 60, 10, &pair, &err),
                     0);
    for (k = 0; k < 2; k++)
        ck_assert_msg(pair.proc[k].exited && WIFEXITED(pair.proc[k].status) &&
                      WEXITSTATUS(pair.proc[k].status) == 1, "%s: %s status 0x%x:\n%s",
                      sessions[_i].why, k ? "consumer" : "producer",
                      (unsigned)pair.proc[k].status, pair.proc[k].out);
    ck_assert_msg(strstr(pair.proc[1].out, "the producer concluded FAIL") != NULL,
                  "%s: consumer:\n%s", sessions[_i].why, pair.proc[1].out);
    ck_assert_int_eq(pair.leftover, 0);
}
END_TEST

/* ipc-event: the consumer's verify waits for the producer's fill on the GPU
 * alone. With the event recorded before about a second of slow fills, the
 * wait orders nothing, and the consumer must find the bytes not yet there. */
START_TEST(test_gpu_ipc_event_orders_the_consumer_after_the_fill)
{
    const char *args[] = {"--only", "ipc-event", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    out_has_row("ipc-event", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    OUT_HAS("its verify ordered after the producer's fill by the event");
}
END_TEST

START_TEST(test_gpu_ipc_event_recorded_too_early_is_caught)
{
    const char *env[] = {"GPUIPC_SABOTAGE=producer:early-event", NULL};
    const char *args[] = {"--only", "ipc-event", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("SABOTAGE: the event recorded before ");
    ck_assert_msg(th_line_has(run.out, "consumer", "FAIL verify: the producer's bytes: "),
                  "the consumer did not find the bytes missing:\n%s", run.out);
    out_has_row("ipc-event", "FAIL");
    OUT_HAS("consumer: exited 1");
    ck_assert_msg(strstr(run.out, "leaked") == NULL, "a leak:\n%s", run.out);
}
END_TEST

/* ---- the container matrix: every mechanism across every split ---- */

static const char *const ct_mechs[] = {
    "vmm", "vmm-pidfd", "vmm-chunks", "vmm-offset", "vmm-compressible", "vmm-host-numa",
    "vmm-alias", "vmm-readonly", "legacy-ipc", "mempool-ipc", "ipc-event", "fabric", "memfd",
    "memfd-pidfd"};
#define CT_MECHS "vmm,vmm-pidfd,vmm-chunks,vmm-offset,vmm-compressible,vmm-host-numa," \
                 "vmm-alias,vmm-readonly,legacy-ipc,mempool-ipc,ipc-event,fabric,memfd," \
                 "memfd-pidfd"
#define N_CT_MECHS (sizeof(ct_mechs) / sizeof(ct_mechs[0]))

static ct_run ct_runs[16];

/* Every split: a session where one can be had, both sides exiting with its
 * status; every FAIL and SKIP with a cause and a fix, each written once;
 * then the table, on stdout and in $GPUIPC_CONTAINER_TABLE if set. */
START_TEST(test_gpu_container_matrix)
{
    const char *table = getenv("GPUIPC_CONTAINER_TABLE");
    char why[256];
    size_t j, i;

    ck_assert_uint_le(ct_nsplits, sizeof(ct_runs) / sizeof(ct_runs[0]));
    for (j = 0; j < ct_nsplits; j++) {
        const ct_split *s = &ct_splits[j];
        ct_run *r = &ct_runs[j];

        ck_assert_msg(ct_run_split(th_program(), s, CT_MECHS, "64M", s->no_session ? 3 : 30, r,
                                   why, sizeof(why)) == 0, "%s: %s", s->name, why);
        if (s->no_session) {
            ck_assert_msg(ct_exit(r, 1) == 1 &&
                          strstr(r->pair.proc[1].out, "an abstract name belongs to one network "
                                                      "namespace"),
                          "%s: consumer:\n%s", s->name, r->pair.proc[1].out);
            continue;
        }
        ck_assert_msg(ct_exit(r, 0) >= 0 && ct_exit(r, 0) == ct_exit(r, 1),
                      "%s: producer %d, consumer %d:\n%s\n%s", s->name, ct_exit(r, 0),
                      ct_exit(r, 1), r->pair.proc[0].out, r->pair.proc[1].out);
        ck_assert_msg(r->nrows == N_CT_MECHS, "%s: %zu summary rows:\n%s", s->name, r->nrows,
                      r->pair.proc[0].out);
        for (i = 0; i < r->nrows; i++) {
            const ct_row *row = &r->rows[i];
            const char *first;

            if (strcmp(row->result, "PASS") == 0)
                continue;
            ck_assert_msg(strncmp(row->cause, "cause: ", 7) == 0 && strstr(row->cause, "; fix: "),
                          "%s: %s %s without a cause and a fix: '%s'\n%s", s->name, row->mech,
                          row->result, row->reason, r->pair.proc[0].out);
            first = strstr(r->pair.proc[0].out, row->cause);
            ck_assert_msg(first != NULL && strstr(first + 1, row->cause) == NULL,
                          "%s: the cause of %s is not written exactly once:\n%s", s->name,
                          row->mech, r->pair.proc[0].out);
        }
        /* On one host with no boundary, what runs on this GPU passes. */
        if (j == 0)
            for (i = 0; i < N_RUNNABLE; i++) {
                const ct_row *row = ct_row_of(r, runnable[i]);

                ck_assert_msg(row && strcmp(row->result, "PASS") == 0, "none: %s:\n%s",
                              runnable[i], r->pair.proc[0].out);
            }
    }
    ct_table(stdout, ct_mechs, N_CT_MECHS, ct_runs);
    if (table != NULL) {
        FILE *f = fopen(table, "w");

        ck_assert_msg(f != NULL, "%s: cannot write", table);
        ct_table(f, ct_mechs, N_CT_MECHS, ct_runs);
        fclose(f);
    }
}
END_TEST

int main(void)
{
    const char *args[] = {"--list", NULL};
    Suite *s = suite_create("gpu");
    TCase *tc = tcase_create("vmm");
    SRunner *sr;
    int failed;

    /* A view operation without a held buffer aborts (session/role.h). */
    setenv("GPUIPC_TEST_ABORT", "1", 1);
    /* Skip, visibly, where there is nothing to test. */
    if (th_spawn(&run, args, NULL, 60, 1, NULL, NULL) != 0 ||
        strstr(run.out, "  vmm              yes") == NULL) {
        printf("SKIP: check_gpu: vmm cannot run here (see ./gpuipc_test --list)\n");
        return 77;
    }
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_gpu_default_run_passes_both_ways);
    tcase_add_test(tc, test_gpu_default_run_proves_every_gpu);
    tcase_add_test(tc, test_gpu_pairs_ring_keeps_the_ring);
    tcase_add_test(tc, test_gpu_device_narrows_the_run);
    tcase_add_test(tc, test_gpu_4g_passes_both_ways);
    tcase_add_test(tc, test_gpu_vmm_and_memfd_in_one_session);
    tcase_add_loop_test(tc, test_gpu_sabotage_is_caught, 0, N_WRITERS * N_SABOTAGES);
    tcase_add_loop_test(tc, test_gpu_sabotage_is_caught_across_gpus, 0, N_CROSS_SABOTAGES);
    tcase_add_test(tc, test_gpu_offset_passes_or_names_the_refusal);
    tcase_add_test(tc, test_gpu_4096_chunks_pass);
    tcase_add_test(tc, test_gpu_destructive_fault_is_the_expected_outcome);
    tcase_add_loop_test(tc, test_gpu_destructive_sabotage_is_caught, 0, 2); /* producer's */
    tcase_add_test(tc, test_gpu_pairs_pass_or_need_two_gpus);
    tcase_add_test(tc, test_gpu_pairs_link_figures_hold);
    tcase_add_test(tc, test_gpu_min_gbps_fails_a_slow_pair);
    tcase_add_test(tc, test_gpu_list_names_the_modes);
    tcase_add_test(tc, test_gpu_brief_line_and_result_document);
    tcase_add_test(tc, test_gpu_list_json_describes_the_devices);
    tcase_add_loop_test(tc, test_gpu_chunk_order_is_caught, 0, 2);
    tcase_add_test(tc, test_gpu_chunks_under_a_low_fd_limit_fail_cleanly);
    tcase_add_test(tc, test_gpu_readonly_refuses_writes);
    tcase_add_loop_test(tc, test_gpu_readonly_sabotage_is_caught, 0, 2); /* producer's */
    tcase_add_loop_test(tc, test_gpu_fabric_needs_a_channel_and_passes_with_one, 0, 2);
    tcase_add_test(tc, test_gpu_require_turns_a_skip_into_a_failure);
    tcase_add_test(tc, test_gpu_expect_gpus_fails_a_missing_gpu);
    tcase_add_test(tc, test_gpu_legacy_ipc_shows_the_vmm_refusal);
    tcase_add_test(tc, test_gpu_ipc_event_orders_the_consumer_after_the_fill);
    tcase_add_test(tc, test_gpu_ipc_event_recorded_too_early_is_caught);
    tcase_add_test(tc, test_gpu_compressible_reports_what_was_granted);
    tcase_add_test(tc, test_gpu_host_numa_is_shared_by_cpus_and_gpu);
    tcase_add_test(tc, test_gpu_alias_reads_what_the_other_mapping_wrote);
    tcase_add_test(tc, test_gpu_consumer_killed_mid_scenario_is_reported);
    tcase_add_loop_test(tc, test_gpu_a_wedged_driver_call_ends_by_the_deadline, 0,
                        (int)(sizeof(wedges) / sizeof(wedges[0])));
    tcase_add_test(tc, test_gpu_ctrl_c_during_a_soak_stops_both_within_2s);
    tcase_add_loop_test(tc, test_gpu_survivor_reports_a_dead_peer, 0,
                        (int)(sizeof(deaths) / sizeof(deaths[0])));
    tcase_add_test(tc, test_gpu_self_test_covers_the_grid_stride_loop);
    tcase_add_test(tc, test_gpu_three_runs_beside_a_churning_process_pass);
    tcase_add_loop_test(tc, test_gpu_every_leak_is_named, 0, 4 * N_LEAK_KINDS);
    tcase_add_loop_test(tc, test_gpu_wrong_kind_offer_is_refused, 0,
                        N_RUNNABLE * N_OFFER_SABOTAGES);
    tcase_add_loop_test(tc, test_gpu_one_wrong_word_is_found_by_its_index, 0,
                        (int)(sizeof(flips) / sizeof(flips[0])));
    tcase_add_loop_test(tc, test_gpu_a_reader_that_did_not_read_fails, 0,
                        (int)(sizeof(readers) / sizeof(readers[0])));
    tcase_add_loop_test(tc, test_gpu_two_terminal_session_exits_alike, 0,
                        (int)(sizeof(sessions) / sizeof(sessions[0])));
    {
        TCase *ct = tcase_create("containers");
        char why[256];

        tcase_set_timeout(ct, 600);
        if (ct_unshare_works(why, sizeof(why)))
            tcase_add_test(ct, test_gpu_container_matrix);
        else
            printf("NOT RUN: the container matrix: %s\n", why);
        suite_add_tcase(s, ct);
    }
    suite_add_tcase(s, tc);
    /* A failed assertion names the run's output, which a node of several
     * GPUs makes long: above Check's default of 4 KiB a message ends the
     * test as "Early exit with return value 2", which says nothing. */
    check_set_max_msg_size(1u << 20);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_VERBOSE);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
