# SPDX-License-Identifier: Apache-2.0
# manifests.py PROGRAM: the Kubernetes manifests of deploy/k8s, read as YAML
# (PyYAML's safe loader: well-formed, and the fields a Job, DaemonSet, Pod,
# ComputeDomain and MPIJob need), and each container's command run as
# written against PROGRAM, as gpuipc_test on PATH. No cluster and no GPU
# here, so only the manifests' environment is changed: GPUIPC_ARGS="--only
# memfd --size 1M" (host memory), GPUIPC_EXPECT_GPUS=none, the socket, status
# and --json paths to temporary ones, the interval to 0.2 s, the MPIJob's
# nodes and GPUs to one node of two, and what Open MPI's mpirun needs here
# (root, fewer cores than ranks). The Job also runs as written, where no GPU
# must be a failure, and the MPIJob's launcher with its own mechanisms (no
# GPU: a skip). Where root can make PID namespaces, the two pods of
# serve-connect-apart.yaml each get their own, both pid 1 as in two pods.
# The MPIJob's launcher runs where mpirun and libpmix.so.2 are installed
# (elsewhere the summary says NOT RUN and why).
# Exits 1 at the first difference; without PyYAML, says NOT RUN (exit 0).
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:
    print("manifests: NOT RUN: no PyYAML here (Debian: python3-yaml)")
    sys.exit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K8S = os.path.join(ROOT, "deploy", "k8s")
MEMFD = "--only memfd --size 1M"


def fail(msg):
    print("manifests: " + msg)
    sys.exit(1)


def version():
    with open(os.path.join(ROOT, "lib", "app", "version.h")) as f:
        return re.search(r'#define GPUIPC_VERSION "([^"]+)"', f.read()).group(1)


# Each kind the manifests use, and its API group and version.
KINDS = {"Job": "batch/v1", "DaemonSet": "apps/v1", "Pod": "v1",
         "ComputeDomain": "resource.nvidia.com/v1beta1", "MPIJob": "kubeflow.org/v2beta1"}


def pod_specs(doc):
    """Each pod a document makes, as (its name, its pod spec): an MPIJob's
    launcher and workers; a ComputeDomain makes none of its own."""
    name = doc["metadata"]["name"]
    if doc["kind"] == "Pod":
        return [(name, doc["spec"])]
    if doc["kind"] == "ComputeDomain":
        return []
    if doc["kind"] == "MPIJob":
        return [(f"{name}/{role}", r["template"]["spec"])
                for role, r in doc["spec"]["mpiReplicaSpecs"].items()]
    return [(name, doc["spec"]["template"]["spec"])]


def check_claims(where, spec):
    """A pod's resource claims (DRA): each names one claim or one template,
    and a container claims only what its pod declares."""
    declared = set()
    for rc in spec.get("resourceClaims", []):
        if not isinstance(rc.get("name"), str):
            fail(f"{where}: a resource claim without a name")
        if ("resourceClaimName" in rc) == ("resourceClaimTemplateName" in rc):
            fail(f"{where}: resource claim {rc['name']} names neither or both of a claim and a template")
        declared.add(rc["name"])
    for c in spec["containers"]:
        for cl in c.get("resources", {}).get("claims", []):
            if cl.get("name") not in declared:
                fail(f"{where}/{c.get('name')}: claims {cl.get('name')}, which is not a resource "
                     "claim of the pod")


def check_kind(name, doc):
    """The fields of a ComputeDomain and an MPIJob that the manifest uses."""
    spec = doc["spec"]
    if doc["kind"] == "ComputeDomain":
        if not isinstance(spec.get("numNodes"), int) or spec["numNodes"] < 0:
            fail(f"{name}: ComputeDomain numNodes {spec.get('numNodes')} is not a count")
        if not isinstance(spec.get("channel", {}).get("resourceClaimTemplate", {}).get("name"), str):
            fail(f"{name}: ComputeDomain without spec.channel.resourceClaimTemplate.name")
    if doc["kind"] == "MPIJob":
        roles = spec.get("mpiReplicaSpecs", {})
        if set(roles) != {"Launcher", "Worker"}:
            fail(f"{name}: MPIJob replicas {sorted(roles)}, not Launcher and Worker")
        if roles["Launcher"].get("replicas") != 1:
            fail(f"{name}: MPIJob with {roles['Launcher'].get('replicas')} launchers, not 1")
        if not isinstance(spec.get("slotsPerWorker"), int) or spec["slotsPerWorker"] < 1:
            fail(f"{name}: MPIJob slotsPerWorker {spec.get('slotsPerWorker')} is not a count")
        if not isinstance(roles["Worker"].get("replicas"), int) or roles["Worker"]["replicas"] < 1:
            fail(f"{name}: MPIJob worker replicas {roles['Worker'].get('replicas')} is not a count")


