#!/bin/bash
# Runs inside the arm64 guest (chrooted into the arm64 root; init_arm64.sh),
# copied into the results share by the host. Writes to /ehprof/results:
# check.txt, and per fio (Debian 12's, Debian 13's PAC-signed one) ehprof's
# and perf's perf-script dumps of the same run length; the host judges them
# (arm64.py). Each step is on the console, so a guest that hangs says where.
set -u
R=/ehprof/results
E=/ehprof/bin/ehprof
F=${EHPROF_FREQ:-99}
T=${EHPROF_RUNTIME:-3}
cd /tmp
# shellcheck source=scripts/kernel_matrix/guest_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest_common.sh"
start=$(now_ms)
# Debian 13's fio needs Debian 13's glibc and libraries: it runs through
# Debian 13's own loader with its own library directories, so both fios run
# in the one guest and every file a profiler names is the real one at its
# path in this root (a chroot into a Debian 13 root would hide the paths
# from ehprof and perf, which run outside it).
L13=/opt/trixie/usr/lib/aarch64-linux-gnu
RUN13="$L13/ld-linux-aarch64.so.1 --library-path $L13:$L13/ceph"
declare -A FIO=([12]="/usr/bin/fio" [13]="$RUN13 /opt/trixie/usr/bin/fio")
# Each fio's reference is its own release's perf: Debian 12's perf (6.1,
# elfutils 0.188) does not strip PAC signatures from return addresses and
# stops after a frame or two in Debian 13's fio.
declare -A PERF=([12]="perf" [13]="$RUN13 /opt/trixie/usr/bin/perf")
# perf's registers for --call-graph dwarf: every general register, named,
# because perf 6.1 adds SVE's VG when the CPU has SVE (-cpu max does), and
# the 6.1 kernel refuses extended registers on its software clock events
# (EOPNOTSUPP: "PMU Hardware doesn't support sampling/overflow-interrupts").
PERF_REGS=$(printf 'x%d,' $(seq 0 29))lr,sp,pc
# The job starts after --startdelay: ehprof builds the unwind tables of
# every file the command maps (Debian 13's fio maps 60: librbd,
# libceph-common, ...), which takes seconds under TCG on a loaded host;
# a job that started at once ran its first seconds ahead of them ("table
# not loaded yet"). perf runs the same command.
JOB=(--output=/dev/null --name=cpu --ioengine=null --size=100g --bs=4k --rw=randread
  --time_based "--runtime=$T" "--startdelay=${EHPROF_STARTDELAY:-6}")

grep -m1 -i '^Features' /proc/cpuinfo > "$R/cpu_features.txt"
step "ehprof check"
"$E" check > "$R/check.txt" 2>&1
check_rc=$?
rcs=""
if [[ $check_rc == 0 ]]; then
  for rel in 12 13; do
    step "ehprof record of Debian $rel's fio"
    t0=$(now_ms)
    # shellcheck disable=SC2086  # FIO[rel] is a command line
    timeout -s INT 300 "$E" record -F "$F" --no-table-cache -o "$R/fio$rel.ehprof.perf-script" -- \
      ${FIO[$rel]} "${JOB[@]}" > "$R/record$rel.txt" 2>&1
    rcs+="\"record$rel\": $?, \"record${rel}_ms\": $(($(now_ms) - t0)), "
    [[ ${EHPROF_PERF:-1} == 1 ]] || continue  # perf's references: the first kernel's guest
    step "perf record of Debian $rel's fio"
    t0=$(now_ms)
    # -m 16M a CPU: with perf's default buffer, under emulation, its
    # reader fell behind 64 KiB a sample and lost chunks, the forked job's
    # COMM and MMAP events among them: its samples then had no user frame.
    # shellcheck disable=SC2086
    timeout -s INT 300 ${PERF[$rel]} record -q -m 16M -e cpu-clock -F "$F" --call-graph dwarf,65528 \
      --user-regs="$PERF_REGS" -o /tmp/perf$rel.data -- ${FIO[$rel]} "${JOB[@]}" > "$R/perf$rel.txt" 2>&1
    rcs+="\"perf$rel\": $?, \"perf${rel}_ms\": $(($(now_ms) - t0)), "
    step "perf script of Debian $rel's fio"
    t0=$(now_ms)
    # shellcheck disable=SC2086
    timeout 600 ${PERF[$rel]} script --no-inline -i /tmp/perf$rel.data -F comm,tid,ip,sym,dso \
      > "$R/fio$rel.perf.perf-script" 2>> "$R/perf$rel.txt"
    rcs+="\"perf_script$rel\": $?, \"perf_script${rel}_ms\": $(($(now_ms) - t0)), "
    rm -f /tmp/perf$rel.data
  done
  # Debian 13's fio once more under perf's frame-pointer call chains: the
  # kernel walks the frame records (x29, x30) and strips PAC signatures
  # itself, an outside reference for the signed fio where perf's DWARF
  # unwinding stops (see PERF above).
  if [[ ${EHPROF_PERF:-1} == 1 ]]; then
    step "perf record -g of Debian 13's fio"
    # shellcheck disable=SC2086
    timeout -s INT 300 perf record -q -e cpu-clock -F "$F" -g -o /tmp/perf13fp.data -- \
      ${FIO[13]} "${JOB[@]}" > "$R/perf13fp.txt" 2>&1
    rcs+="\"perf13fp\": $?, "
    perf script --no-inline -i /tmp/perf13fp.data -F comm,tid,ip,sym,dso \
      > "$R/fio13.perf-fp.perf-script" 2>> "$R/perf13fp.txt"
  fi
  # testdata's programs, cross-built by the host (a64_programs.py): a
  # signal handler (the vDSO's __kernel_rt_sigreturn), PLT calls into libc
  # and back, JIT code without CFI (its frame record), each stripped.
  TD=/ehprof/bin/testdata-a64
  # Each starts 5 s into its recording (a shell sleeps, then execs it), as
  # fio's job starts after --startdelay: under TCG on a busy host ehprof
  # takes seconds to build libc's and ld.so's tables, and a 2 s program
  # started at once ran a third of its time ahead of them.
  for p in sig_handler plt_calls jit_sim; do
    step "ehprof record of $p"
    timeout -s INT 120 "$E" record -F 499 --no-table-cache -o "$R/$p.perf-script" -- \
      bash -c "sleep 5; exec $TD/$p.stripped 2" > "$R/$p.txt" 2>&1
    rcs+="\"$p\": $?, "
  done
  # Off-CPU: offcpu_sleep blocks 100 ms in sleep_a and 300 ms in sleep_b in
  # turn; the host judges each block (a64_programs.judge_offcpu).
  step "ehprof record --off-cpu"
  timeout -s INT 120 "$E" record --off-cpu -q --no-table-cache -o "$R/offcpu.perf-script" -- \
    "$TD/offcpu_sleep.stripped" 2 > "$R/offcpu.txt" 2>&1
  rcs+="\"offcpu\": $?, "
  # ehprof agent on deep_recursion (guest_common.sh).
  run_agent "$TD/deep_recursion" 300 10
  rcs+="\"agent\": $agent_rc, \"agent_files\": $agent_files, "
fi
cat > "$R/guest.json" <<JSON
{
  "uname": "$(uname -r)",
  "arch": "$(uname -m)",
  "check_rc": $check_rc,
  ${rcs}
  "guest_ms": $(($(now_ms) - start)),
  "nproc": $(nproc)
}
JSON
step "done"
