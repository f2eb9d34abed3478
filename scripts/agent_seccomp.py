#!/usr/bin/env python3
"""Prints the seccomp profile the agent's container runs under: the
container runtime's own default profile (containers-common's
/usr/share/containers/seccomp.json, the one podman applies) with bpf(2)
and perf_event_open(2) allowed without CAP_SYS_ADMIN.

  agent_seccomp.py [DEFAULT_PROFILE] > ehprof-seccomp.json

The default profile allows those two calls only to a container holding
CAP_SYS_ADMIN (and fails them with EPERM otherwise), so an agent given
CAP_BPF and CAP_PERFMON alone could load nothing. Everything else stays as
the runtime has it. Standard library only.
"""
import json
import sys

CALLS = ("bpf", "perf_event_open")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(path) as f:
        profile = json.load(f)
    rules = []
    for rule in profile["syscalls"]:
        names = [n for n in rule["names"] if n not in CALLS]
        if names:
            rules.append(dict(rule, names=names))
    rules.append({"names": list(CALLS), "action": "SCMP_ACT_ALLOW", "args": [], "comment": "ehprof agent",
                  "includes": {}, "excludes": {}})
    profile["syscalls"] = rules
    json.dump(profile, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
