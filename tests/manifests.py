# SPDX-License-Identifier: Apache-2.0
# manifests.py PROGRAM: the Kubernetes manifests of deploy/k8s, read as YAML
# (PyYAML's safe loader: well-formed, and the fields a Job, DaemonSet and Pod
# need), and each container's command run as written against PROGRAM, as
# gpuipc_test on PATH. No cluster and no GPU here, so only the manifests'
# environment is changed: GPUIPC_ARGS="--only memfd --size 1M" (host memory),
# GPUIPC_EXPECT_GPUS=none, the socket and status paths to temporary ones, the
# interval to 0.2 s. The Job also runs as written, where no GPU must be a
# failure. Where root can make PID namespaces, the two pods of
# serve-connect-apart.yaml each get their own, both pid 1 as in two pods.
# Exits 1 at the first difference; without PyYAML, says NOT RUN (exit 0).
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


def pod_spec(doc):
    if doc["kind"] == "Pod":
        return doc["spec"]
    return doc["spec"]["template"]["spec"]


def check_doc(name, doc):
    """The fields the manifests rely on, present and of the right type."""
    for key in ("apiVersion", "kind", "metadata", "spec"):
        if key not in doc:
            fail(f"{name}: a document without {key}")
    want = {"Job": "batch/v1", "DaemonSet": "apps/v1", "Pod": "v1"}
    if want.get(doc["kind"]) != doc["apiVersion"]:
        fail(f"{name}: {doc['kind']} with apiVersion {doc['apiVersion']}")
    spec = pod_spec(doc)
    volumes = {v["name"] for v in spec.get("volumes", [])}
    for c in spec["containers"]:
        where = f"{name}: {doc['metadata']['name']}/{c.get('name')}"
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
    for f in ("job.yaml", "daemonset.yaml", "serve-connect-shared.yaml", "serve-connect-apart.yaml"):
        if f not in docs:
            fail(f"deploy/k8s/{f} is missing")
    return docs


def container(docs, f, name):
    for d in docs[f]:
        for c in pod_spec(d)["containers"]:
            if c["name"] == name:
                yield c


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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("manifests: deploy/k8s is well-formed YAML; ran " + ", ".join(said))


if __name__ == "__main__":
    main()
