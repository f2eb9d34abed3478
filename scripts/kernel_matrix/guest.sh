#!/bin/bash
# Runs inside a kernel-matrix guest (chrooted into the host's root, read-only
# over 9p; see init.sh). Writes what it finds to $EHPROF_RESULTS (a writable
# share): guest.json, the outputs it names, and this kernel's BTF so the host
# can build the BPF object against it. Judging is the host's job
# (matrix.py): stackcheck over TCG is 30x slower than on the host.
set -u
R=$EHPROF_RESULTS
E=$EHPROF_BIN
cd /tmp
if [[ ${EHPROF_MODE:-} == btf ]]; then
  # Only this kernel's BTF, for building the BPF object against it.
  cp /sys/kernel/btf/vmlinux "$R/vmlinux.btf"
  exit
fi
# shellcheck source=scripts/kernel_matrix/guest_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest_common.sh"
start=$(now_ms)
step "ehprof check"

"$E" check > "$R/check.txt" 2>&1
check_rc=$?
objects="{"
for o in "${EHPROF_OBJECTS:-/nonexistent}"/*.bpf.o; do
  [[ -e $o ]] || continue
  name=$(basename "$o" .bpf.o)
  step "ehprof check --bpf-object $name"
  "$E" check --bpf-object "$o" > "$R/check-$name.txt" 2>&1
  objects+="\"$name\": $?,"
done
objects="${objects%,}}"

record_rc=-1
if [[ $check_rc == 0 ]]; then
  step "ehprof record of fio"
  rstart=$(now_ms)
  timeout -s INT 600 "$E" record -F "${EHPROF_FREQ:-199}" --no-table-cache -o "$R/fio.perf-script" -- \
    fio --output=/dev/null "$EHPROF_REPO/testdata/workloads/fio-cpu.job" > "$R/record.txt" 2>&1
  record_rc=$?
  record_ms=$(($(now_ms) - rstart))
  # ehprof agent on testdata's deep_recursion (guest_common.sh).
  run_agent "$(dirname "$E")/testdata/deep_recursion" 300 10
  # Off-CPU: testdata's offcpu_sleep blocks 100 ms in sleep_a and 300 ms in
  # sleep_b in turn; the host judges the a:b split of the blocked time.
  step "ehprof record --off-cpu"
  timeout -s INT 120 "$E" record --off-cpu -q -o "$R/offcpu.folded" --no-table-cache -- \
    "$(dirname "$E")/testdata/offcpu_sleep" 2 > "$R/offcpu.txt" 2>&1
  offcpu_rc=$?
fi
cp /sys/kernel/btf/vmlinux "$R/vmlinux.btf" 2>/dev/null
cat > "$R/guest.json" <<JSON
{
  "uname": "$(uname -r)",
  "check_rc": $check_rc,
  "objects": $objects,
  "record_rc": $record_rc,
  "record_ms": ${record_ms:-0},
  "agent_rc": ${agent_rc:--1},
  "agent_files": ${agent_files:-0},
  "offcpu_rc": ${offcpu_rc:--1},
  "guest_ms": $(($(now_ms) - start)),
  "nproc": $(nproc)
}
JSON
