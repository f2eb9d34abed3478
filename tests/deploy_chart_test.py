#!/usr/bin/env python3
"""deploy/: the Helm chart checked by the real `helm lint --strict` and
`helm template` (helm from scripts/install_helm.sh); the rendered DaemonSet's
privileges, mounts, tolerations, metrics port and arguments; the plain
manifest deploy/kubernetes/ehprof-daemonset.yaml equal to the chart rendered
with its defaults (release ehprof, namespace ehprof); values carried into the
arguments; a chart without a sink refused. --otelcol: the Collector config
deploy/otel/collector-k8sattributes.yaml validated by the real Collector
(scripts/install_otelcol.sh's), which has no k8sattributes processor: what it
has (the OTLP receiver, the profiles pipeline) is validated, the rest named.
"""
import os
import subprocess
import sys
import tempfile

import yaml

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHART = os.path.join(SRC, "deploy/helm/ehprof")
PLAIN = os.path.join(SRC, "deploy/kubernetes/ehprof-daemonset.yaml")
# As tests/container_agent_priv_test.cc runs the image under podman.
CAPS = ["BPF", "PERFMON", "SYS_PTRACE", "SYSLOG", "CHECKPOINT_RESTORE"]


def installed(env, script):
    if os.environ.get(env):
        return os.environ[env]
    out = subprocess.run(["bash", os.path.join(SRC, "scripts", script)], capture_output=True, text=True,
                         timeout=1800)
    path = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    if out.returncode != 0 or not os.access(path, os.X_OK):
        sys.exit(f"{script} failed: {out.stderr[-2000:]}")
    return path


def helm(*args, ok=True):
    r = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    if ok and r.returncode != 0:
        sys.exit(f"helm {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    return r


def render(*sets):
    out = helm("template", "ehprof", CHART, "--namespace", "ehprof", *sets).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert len(docs) == 1 and docs[0]["kind"] == "DaemonSet", [d.get("kind") for d in docs]
    return docs[0]


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")


def check_default(ds):
    pod = ds["spec"]["template"]["spec"]
    c = pod["containers"][0]
    sc = c["securityContext"]
    check(pod["hostPID"] is True, "hostPID")
    check(pod["automountServiceAccountToken"] is False, "no service account token")
    check(sc["capabilities"] == {"drop": ["ALL"], "add": CAPS}, f"capabilities: all dropped, {CAPS} added")
    check(sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
          and sc["privileged"] is False, "read-only root, no privilege escalation, not privileged")
    check(sc["seccompProfile"] == {"type": "RuntimeDefault"}, "the runtime's default seccomp profile")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    check(mounts["btf"]["mountPath"] == "/sys/kernel/btf" and mounts["btf"]["readOnly"]
          and vols["btf"]["path"] == "/sys/kernel/btf", "host /sys/kernel/btf, read-only")
    check(mounts["tracefs"]["mountPath"] == "/sys/kernel/tracing" and mounts["tracefs"]["readOnly"]
          and vols["tracefs"]["path"] == "/sys/kernel/tracing", "host tracefs, read-only")
    check(vols["table-cache"] == {"path": "/var/cache/ehprof", "type": "DirectoryOrCreate"}
          and mounts["table-cache"]["mountPath"] == "/var/cache/ehprof"
          and "--table-cache=/var/cache/ehprof/tables" in c["args"], "table cache on a hostPath")
    check(all(m.get("readOnly") for n, m in mounts.items() if n != "table-cache"),
          "only the table cache is writable")
    check(pod["tolerations"] == [{"operator": "Exists"}], "tolerates every taint")
    ann = ds["spec"]["template"]["metadata"]["annotations"]
    check(ann == {"prometheus.io/scrape": "true", "prometheus.io/port": "9465", "prometheus.io/path": "/metrics"},
          "Prometheus scrape annotations")
    check(c["ports"] == [{"name": "metrics", "containerPort": 9465, "protocol": "TCP"}]
          and "--metrics-addr=0.0.0.0:9465" in c["args"], "metrics port served and declared")
    check(c["args"][:2] == ["agent", "--all-cpus"] and "--freq=99" in c["args"]
          and "--pyroscope=http://pyroscope.pyroscope.svc.cluster.local:4040" in c["args"]
          and "--cgroup-labels=container.id,k8s.pod.uid" in c["args"]
          and not any(a.startswith("--otlp") for a in c["args"]), "default arguments")
    check(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
          "the selector matches the pod's labels")


def check_values():
    ds = render("--set", "otlp.endpoint=http://otelcol.observability:4318", "--set", "pyroscope.url=",
                "--set", "sampleRate=49", "--set", "labels.cluster=prod-eu-1", "--set", "image.tag=test",
                "--set", "image.repository=registry.local/ehprof", "--set", "resources.limits.memory=300Mi",
                "--set", "cgroupLabels={k8s.pod.uid}", "--set", "extraArgs={--off-cpu}")
    c = ds["spec"]["template"]["spec"]["containers"][0]
    check("--otlp=http://otelcol.observability:4318" in c["args"] and "--otlp-protocol=http/protobuf" in c["args"]
          and not any(a.startswith("--pyroscope") for a in c["args"]), "otlp.endpoint without Pyroscope")
    check("--freq=49" in c["args"] and "--label=cluster=prod-eu-1" in c["args"]
          and "--cgroup-labels=k8s.pod.uid" in c["args"] and c["args"][-1] == "--off-cpu",
          "sampleRate, labels, cgroupLabels, extraArgs")
    check(c["image"] == "registry.local/ehprof:test" and c["resources"]["limits"]["memory"] == "300Mi",
          "image and resources")
    r = helm("template", "ehprof", CHART, "--set", "pyroscope.url=", ok=False)
    check(r.returncode != 0 and "give a sink" in r.stderr, "no sink: refused")


def check_otelcol():
    otelcol = installed("EHPROF_OTELCOL", "install_otelcol.sh")
    with open(os.path.join(SRC, "deploy/otel/collector-k8sattributes.yaml")) as f:
        config = yaml.safe_load(f)
    comps = subprocess.run([otelcol, "components"], capture_output=True, text=True, timeout=60).stdout
    have_k8s = "k8sattributes" in comps
    if not have_k8s:
        # Validated without what the distribution lacks: named, not hidden.
        print("note: this Collector has no k8sattributes processor, batch processor nor otlp exporter; "
              "validating the receiver and the profiles pipeline with its file exporter")
        config["processors"] = {}
        config["exporters"] = {"file": {"path": "/dev/null"}}
        config["service"]["pipelines"]["profiles"] = {"receivers": ["otlp"], "exporters": ["file"]}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as t:
        yaml.safe_dump(config, t)
        t.flush()
        r = subprocess.run([otelcol, "validate", "--config", t.name, "--feature-gates=+service.profilesSupport"],
                           capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"otelcol validate ({'whole config' if have_k8s else 'what it has'}): "
                             f"{r.stdout.strip()} {r.stderr.strip()[-500:]}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--otelcol"]:
        check_otelcol()
        sys.exit(0)
    HELM = installed("EHPROF_HELM", "install_helm.sh")
    r = helm("lint", "--strict", CHART)
    check("1 chart(s) linted, 0 chart(s) failed" in r.stdout, "helm lint --strict")
    ds = render()
    check_default(ds)
    with open(PLAIN) as f:
        plain = [d for d in yaml.safe_load_all(f) if d]
    check(plain == [ds], "deploy/kubernetes/ehprof-daemonset.yaml is the chart rendered with its defaults")
    check_values()
    print("deploy chart: every check passed")