def check_doc(name, doc):
    """The fields the manifests rely on, present and of the right type."""
    for key in ("apiVersion", "kind", "metadata", "spec"):
        if key not in doc:
            fail(f"{name}: a document without {key}")
    if KINDS.get(doc["kind"]) != doc["apiVersion"]:
        fail(f"{name}: {doc['kind']} with apiVersion {doc['apiVersion']}")
    check_kind(name, doc)
    for pod, spec in pod_specs(doc):
        volumes = {v["name"] for v in spec.get("volumes", [])}
        check_claims(f"{name}: {pod}", spec)
        for c in spec["containers"]:
            where = f"{name}: {pod}/{c.get('name')}"
            if not c.get("image", "").endswith(":" + version()):
                fail(f"{where}: image {c.get('image')} is not version {version()} (lib/app/version.h)")
            if not isinstance(c.get("command"), list) or not all(isinstance(a, str) for a in c["command"]):
                fail(f"{where}: command is not a list of strings")
            for e in c.get("env", []):
                if not isinstance(e.get("value"), str):
                    fail(f"{where}: env {e.get('name')} has no string value (quote numbers)")
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    fail(f"{where}: mounts {m['name']}, which is not a volume of the pod")
    if doc["kind"] == "DaemonSet":
        labels = doc["spec"]["template"]["metadata"]["labels"]
        if doc["spec"]["selector"]["matchLabels"].items() - labels.items():
            fail(f"{name}: the selector does not match the template's labels")


def load():
    docs = {}
    for f in sorted(os.listdir(K8S)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(K8S, f)) as fh:
            try:
                docs[f] = [d for d in yaml.safe_load_all(fh) if d is not None]
            except yaml.YAMLError as e:
                fail(f"{f}: not well-formed YAML: {e}")
        for d in docs[f]:
            check_doc(f, d)
    for f in ("job.yaml", "daemonset.yaml", "serve-connect-shared.yaml", "serve-connect-apart.yaml",
              "mpijob-computedomain.yaml"):
        if f not in docs:
            fail(f"deploy/k8s/{f} is missing")
    return docs


def container(docs, f, name):
    for d in docs[f]:
        for _, spec in pod_specs(d):
            for c in spec["containers"]:
                if c["name"] == name:
                    yield c


def of_kind(docs, f, kind):
    ds = [d for d in docs[f] if d["kind"] == kind]
    if len(ds) != 1:
        fail(f"{f}: {len(ds)} documents of kind {kind}, not 1")
    return ds[0]


def one(docs, f, name):
    cs = list(container(docs, f, name))
    if len(cs) != 1:
        fail(f"{f}: {len(cs)} containers named {name}, not 1")
    return cs[0]


def argv(c, env):
    """command + args, with Kubernetes' $(VAR) expansion from env."""
    def expand(a):
        return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), a)
    return [expand(a) for a in c["command"] + c.get("args", [])]


def environ(c, bindir, **over):
    env = {"PATH": bindir + ":" + os.environ["PATH"], "HOME": "/root", "LANG": "C"}
    env.update({e["name"]: e["value"] for e in c.get("env", [])})
    env.update(over)
    return env


