# Sourced by the guests' scripts (guest.sh from the shared repository,
# guest_arm64.sh from its results share, where arm64.py copies this file).
# Needs E (ehprof) and R (the results directory).

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# Each step on the console, so a guest that hangs says where.
step() { echo "ehprof-guest: $*" > /dev/console 2>/dev/null; }

# ehprof agent on the command "$@": 1 s intervals into $R/agent, stopped
# once it has written two (at least 6 s, at most 180 s: its start-up under
# TCG takes a few intervals, more on a busy host: in an arm64 guest beside
# a CI run, a 70 s workload was gone before the agent had started). The
# command must outlive that; it is killed after (deep_recursion: seconds,
# then depth). Sets agent_rc and agent_files.
run_agent() {
  step "ehprof agent"
  "$@" > /dev/null 2>&1 &
  local work_pid=$! agent_pid waited
  "$E" agent -p "$work_pid" --interval 1 --output-dir "$R/agent" --metrics-every 0 \
    --no-table-cache > "$R/agent.txt" 2>&1 &
  agent_pid=$!
  for waited in $(seq 1 180); do
    sleep 1
    ((waited >= 6)) && (($(ls "$R/agent" 2>/dev/null | grep -c '\.pb\.gz$') >= 2)) && break
  done
  kill -TERM "$agent_pid"
  wait "$agent_pid"
  agent_rc=$?
  kill "$work_pid" 2>/dev/null
  wait "$work_pid" 2>/dev/null
  agent_files=$(ls "$R/agent" 2>/dev/null | grep -c '\.pb\.gz$')
}
