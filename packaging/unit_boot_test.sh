#!/usr/bin/env bash
# The installed unit at work, under systemd as PID 1: this machine's PID 1
# is not systemd, and systemd-nspawn or a container would put the agent in a
# pid namespace of its own, where ehprof's BPF programs (which see init
# namespace pids) and its /proc disagree. So a clean Debian root of the
# machine's release (scripts/debian_root.sh) gets the Debian package
# (apt-get install ./ehprof_*.deb: its ehprof-agent.service as packaged),
# node and a node service writing its JIT perf map in a private /tmp as a
# user of its own (unit_boot/nodework.service), a drop-in that adds
# --output-dir (unit_boot/agent-test.conf, as `systemctl edit` would), and a
# driver (unit_boot/collect.sh); then it boots under qemu with Debian 12's
# kernel and systemd as init (scripts/kernel_matrix/boot_systemd.py). Here
# it checks: the agent ran as its dynamic user, sandboxed (seccomp,
# capabilities), did not restart, wrote intervals naming node's JS
# functions from the perf map in node's own /tmp (the agent's /tmp has
# none), stored built tables in its CacheDirectory (0700, entries 0600)
# and, restarted, loaded them instead of building them again; and that a
# secret given by LoadCredential= reached it by file, not on its argv.
#   unit_boot_test.sh BUILD_DIR [RESULTS_DIR]     (root; network for apt)
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ehprof-unit-boot.XXXXXX)
results=${2:-$work/results}
trap 'rm -rf --one-file-system "$work"' EXIT
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log") || { cat "$work/cpack.log"; exit 1; }
mkdir -p "$work/src" "$results"
cp "$work"/out/ehprof_*.deb "$work/src/"
cp "$here"/unit_boot/* "$here/../testdata/nodework.js" "$work/src/"
cp "$(command -v node)" "$work/src/node"
. /etc/os-release
EHPROF_ROOT_KEEP=$work/root bash "$here/../scripts/debian_root.sh" "$VERSION_CODENAME" "$work/src" sh -euc '
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ./ehprof_*.deb >/dev/null
  install -m 0755 node /usr/local/bin/node
  mkdir -p /opt/ehprof-test /results /etc/systemd/system/ehprof-agent.service.d
  install -m 0644 nodework.js collect.sh /opt/ehprof-test/
  install -m 0644 agent-test.conf /etc/systemd/system/ehprof-agent.service.d/test.conf
  # Debian'"'"'s kernels default to kernel.perf_event_paranoid=3 (a Debian
  # patch), where perf_event_open takes CAP_SYS_ADMIN: the unit'"'"'s header
  # says to choose 2, as here.
  echo kernel.perf_event_paranoid=2 > /etc/sysctl.d/60-ehprof-perf.conf
  mkdir -p /etc/ehprof
  (umask 077 && echo unit-boot-test-token-not-on-argv > /etc/ehprof/pyroscope-token)
  install -m 0644 nodework.service ehprof-unit-check.service /etc/systemd/system/
  systemctl enable ehprof-agent.service nodework.service ehprof-unit-check.service
  # A fixed identity; nothing asks on the console, nothing else runs.
  echo 0123456789abcdef0123456789abcdef > /etc/machine-id
  systemctl mask systemd-firstboot.service serial-getty@ttyS0.service getty@tty1.service \
    apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service 2>/dev/null
  systemd-analyze verify /usr/lib/systemd/system/ehprof-agent.service'
timeout 1500 python3 "$here/../scripts/kernel_matrix/boot_systemd.py" "$work/root" "$results" || true
cp -a "$work/root/results/." "$results/" 2>/dev/null || true

fail=0
check() {  # check WHAT COMMAND...: the command's success, said
  local what=$1
  shift
  if "$@"; then echo "unit_boot_test: ok: $what"; else echo "unit_boot_test: FAILED: $what" >&2; fail=1; fi
}
value() { sed -n "s/^$1[ =]//p" "$results/$2" 2>/dev/null | head -1; }
if [[ ! -e $results/done ]]; then
  echo "unit_boot_test: the guest did not finish collecting; console tail:" >&2
  tail -40 "$results/console.log" >&2 || true
  tail -20 "$results/collect.log" >&2 || true
  exit 1
fi
check "the agent is active" test "$(value ActiveState agent.show)" = active
check "the agent never restarted by itself" test "$(value NRestarts agent.show)" = 0
agent_uid=$(value agent_uid processes) node_uid=$(value node_uid processes)
check "the agent runs as a dynamic user ($agent_uid), node as another ($node_uid)" \
  test "$agent_uid" -ge 61184 -a "$agent_uid" -le 65519 -a "$node_uid" != "$agent_uid" -a "$node_uid" != 0
check "the agent is in seccomp filter mode without new privileges" \
  grep -qzP 'NoNewPrivs:\s+1\n(.|\n)*Seccomp:\s+2' "$results/agent.status"
# CAP_SYSLOG (bit 34) kept: kernel addresses are read from /proc/kallsyms.
check "the agent holds the capabilities the unit gives (CapEff 1c400080000)" \
  grep -qP 'CapEff:\s+000001c400080000' "$results/agent.status"
check "kernel symbols were available to it" bash -c '! grep -q "kernel symbols unavailable" "$1"' _ \
  "$results/agent.journal"
check "the Pyroscope token reached the agent as a credential, not on its command line" \
  bash -c '! grep -q unit-boot-test-token "$1" && grep -q "bearer-token-file /run/credentials/" "$1"' _ \
  "$results/processes"
check "node's perf map is in its own /tmp, none in the agent's" \
  test "$(value node_tmp_maps processes)" = 1 -a "$(value agent_tmp_has_map processes)" = 0
named=0 by_name=0 perf_map=0
for f in "$results"/profiles/*.pb.gz; do
  [[ -e $f ]] || continue
  # hotA and hotB by name until TurboFan inlines them into the script's
  # loop, then that loop (JS:* nodework.js:1): JS named from node's map.
  # grep reads all (no -q): under pipefail, zcat killed by SIGPIPE when
  # grep -q stops early would count a match as none.
  zcat "$f" | grep -a "JS:[^ ]* /opt/ehprof-test/nodework.js" >/dev/null && named=$((named + 1))
  zcat "$f" | grep -a hotA >/dev/null && zcat "$f" | grep -a hotB >/dev/null && by_name=$((by_name + 1))
  zcat "$f" | grep -a "/tmp/perf-[0-9]*\.map" >/dev/null && perf_map=$((perf_map + 1))
done
check "intervals name node's JS functions from its perf map ($named; hotA and hotB by name in $by_name)" test "$named" -ge 3 -a "$by_name" -ge 1
check "their JIT frames come from the perf map ($perf_map)" test "$perf_map" -ge 3
entries=$(grep -c '\.ehpt$' "$results/cache-first.stat" || true)
check "built tables stored in the CacheDirectory ($entries entries)" test "$entries" -ge 1
check "the cache directory is 0700 and its entries 0600, the agent's" \
  awk -v uid="$agent_uid" '$1 !~ /^(700|600)$/ || $2 != uid { bad = 1 } END { exit bad || NR < 3 }' \
  "$results/cache-modes"
# Restarted, the agent took its tables from the cache: the entries it had
# are the same files (a table built again would be stored anew: a new
# inode), and a hit marks its entry used (a newer mtime than the 2001 that
# collect.sh dated them).
read -r kept reused < <(awk 'NR == FNR { first[$1 " " $3] = $2; next }
  ($1 " " $3) in first { kept++; if ($2 > first[$1 " " $3]) reused++ }
  END { print kept + 0, reused + 0 }' "$results/cache-first.stat" "$results/cache-second.stat")
check "restarted, the agent kept its $entries cached tables ($kept) and loaded some ($reused)" \
  test "$kept" = "$entries" -a "$reused" -ge 1
if [[ $fail != 0 ]]; then
  echo "unit_boot_test: agent journal tail:" >&2
  tail -30 "$results/agent.journal" >&2 || true
  exit 1
fi
echo "unit_boot_test: the installed unit profiled node's JIT code and used its cache (results: $results)"
