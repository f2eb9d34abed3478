#!/usr/bin/env bash
# A long fuzzing campaign: builds the libFuzzer targets (ASan+UBSan) in their
# own build directory and runs them one after another, each for a number of
# executions or a time limit, then prints each target's executions and
# findings. ctest -L fuzz is the short run; this is the long one.
#
#   scripts/fuzz_long.sh [-n RUNS] [-t SECONDS] [-d DIR] [-b BUILD] [TARGET...]
#
#   -n RUNS     executions per target (EHPROF_FUZZ_RUNS, default 10000000)
#   -t SECONDS  time limit per target, 0 for none (EHPROF_FUZZ_TIME, default 0)
#   -d DIR      corpora, artifacts and logs (EHPROF_FUZZ_DIR,
#               default /tmp/ehprof-fuzz): DIR/<target> is the corpus, seeded
#               from testdata/seeds; it grows and is kept between campaigns
#   -b BUILD    build directory (EHPROF_FUZZ_BUILD, default build-fuzz)
#   TARGET      cfi elf compact proc_maps perf_map perf_script (default: all,
#               fastest first, so a cut-short campaign still has figures)
#
# Runs under nice -n 19, one fuzzer at a time. Installs nothing: it needs what
# scripts/install_deps.sh installs (clang, libclang-rt-N-dev after the release's clang).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

RUNS=${EHPROF_FUZZ_RUNS:-10000000}
TIME=${EHPROF_FUZZ_TIME:-0}
DIR=${EHPROF_FUZZ_DIR:-/tmp/ehprof-fuzz}
BUILD=${EHPROF_FUZZ_BUILD:-build-fuzz}
while getopts "n:t:d:b:h" opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    t) TIME=$OPTARG ;;
    d) DIR=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(proc_maps perf_map perf_script elf cfi compact)

# Seed directory and -max_len per target. max_len bounds the cost of one
# input: the parsers' and cfi's 4 KiB hold many lines or FDEs; elf needs its
# seeds (whole stripped programs, under 16 KiB) untruncated; compact's input
# is a row-generating program, where 1 KiB already makes tens of thousands
# of rows.
declare -A SEEDS=([cfi]=cfi [elf]=elf [compact]=compact [proc_maps]=maps
                  [perf_map]=perf_map [perf_script]=perf_script)
declare -A MAX_LEN=([cfi]=4096 [elf]=16384 [compact]=1024 [proc_maps]=4096
                    [perf_map]=4096 [perf_script]=4096)
for t in "${TARGETS[@]}"; do
  [[ -n ${SEEDS[$t]:-} ]] || { echo "unknown target: $t" >&2; exit 2; }
done

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  CC=gcc CXX=clang++ nice -n 19 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEHPROF_FUZZERS=ON >/dev/null
fi
nice -n 19 cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]/#/fuzz_}"

mkdir -p "$DIR/logs"
declare -A EXECS RATE FOUND STATUS
for t in "${TARGETS[@]}"; do
  corpus=$DIR/$t artifacts=$DIR/artifacts/$t log=$DIR/logs/$t.log
  mkdir -p "$corpus" "$artifacts"
  cp -n "$REPO/testdata/seeds/${SEEDS[$t]}"/* "$corpus/"
  before=$(find "$artifacts" -type f | wc -l)
  cmd=(nice -n 19 "$BUILD/fuzz/fuzz_$t" -runs="$RUNS" -max_total_time="$TIME"
       -max_len="${MAX_LEN[$t]}" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
       -artifact_prefix="$artifacts/" "$corpus")
  echo "== $t: ${cmd[*]}" | tee "$log"
  rc=0
  "${cmd[@]}" >>"$log" 2>&1 || rc=$?
  EXECS[$t]=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  RATE[$t]=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
  # A crash, leak, timeout or OOM leaves an artifact and stops the run.
  FOUND[$t]=$(($(find "$artifacts" -type f | wc -l) - before))
  STATUS[$t]=$([[ $rc == 0 ]] && echo ok || echo "exit $rc")
  [[ $rc == 0 ]] || echo "   $t stopped (exit $rc); see $log and $artifacts" >&2
done

echo
printf '%-12s %12s %8s %9s  %s\n' target executions exec/s findings status
for t in "${TARGETS[@]}"; do
  printf '%-12s %12s %8s %9s  %s\n' "$t" "${EXECS[$t]:-?}" "${RATE[$t]:-?}" "${FOUND[$t]}" \
    "${STATUS[$t]}"
done
