#!/usr/bin/env bash
# A screenshot of Pyroscope's own UI showing what `ehprof agent` pushed for
# the bundled fio workload: starts the Pyroscope server (with its web UI:
# install_pyroscope.sh --ui) on 127.0.0.1, runs the agent while fio runs,
# then opens the single view for service_name="fio" over the run's time
# range in headless Chromium (playwright-core, pinned, under
# /var/cache/ehprof/npm) and saves the page once the flame graph is drawn.
#   scripts/pyroscope_screenshot.sh [OUT.png]   (default docs/pyroscope-fio.png)
# Needs root (the agent loads BPF) and build/ehprof (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-docs/pyroscope-fio.png}")
NPM_DIR=${EHPROF_NPM_CACHE:-/var/cache/ehprof/npm}
PW_VERSION=1.65.1

PYROSCOPE=$(bash scripts/install_pyroscope.sh --ui | tail -1)
if [[ ! -f $NPM_DIR/node_modules/playwright-core/package.json ]] ||
   ! grep -q "\"version\": \"$PW_VERSION\"" "$NPM_DIR/node_modules/playwright-core/package.json"; then
  mkdir -p "$NPM_DIR"
  (cd "$NPM_DIR" && npm install --silent --no-audit --no-fund --save-exact "playwright-core@$PW_VERSION" >/dev/null)
fi

work=$(mktemp -d /tmp/ehprof-screenshot.XXXXXX)
server=
agent=
cleanup() {
  [[ -n $agent ]] && kill "$agent" 2>/dev/null || true
  if [[ -n $server ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http=$(free_port) grpc=$(free_port) gossip=$(free_port)

# As tests/pyroscope_server.cc starts it: every listener and ring member
# on loopback, ready in about a second, no self-profiling or usage reports.
(cd "$work" && exec "$PYROSCOPE" \
  -server.http-listen-address=127.0.0.1 -server.grpc-listen-address=127.0.0.1 \
  -server.http-listen-port="$http" -server.grpc-listen-port="$grpc" \
  -memberlist.bind-addr=127.0.0.1 -memberlist.advertise-addr=127.0.0.1 \
  -memberlist.bind-port="$gossip" -memberlist.advertise-port="$gossip" \
  -compactor.ring.instance-addr=127.0.0.1 -distributor.ring.instance-addr=127.0.0.1 \
  -ingester.lifecycler.addr=127.0.0.1 -overrides-exporter.ring.instance-addr=127.0.0.1 \
  -query-frontend.instance-addr=127.0.0.1 -query-scheduler.ring.instance-addr=127.0.0.1 \
  -store-gateway.sharding-ring.instance-addr=127.0.0.1 \
  -ingester.min-ready-duration=0s -ingester.join-after=0s -ingester.heartbeat-period=1s \
  -query-scheduler.ring.heartbeat-period=1s -distributor.ring.heartbeat-period=1s \
  -self-profiling.disable-push=true -usage-stats.enabled=false -tracing.enabled=false \
  -pyroscopedb.data-path="$work/data" >"$work/server.log" 2>&1) &
server=$!
url=http://127.0.0.1:$http
for _ in $(seq 600); do
  [[ $(curl -sf "$url/ready" || true) == ready ]] && break
  kill -0 "$server" 2>/dev/null || { tail -20 "$work/server.log"; exit 1; }
  sleep 0.1
done

from=$(date +%s)
build/ehprof agent -a --interval 2 --pyroscope "$url" --metrics-every 0 2>"$work/agent.log" &
agent=$!
sleep 2  # the agent's BPF programs are loaded well within this
fio --output=/dev/null testdata/workloads/fio-cpu.job
sleep 3  # fio's last interval, pushed
kill -TERM "$agent"
wait "$agent" || { cat "$work/agent.log"; exit 1; }
agent=
grep 'pushed' "$work/agent.log" || true
until=$(( $(date +%s) + 5 ))

query='process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="fio"}'
q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$query")
# Ingestion is asynchronous: wait until what Pyroscope serves for fio
# stops growing.
ticks() {
  curl -sf "$url/pyroscope/render?query=$q&from=$from&until=$until&format=json" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["flamebearer"]["numTicks"])' 2>/dev/null || echo 0
}
last=-1
for _ in $(seq 30); do
  now=$(ticks)
  [[ $now != 0 && $now == "$last" ]] && break
  last=$now
  sleep 1
done
echo "Pyroscope serves $(( last / 1000000 )) ms of fio's CPU time"
# The page's range a little wider than the run: its timeline then shows
# the run's points inside it, not at its edges.
page="$url/?query=$q&from=$((from - 30))&until=$((until + 30))"
echo "page: $page"
mkdir -p "$(dirname "$OUT")"
node scripts/pyroscope_screenshot.mjs "$NPM_DIR" "$page" "$OUT" get_io_u
