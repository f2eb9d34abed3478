#!/bin/sh
# In the guest of the unit boot test (ehprof-unit-check.service): waits for
# the installed ehprof-agent.service to write intervals of node's JIT code,
# restarts it once (its second start loads its tables from the cache), and
# copies what the host judges into /results. packaging/unit_boot_test.sh
# judges; this only collects.
set -u
res=/results
out=/var/lib/ehprof/profiles
cache=/var/cache/ehprof/tables
say() { echo "collect: $(date +%T) $*"; }

# Intervals that name node's JS functions (nodework.js's, from its perf
# map: hotA and hotB until TurboFan inlines them into the script's loop,
# then that loop, JS:* nodework.js): the agent has started, found node and
# read its perf map. Each file is looked at once (zcat is slow
# in an emulated guest).
checked=/run/ehprof-test-checked named_list=/run/ehprof-test-named
: > "$checked"
: > "$named_list"
named() {
  for f in "$out"/*.pb.gz; do
    [ -e "$f" ] || continue
    grep -qxF "$f" "$checked" && continue
    echo "$f" >> "$checked"
    zcat "$f" | grep -aq "JS:[^ ]* /opt/ehprof-test/nodework.js" && echo "$f" >> "$named_list"
  done
  wc -l < "$named_list"
}
wait_named() {  # wait_named COUNT SECONDS (of the guest's clock)
  end=$(($(date +%s) + $2))
  while [ "$(named)" -lt "$1" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 2; done
  say "$(named) intervals name nodework.js functions"
}

say "waiting for the agent's intervals"
wait_named 3 480
ls -ln "$cache" > "$res/cache-first.ls" 2>&1
# Restarted, it loads the tables it stored instead of building them again:
# the entries stay the same files, and each hit touches its entry. The
# entries are first dated 2001, so that a touch shows whichever clock
# stamps it: on the 9p root, a file's times come from the host's clock
# or the guest's (seen 13 s apart), and a touch soon after the entry was
# written could look older than its writing.
touch -c -d @1000000000 "$cache"/*.ehpt
stat -c '%i %.9Y %n' "$cache"/*.ehpt > "$res/cache-first.stat" 2>&1
# Waited for as such: intervals alone may be the stopped agent's last
# ones, delivered after the restart.
before=$(named)
systemctl restart ehprof-agent
say "restarted the agent"
end=$(($(date +%s) + 300))
# An entry of the first agent's touched: dated anew (entries it stores
# after the restart are other files, and do not count).
touched() {
  for f in $(sed 's/^[^ ]* [^ ]* //' "$res/cache-first.stat"); do
    [ "$(stat -c %Y "$f" 2>/dev/null)" -gt 1000000000 ] 2>/dev/null && return 0
  done
  return 1
}
used=no
until [ "$(date +%s)" -ge "$end" ]; do
  if touched; then used=yes; break; fi
  sleep 2
done
say "an entry of the cache was used: $used"
wait_named $((before + 2)) 300
stat -c '%i %.9Y %n' "$cache"/*.ehpt > "$res/cache-second.stat" 2>&1
stat -c '%a %u %n' /var/cache/private/ehprof "$cache" "$cache"/*.ehpt > "$res/cache-modes" 2>&1

mkdir -p "$res/profiles"
cp "$out"/*.pb.gz "$res/profiles/" 2>/dev/null
systemctl show ehprof-agent -p ActiveState -p NRestarts -p ExecMainStatus -p MainPID -p User > "$res/agent.show"
pid=$(systemctl show ehprof-agent -p MainPID --value)
node=$(systemctl show nodework -p MainPID --value)
{
  echo "agent_uid $(stat -c %u /proc/"$pid")"
  echo "node_uid $(stat -c %u /proc/"$node")"
  echo "node_pid $node"
  # Each has its own /tmp: node's map is not in the agent's.
  echo "agent_tmp_has_map $(ls /proc/"$pid"/root/tmp/ | grep -c '^perf-')"
  echo "node_tmp_maps $(ls /proc/"$node"/root/tmp/ | grep -c '^perf-')"
  echo "agent_cmdline $(tr '\0' ' ' < /proc/"$pid"/cmdline)"
} > "$res/processes" 2>&1
grep -E '^(Cap(Eff|Amb)|Seccomp|NoNewPrivs):' /proc/"$pid"/status > "$res/agent.status" 2>&1
journalctl -u ehprof-agent --no-pager -o short-monotonic > "$res/agent.journal" 2>&1
journalctl -b --no-pager -p warning -o short-monotonic > "$res/warnings.journal" 2>&1
say "collected"
touch "$res/done"
# The root is a 9p share the guest caches: the host reads it after this.
sync
