#!/usr/bin/env python3
"""ehprof agent's cgroup labels on real cgroups (cgroup v2, made here under
a scratch cgroup): a process in a cgroup named as kubelet's systemd driver
and containerd name a pod's container gets service_name pod/UID,
container_id and k8s_pod_uid; an unprivileged user (uid 65534) given a
delegated subtree (user@65534.service, as systemd delegates one) who names
cgroups inside it as a pod's container gets neither its fake id nor its
fake UID. Read from --output-dir's pprof files with `go tool pprof -tags`.

usage: agent_k8s_cgroups_priv_test.py EHPROF_BINARY
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

UNIFIED = next((p for p in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")
                if os.path.exists(os.path.join(p, "cgroup.procs")) and
                open("/proc/mounts").read().find(f" {p} cgroup2 ") >= 0), None)
UID = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
ID = "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e"
FAKE_UID = "deadbeef-0000-4000-8000-000000000001"
FAKE_ID = "d" * 64
BUSY = "import ctypes,sys; ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\nwhile True: pass"


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")


def pod_path(uid, cid):
    return (f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid.replace('-', '_')}.slice/"
            f"cri-containerd-{cid}.scope")


def tags(files, focus, ehprof):
    # The build directory's Go cache, as the C++ tests' (tests/test_support.cc:
    # GoToolPprof): pprof is built there once, not on each first use.
    env = dict(os.environ, GOCACHE=os.path.join(os.path.dirname(os.path.abspath(ehprof)), "gocache"),
               GOPROXY="off", GOFLAGS="")
    out = subprocess.run(["go", "tool", "pprof", "-tags", f"-tagfocus=comm={focus}", *files],
                         capture_output=True, text=True, timeout=300, env=env)
    check(out.returncode == 0, f"go tool pprof -tags ({focus}) {out.stderr[-300:]}")
    return out.stdout


def main():
    ehprof = sys.argv[1]
    if UNIFIED is None:
        print("SKIP: no cgroup v2 hierarchy mounted")
        sys.exit(77)
    scratch = os.path.join(UNIFIED, f"ehprof-k8s-test-{os.getpid()}")
    pod = os.path.join(scratch, pod_path(UID, ID))
    delegated = os.path.join(scratch, "user.slice/user-65534.slice/user@65534.service")
    os.makedirs(pod)
    os.makedirs(delegated)
    for f in ("", "cgroup.procs"):
        os.chown(os.path.join(delegated, f), 65534, 65534)
    procs, out = [], tempfile.mkdtemp(prefix="ehprof-k8s-")
    os.chmod(out, 0o755)
    try:
        p = subprocess.Popen([sys.executable, "-c", BUSY, "ehp-pod"])
        procs.append(p)
        with open(os.path.join(pod, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
        h = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                              BUSY, "ehp-hostile"])
        procs.append(h)
        with open(os.path.join(delegated, "cgroup.procs"), "w") as f:
            f.write(str(h.pid))
        # The user, in its own subtree, names cgroups as a pod's container.
        fake = os.path.join(delegated, pod_path(FAKE_UID, FAKE_ID))
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
                            f"mkdir -p {fake} && echo {h.pid} > {fake}/cgroup.procs"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, f"uid 65534 moved its process into {pod_path(FAKE_UID, FAKE_ID)} {r.stderr}")
        check(pod_path(FAKE_UID, FAKE_ID) in open(f"/proc/{h.pid}/cgroup").read(), "its cgroup says so")
        agent = subprocess.Popen([ehprof, "agent", "-a", "--interval", "2", "--metrics-every", "0",
                                  "--output-dir", out], stderr=subprocess.PIPE, text=True)
        time.sleep(7)
        agent.send_signal(signal.SIGINT)
        _, err = agent.communicate(timeout=60)
        check(agent.returncode == 0, f"the agent ran ({err[-500:]})")
        files = sorted(glob.glob(os.path.join(out, "*.pb.gz")))
        check(files, "profiles written")
        ours = tags(files, "ehp-pod", ehprof)
        check(f"pod/{UID}" in ours and ID in ours and UID in ours,
              "the pod's process: service_name pod/UID, container_id and k8s_pod_uid")
        theirs = tags(files, "ehp-hostile", ehprof)
        check("ehp-hostile" in theirs, "the user's process was sampled")
        check(FAKE_ID not in theirs and FAKE_UID not in theirs and "container_id" not in theirs,
              "the user's process: neither the fake container id nor the fake pod UID")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for d in sorted((d for d, _, _ in os.walk(scratch)), key=len, reverse=True):
            os.rmdir(d)
        subprocess.run(["rm", "-rf", out])


if __name__ == "__main__":
    main()
