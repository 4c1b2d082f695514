/* SPDX-License-Identifier: Apache-2.0 */
/* test_causes.c: the causes real nodes meet, made for real where this
 * machine allows (a small or read-only /dev/shm in a private mount
 * namespace, the environment) and otherwise from files the test controls
 * through the test-only hook GPUIPC_TEST_SYSROOT (a WSL2 kernel, SELinux,
 * the boot id, ACS and the IOMMU on a PCIe path): each shows in the facts,
 * the result document and the summary. The rules that turn them into a
 * cause are the facts suite's. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/facts.h"
#include "core/pcipath.h"
#include "helpers.h"
#include "jschema.h"
#include "suites.h"

static th_run run;
static char root[64];

#define OUT_HAS(s) ck_assert_msg(strstr(run.out, (s)) != NULL, "no '%s' in:\n%s", (s), run.out)

/* Removes the test's own directory (made by make_root, never another). */
static void remove_root(void)
{
    th_remove_tree(root);
}

static void make_root(void)
{
    snprintf(root, sizeof(root), "/tmp/gpuipc-causes-%d", (int)getpid());
    ck_assert_msg(mkdir(root, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", root,
                  strerror(errno));
}

/* Writes text to root/rel, making the directories on the way. */
static void put(const char *rel, const void *text, size_t n)
{
    char path[512], *p;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

static void put_text(const char *rel, const char *text)
{
    put(rel, text, strlen(text));
}

static void link_at(const char *target, const char *rel)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    ck_assert_msg(symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
}

/* The document at path, parsed and held to the schema. */
static jnode *doc_of(const char *path)
{
    char why[512];
    jnode *doc = th_result_doc(path, why, sizeof(why));

    ck_assert_msg(doc != NULL, "%s: %s", path, why);
    return doc;
}

static const jnode *self_facts(const jnode *doc)
{
    return js_get(js_get(doc, "facts"), "self");
}

/* /dev/shm of 64 KiB, then read-only, in a private mount namespace: the
 * facts and the document say so, and the summary names what it does to
 * NCCL and PyTorch, with the fix. */
static const char *const shm_cases[] = {"size=64k", "size=64k,ro"};

START_TEST(test_causes_a_small_or_read_only_dev_shm)
{
    char path[128], why[160];
    const char *args[] = {"--only", "memfd", "--size", "1M", "--json", path, NULL};
    const jnode *shm;
    jnode *doc;

    make_root();
    snprintf(path, sizeof(path), "%s/r.json", root);
    ck_assert_msg(th_private_mounts(why, sizeof(why)) == 0, "%s", why);
    ck_assert_msg(mount("tmpfs", "/dev/shm", "tmpfs", _i ? MS_RDONLY : 0, "size=64k") == 0,
                  "mount tmpfs /dev/shm: %s", strerror(errno));
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "%s: status 0x%x:\n%s", shm_cases[_i], run.status,
                  run.out);
    OUT_HAS(_i ? "this node: /dev/shm 64 KiB (64 KiB free), read-only: NCCL's "
               : "this node: /dev/shm 64 KiB (64 KiB free): NCCL's shared-memory "
                 "transport and PyTorch's DataLoader workers need more (docker run "
                 "--shm-size=1g");
    doc = doc_of(path);
    shm = js_get(self_facts(doc), "shm");
    ck_assert(js_get(shm, "present") != NULL && js_num(js_get(shm, "size")) == 65536);
    ck_assert_msg(th_file_has(path, _i ? "\"read_only\": true" : "\"read_only\": false"),
                  "%s: read_only wrong", shm_cases[_i]);
    js_free(doc);
    remove_root();
}
END_TEST

/* A fake /proc, /sys and /dev: WSL2, SELinux enforcing, no /dev/shm, the
 * driver's device file present, a known boot id. */
START_TEST(test_causes_the_hook_gives_a_process_any_facts)
{
    char path[128], env[128];
    const char *args[] = {"--only", "memfd", "--size", "1M", "-v", "--json", path, NULL};
    const char *envs[] = {env, NULL};
    const jnode *self;
    jnode *doc;

    make_root();
    snprintf(path, sizeof(path), "%s/r.json", root);
    snprintf(env, sizeof(env), "GPUIPC_TEST_SYSROOT=%s/fake", root);
    put_text("fake/proc/sys/kernel/osrelease", "5.15.167.4-microsoft-standard-WSL2\n");
    put_text("fake/proc/sys/kernel/random/boot_id", "0123abcd-4567-89ab-cdef-0123456789ab\n");
    put_text("fake/sys/fs/selinux/enforce", "1");
    put_text("fake/dev/nvidiactl", "");
    ck_assert_int_eq(th_spawn(&run, args, envs, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("this node: no /dev/shm: NCCL's");
    doc = doc_of(path);
    self = self_facts(doc);
    ck_assert_str_eq(js_str(js_get(self, "kernel")), "5.15.167.4-microsoft-standard-WSL2");
    ck_assert_str_eq(js_str(js_get(self, "boot_id")), "0123abcd-4567-89ab-cdef-0123456789ab");
    ck_assert_str_eq(js_str(js_get(js_get(self, "device_files"), "nvidiactl")), "ok");
    ck_assert_str_eq(js_str(js_get(js_get(self, "device_files"), "nvidia_uvm")), "ENOENT");
    /* The consumer's facts came through HELLO with the same hook. */
    ck_assert_str_eq(js_str(js_get(js_get(js_get(doc, "facts"), "peer"), "boot_id")),
                     "0123abcd-4567-89ab-cdef-0123456789ab");
    js_free(doc);
    ck_assert_msg(th_file_has(path, "\"wsl\": true") &&
                  th_file_has(path, "\"selinux_enforcing\": true") &&
                  th_file_has(path, "\"present\": false"), "the document lacks a fact");
    remove_root();
}
END_TEST

/* The settings that change what NCCL and PyTorch do: recorded as found
 * (CUDA_DEVICE_MAX_CONNECTIONS too, which the program sets for itself once
 * it starts CUDA), and named in the summary. */
START_TEST(test_causes_the_environment_is_recorded_and_named)
{
    char path[128];
    const char *args[] = {"--only", "memfd,vmm", "--size", "1M", "--json", path, NULL};
    const char *envs[] = {"NCCL_P2P_DISABLE=1", "NCCL_CUMEM_ENABLE=0",
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", NULL};
    const jnode *env, *settings;
    jnode *doc;

    make_root();
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    unsetenv("CUDA_VISIBLE_DEVICES");
    snprintf(path, sizeof(path), "%s/r.json", root);
    ck_assert_int_eq(th_spawn(&run, args, envs, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("this node: NCCL_CUMEM_ENABLE=0: NCCL shares memory with legacy IPC handles");
    OUT_HAS("; NCCL_P2P_DISABLE=1: NCCL moves data between GPUs through host memory");
    OUT_HAS("; PYTORCH_CUDA_ALLOC_CONF expandable_segments: PyTorch allocates with VMM");
    doc = doc_of(path);
    env = js_get(doc, "environment");
    settings = js_get(env, "settings");
    ck_assert_str_eq(js_str(js_get(settings, "NCCL_P2P_DISABLE")), "1");
    ck_assert_str_eq(js_str(js_get(settings, "PYTORCH_CUDA_ALLOC_CONF")),
                     "expandable_segments:True");
    ck_assert_msg(js_str(js_get(settings, "CUDA_DEVICE_MAX_CONNECTIONS")) == NULL,
                  "CUDA_DEVICE_MAX_CONNECTIONS recorded as the program set it: %s",
                  js_str(js_get(settings, "CUDA_DEVICE_MAX_CONNECTIONS")));
    ck_assert_ptr_nonnull(strstr(js_str(js_get(env, "effects")), "NCCL_P2P_DISABLE=1"));
    js_free(doc);
    remove_root();
}
END_TEST

/* A configuration space image with ACS as the second extended capability,
 * its control word ctrl. */
static void acs_image(unsigned char *cfg, size_t n, unsigned ctrl)
{
    memset(cfg, 0, n);
    /* 0x100: AER (ID 1), next 0x140; 0x140: ACS (ID 0xd), next 0. */
    cfg[0x100] = 0x01;
    cfg[0x102] = 0x01 | (0x40 << 4 & 0xf0);
    cfg[0x103] = 0x140 >> 4 & 0xff;
    cfg[0x140] = 0x0d;
    cfg[0x142] = 0x01;
    cfg[0x146] = (unsigned char)(ctrl & 0xff);
    cfg[0x147] = (unsigned char)(ctrl >> 8);
}

START_TEST(test_causes_acs_is_read_from_the_configuration_space)
{
    static unsigned char cfg[4096];
    unsigned ctrl = 0;

    acs_image(cfg, sizeof(cfg), 0x1d);
    ck_assert_int_eq(gpuipc_pci_acs_control(cfg, sizeof(cfg), &ctrl), 1);
    ck_assert_uint_eq(ctrl, 0x1d);
    ck_assert_int_eq(gpuipc_pci_acs_control(cfg, 256, &ctrl), -1); /* not root: 256 bytes */
    cfg[0x140] = 0x0b;                                              /* no ACS in the chain */
    ck_assert_int_eq(gpuipc_pci_acs_control(cfg, sizeof(cfg), &ctrl), 0);
    cfg[0x142] = 0x01 | 0x00;
    cfg[0x143] = 0x10; /* next 0x100: a loop, which must end */
    ck_assert_int_eq(gpuipc_pci_acs_control(cfg, sizeof(cfg), &ctrl), 0);
}
END_TEST

/* The IMEX channels a process may open, read under the hook: channel0 and
 * channel5, and channel70 (beyond the mask: said as one of 64 or more);
 * names that are not "channel<N>" passed over; no directory: ENOENT and
 * none. */
START_TEST(test_causes_the_imex_channels_a_process_may_open)
{
    char env[128], text[64];
    gpuipc_facts f;

    make_root();
    snprintf(env, sizeof(env), "%s/fake", root);
    setenv("GPUIPC_TEST_SYSROOT", env, 1);
    gpuipc_facts_gather(&f);
    ck_assert_uint_eq(f.imex_errno, ENOENT);
    ck_assert_uint_eq(f.imex_channels, 0);
    ck_assert_str_eq(gpuipc_facts_imex_text(&f, text, sizeof(text)), "none");
    put_text("fake/dev/nvidia-caps-imex-channels/channel0", "");
    put_text("fake/dev/nvidia-caps-imex-channels/channel5", "");
    put_text("fake/dev/nvidia-caps-imex-channels/channel70", "");
    put_text("fake/dev/nvidia-caps-imex-channels/channel05", "");
    put_text("fake/dev/nvidia-caps-imex-channels/channelx", "");
    put_text("fake/dev/nvidia-caps-imex-channels/other3", "");
    gpuipc_facts_gather(&f);
    ck_assert_uint_eq(f.imex_errno, 0);
    ck_assert_uint_eq(f.imex_channels, (1ull << 0) | (1ull << 5));
    ck_assert(f.flags & GPUIPC_FACT_IMEX_MORE);
    ck_assert_str_eq(gpuipc_facts_imex_text(&f, text, sizeof(text)), "0, 5, one of 64 or more");
    unsetenv("GPUIPC_TEST_SYSROOT");
    remove_root();
}
END_TEST

/* A GPU behind two bridges, the upper one with ACS redirect on, in an
 * IOMMU group that translates; then the same path with ACS off and the
 * IOMMU in passthrough. */
START_TEST(test_causes_the_pcie_path_names_acs_and_the_iommu)
{
    static unsigned char cfg[4096];
    const char *top = "fake/sys/devices/pci0000:00/0000:00:01.0";
    char rel[256], text[512], env[128];

    make_root();
    snprintf(env, sizeof(env), "%s/fake", root);
    setenv("GPUIPC_TEST_SYSROOT", env, 1);
    acs_image(cfg, sizeof(cfg), GPUIPC_PCI_ACS_RR | GPUIPC_PCI_ACS_CR);
    snprintf(rel, sizeof(rel), "%s/config", top);
    put(rel, cfg, sizeof(cfg));
    acs_image(cfg, sizeof(cfg), 0x01); /* source validation only: no redirect */
    snprintf(rel, sizeof(rel), "%s/0000:01:00.0/config", top);
    put(rel, cfg, sizeof(cfg));
    snprintf(rel, sizeof(rel), "%s/0000:01:00.0/0000:02:00.0/config", top);
    put(rel, cfg, sizeof(cfg));
    put_text("fake/sys/kernel/iommu_groups/17/type", "DMA-FQ\n");
    snprintf(rel, sizeof(rel), "%s/0000:01:00.0/0000:02:00.0/iommu_group", top);
    link_at("../../../../../kernel/iommu_groups/17", rel);
    put_text("fake/sys/bus/pci/devices/.keep", "");
    link_at("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0",
            "fake/sys/bus/pci/devices/0000:02:00.0");

    ck_assert_int_eq(gpuipc_pci_path_describe("00000000:02:00.0", text, sizeof(text)), 2);
    ck_assert_str_eq(text, "IOMMU group 17, type DMA-FQ (translated: peer traffic may go "
                           "through it); ACS redirects peer traffic on 0000:00:01.0 (request, "
                           "completion)");

    acs_image(cfg, sizeof(cfg), 0);
    snprintf(rel, sizeof(rel), "%s/config", top);
    put(rel, cfg, sizeof(cfg));
    put_text("fake/sys/kernel/iommu_groups/17/type", "identity\n");
    ck_assert_int_eq(gpuipc_pci_path_describe("0000:02:00.0", text, sizeof(text)), 0);
    ck_assert_str_eq(text, "IOMMU group 17, type identity (passthrough); no ACS redirect on "
                           "the 2 bridges above 0000:02:00.0");
    ck_assert_int_eq(gpuipc_pci_path_describe("0000:03:00.0", text, sizeof(text)), 0);
    ck_assert_str_eq(text, "PCIe path of 0000:03:00.0 not in sysfs");
    ck_assert_int_eq(gpuipc_pci_path_describe("banana", text, sizeof(text)), 0);
    ck_assert_ptr_nonnull(strstr(text, "not a bus id"));
    unsetenv("GPUIPC_TEST_SYSROOT");
    remove_root();
}
END_TEST

/* Two GPUs under one PCIe switch: their peer traffic turns at the switch,
 * so ACS counts on its downstream ports (one redirects) and not on the root
 * port above it (which redirects too, as Linux sets it with an IOMMU). */
START_TEST(test_causes_a_pair_names_only_the_bridges_between_them)
{
    static unsigned char cfg[4096];
    const char *up = "fake/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    char rel[256], text[768], env[128];

    make_root();
    snprintf(env, sizeof(env), "%s/fake", root);
    setenv("GPUIPC_TEST_SYSROOT", env, 1);
    acs_image(cfg, sizeof(cfg), GPUIPC_PCI_ACS_RR | GPUIPC_PCI_ACS_CR); /* the root port */
    put("fake/sys/devices/pci0000:00/0000:00:01.0/config", cfg, sizeof(cfg));
    acs_image(cfg, sizeof(cfg), 0); /* the switch's upstream port */
    snprintf(rel, sizeof(rel), "%s/config", up);
    put(rel, cfg, sizeof(cfg));
    acs_image(cfg, sizeof(cfg), GPUIPC_PCI_ACS_RR); /* downstream port A */
    snprintf(rel, sizeof(rel), "%s/0000:02:00.0/config", up);
    put(rel, cfg, sizeof(cfg));
    acs_image(cfg, sizeof(cfg), 0x01); /* downstream port B: no redirect */
    snprintf(rel, sizeof(rel), "%s/0000:02:01.0/config", up);
    put(rel, cfg, sizeof(cfg));
    acs_image(cfg, sizeof(cfg), 0);
    snprintf(rel, sizeof(rel), "%s/0000:02:00.0/0000:03:00.0/config", up);
    put(rel, cfg, sizeof(cfg));
    snprintf(rel, sizeof(rel), "%s/0000:02:01.0/0000:04:00.0/config", up);
    put(rel, cfg, sizeof(cfg));
    put_text("fake/sys/bus/pci/devices/.keep", "");
    link_at("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0",
            "fake/sys/bus/pci/devices/0000:03:00.0");
    link_at("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0",
            "fake/sys/bus/pci/devices/0000:04:00.0");

    ck_assert_int_eq(gpuipc_pci_pair_describe("00000000:03:00.0", "0000:04:00.0", text,
                                              sizeof(text)), 1);
    ck_assert_str_eq(text, "0000:03:00.0: no IOMMU group (IOMMU off); 0000:04:00.0: no IOMMU "
                           "group (IOMMU off); ACS redirects peer traffic on 0000:02:00.0 "
                           "(request)");
    acs_image(cfg, sizeof(cfg), 0x01);
    snprintf(rel, sizeof(rel), "%s/0000:02:00.0/config", up);
    put(rel, cfg, sizeof(cfg));
    ck_assert_int_eq(gpuipc_pci_pair_describe("0000:03:00.0", "0000:04:00.0", text,
                                              sizeof(text)), 0);
    ck_assert_str_eq(text, "0000:03:00.0: no IOMMU group (IOMMU off); 0000:04:00.0: no IOMMU "
                           "group (IOMMU off); no ACS redirect on the 2 bridges between them "
                           "(below 0000:01:00.0)");
    unsetenv("GPUIPC_TEST_SYSROOT");
    remove_root();
}
END_TEST

Suite *causes_suite(void)
{
    Suite *s = suite_create("causes");
    TCase *tc = tcase_create("causes");

    char why[160];

    tcase_set_timeout(tc, 30);
    if (th_mounts_work(why, sizeof(why)))
        tcase_add_loop_test(tc, test_causes_a_small_or_read_only_dev_shm, 0,
                            (int)(sizeof(shm_cases) / sizeof(shm_cases[0])));
    else
        fprintf(stderr, "NOT RUN: causes: a /dev/shm of 64 KiB and a read-only one: %s\n", why);
    tcase_add_test(tc, test_causes_the_hook_gives_a_process_any_facts);
    tcase_add_test(tc, test_causes_the_environment_is_recorded_and_named);
    tcase_add_test(tc, test_causes_acs_is_read_from_the_configuration_space);
    tcase_add_test(tc, test_causes_the_pcie_path_names_acs_and_the_iommu);
    tcase_add_test(tc, test_causes_the_imex_channels_a_process_may_open);
    tcase_add_test(tc, test_causes_a_pair_names_only_the_bridges_between_them);
    suite_add_tcase(s, tc);
    return s;
}