def run(c, bindir, timeout=30, prefix=(), **over):
    env = environ(c, bindir, **over)
    p = subprocess.run(list(prefix) + argv(c, env), env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def start(c, bindir, prefix=(), **over):
    env = environ(c, bindir, **over)
    return subprocess.Popen(list(prefix) + argv(c, env), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def run_job(c, bindir, timeout=60, **over):
    """run(), in a process group of its own, all of it killed at the
    timeout: mpirun's ranks are its children."""
    p = start(c, bindir, **over)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        fail(f"{c['name']}: not ended within {timeout} s: {out}")
    return p.returncode, out


def pmix_here():
    if shutil.which("mpirun") is None:
        return "no mpirun"
    try:
        ctypes.CDLL("libpmix.so.2")
    except OSError:
        return "no libpmix.so.2"
    return None


def check_mpijob(docs, bindir, tmp):
    """mpijob-computedomain.yaml: the counts agree, the workers claim the
    ComputeDomain's channel and a GPU per rank, and the launcher's command,
    run here with one node of two ranks: its own mechanisms (no GPU: a
    skip), then memfd (a pass, and rank 0's --json)."""
    f = "mpijob-computedomain.yaml"
    cd, mj = of_kind(docs, f, "ComputeDomain"), of_kind(docs, f, "MPIJob")
    worker = mj["spec"]["mpiReplicaSpecs"]["Worker"]
    nodes, slots = worker["replicas"], mj["spec"]["slotsPerWorker"]
    template = cd["spec"]["channel"]["resourceClaimTemplate"]["name"]
    if cd["spec"]["numNodes"] != nodes:
        fail(f"{f}: the ComputeDomain's numNodes {cd['spec']['numNodes']} is not the "
             f"{nodes} workers")
    wspec = worker["template"]["spec"]
    channel = {rc["name"] for rc in wspec.get("resourceClaims", [])
               if rc.get("resourceClaimTemplateName") == template}
    if not channel:
        fail(f"{f}: the workers claim nothing of the ComputeDomain's template {template}")
    for c in wspec["containers"]:
        if not channel & {cl.get("name") for cl in c.get("resources", {}).get("claims", [])}:
            fail(f"{f}: worker container {c['name']} does not claim the IMEX channel")
        gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
        if gpus != slots:
            fail(f"{f}: worker container {c['name']} asks for {gpus} GPUs, not slotsPerWorker "
                 f"{slots}")
    launcher = one(docs, f, "launcher")
    env = environ(launcher, bindir)
    if env.get("GPUIPC_NODES") != str(nodes) or env.get("GPUIPC_GPUS_PER_NODE") != str(slots):
        fail(f"{f}: the launcher's GPUIPC_NODES {env.get('GPUIPC_NODES')} and "
             f"GPUIPC_GPUS_PER_NODE {env.get('GPUIPC_GPUS_PER_NODE')} are not the {nodes} "
             f"workers and {slots} slots")
    if "--only fabric" not in env.get("GPUIPC_ARGS", ""):
        fail(f"{f}: the launcher's GPUIPC_ARGS '{env.get('GPUIPC_ARGS')}' is not --only fabric")
    why = pmix_here()
    if why:
        return f"mpijob (its counts and claims; the launcher NOT RUN: {why})"
    doc = os.path.join(tmp, "ranks.json")
    here = dict(GPUIPC_NODES="1", GPUIPC_GPUS_PER_NODE="2", GPUIPC_JSON=doc,
                OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1")

    def result(what, rc, out):
        try:
            with open(doc) as fh:
                d = json.load(fh)
        except (OSError, ValueError) as e:
            fail(f"{f}: the launcher {what} exited {rc}; rank 0's --json {doc}: {e}: {out}")
        os.unlink(doc)
        if not isinstance(d, dict) or d.get("schema") != "gpuipc-ranks/1":
            fail(f"{f}: the launcher {what} exited {rc}; its --json is not a --ranks run's "
                 f"(gpuipc-ranks/1): {out}")
        return d

    # As written (--only fabric), on no GPU: every pair skipped, exit 77.
    rc, out = run_job(launcher, bindir, CUDA_VISIBLE_DEVICES="", **here)
    d = result("as written", rc, out)
    mechs = {s["mechanism"] for p in d["pairs"] for s in p["scenarios"]}
    if rc != 77 or d["verdict"] != "SKIP" or d["size"] != 2 or mechs != {"fabric"}:
        fail(f"{f}: the launcher as written (no GPU here) exited {rc}, verdict {d['verdict']}, "
             f"{d['size']} ranks, mechanisms {sorted(mechs)}, not 77, SKIP, 2, fabric: {out}")
    rc, out = run_job(launcher, bindir, GPUIPC_ARGS=MEMFD, **here)
    d = result("on memfd", rc, out)
    if rc != 0 or "result: PASS: 2 ranks, 2 ordered pairs: 2 proven" not in out or \
            d["verdict"] != "PASS" or d["pairs_proven"] != 2:
        fail(f"{f}: the launcher on memfd exited {rc}, verdict {d['verdict']}, "
             f"{d['pairs_proven']} pairs proven, not 0, PASS, 2: {out}")
    return ("mpijob (counts and claims agree; its launcher's mpirun, 2 ranks: as written SKIP "
            "for want of GPUs, on memfd PASS with rank 0's --json)")


def pid_namespaces_work():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    p = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "echo $$"],
                       capture_output=True, text=True)
    return p.returncode == 0 and p.stdout.strip() == "1"


def main():
    prog = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "./gpuipc_test")
    docs = load()
    tmp = tempfile.mkdtemp(prefix="gpuipc-manifests.")
    said = []
    try:
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        os.symlink(prog, os.path.join(bindir, "gpuipc_test"))

        # job.yaml: as written, no GPU is a failure (exit 1) that names the
        # expected count; on memfd, a pass.
        job = one(docs, "job.yaml", "gpuipc-test")
        want = job["env"][0]["value"] if job["env"][0]["name"] == "GPUIPC_EXPECT_GPUS" else "?"
        rc, out = run(job, bindir)
        if rc != 1 or not out.startswith(f"FAIL: no scenario ran: --expect-gpus {want}"):
            fail(f"job.yaml as written (no GPU here) exited {rc}, not 1 naming --expect-gpus: {out}")
        rc, out = run(job, bindir, GPUIPC_EXPECT_GPUS="none", GPUIPC_ARGS=MEMFD)
        if rc != 0 or not out.startswith("PASS: 1 passed") or out.count("\n") != 1:
            fail(f"job.yaml on memfd exited {rc}, not 0 with one PASS line: {out}")
        said.append("job (as written: FAIL for want of GPUs; on memfd: PASS)")

        # daemonset.yaml: a check per interval, the status file while the
        # last one passed, gone after a failure; SIGTERM ends it with 0.
        ds = one(docs, "daemonset.yaml", "gpuipc-test")
        status_dir = environ(ds, bindir)["GPUIPC_STATUS_DIR"]
        probe = ds["readinessProbe"]["exec"]["command"]
        if probe != ["test", "-e", status_dir + "/pass"]:
            fail(f"daemonset.yaml: the readiness probe {probe} does not test {status_dir}/pass")
        if status_dir not in [m["mountPath"] for m in ds["volumeMounts"]]:
            fail(f"daemonset.yaml: {status_dir} is not a mounted volume")
        status = os.path.join(tmp, "status")
        for sabotage, want_pass in (("", True), ("consumer:flip-one", False)):
            over = dict(GPUIPC_EXPECT_GPUS="none", GPUIPC_ARGS=MEMFD, GPUIPC_INTERVAL="0.2",
                        GPUIPC_STATUS_DIR=status)
            if sabotage:
                over["GPUIPC_SABOTAGE"] = sabotage
            p = start(ds, bindir, **over)
            time.sleep(2.5)
            passed = os.path.exists(os.path.join(status, "pass"))
            # The kubelet's SIGTERM goes to the container's first process.
            p.send_signal(signal.SIGTERM)
            try:
                out, _ = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                fail("daemonset.yaml: the loop did not end within 10 s of SIGTERM")
            finally:
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # its last sleep, if still there
                except ProcessLookupError:
                    pass
            lines = [ln for ln in out.splitlines() if ln]
            verdict = "PASS: 1 passed" if want_pass else "FAIL: 0 passed, 1 failed"
            if len(lines) < 2 or not all(ln.startswith(verdict) for ln in lines):
                fail(f"daemonset.yaml{' with ' + sabotage if sabotage else ''}: not two or more "
                     f"'{verdict}' lines in 2.5 s: {out}")
            if passed != want_pass:
                fail(f"daemonset.yaml: the status file {'is missing after passes' if want_pass else 'stayed after failures'}")
            if p.returncode != 0:
                fail(f"daemonset.yaml: SIGTERM ended the loop with {p.returncode}, not 0")
        said.append("daemonset (a check every 0.2 s, Ready while passing, not after a failure, SIGTERM ends it)")

        # The pairs: the producer and the consumer as two processes.
        pidns = pid_namespaces_work()
        for f, sock in (("serve-connect-shared.yaml", f"@gpuipc-manifests-{os.getpid()}"),
                        ("serve-connect-apart.yaml", None)):
            prod, cons = one(docs, f, "producer"), one(docs, f, "consumer")
            if sock is None:
                d = os.path.join(tmp, "socket-dir")
                os.mkdir(d, 0o700)
                sock = os.path.join(d, "sock")
                written = environ(prod, bindir)["GPUIPC_SOCKET"]
                mounts = [m["mountPath"] for m in prod["volumeMounts"] + cons["volumeMounts"]]
                if mounts.count(os.path.dirname(written)) != 2:
                    fail(f"{f}: the socket {written} is not in a directory both pods mount")
            # Apart: each in a PID namespace of its own, pid 1 (as root).
            prefix = ("unshare", "--pid", "--fork", "--mount-proc") if f.endswith("apart.yaml") and pidns else ()
            p = start(prod, bindir, prefix=prefix, GPUIPC_SOCKET=sock, GPUIPC_ARGS=MEMFD)
            rc, cout = run(cons, bindir, timeout=60, prefix=prefix, GPUIPC_SOCKET=sock)
            try:
                pout, _ = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                fail(f"{f}: the producer did not end")
            if p.returncode != 0 or "result: PASS: 1 passed" not in pout:
                fail(f"{f}: the producer exited {p.returncode}: {pout}")
            if rc != 0 or "result: PASS" not in cout:
                fail(f"{f}: the consumer exited {rc}: {cout}")
            if prefix and "producer pid 0 " not in cout:
                fail(f"{f}: the consumer sees the producer's pid, not 0 (another PID namespace): {cout}")
        said.append("both serve/connect pairs" +
                    (" (apart: each pid 1 in its own PID namespace)" if pidns else
                     " (apart: NOT RUN in PID namespaces of their own: needs root and unshare)"))
        said.append(check_mpijob(docs, bindir, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("manifests: deploy/k8s is well-formed YAML; ran " + ", ".join(said))


if __name__ == "__main__":
    main()
