#!/usr/bin/env bash
# ehprof's folded output against FlameGraph's own stackcollapse-perf.pl
# (tests/consumers/flamegraph/, unmodified) run on ehprof's perf-script
# output of the same recording: both files come from one symbolization
# (two -o), so the script must fold the perf-script text into exactly
# ehprof's folded lines. The script sums periods (nanoseconds for
# cpu-clock) where ehprof counts samples; every sample has the same period,
# so its counts are divided by that.
#   plain:      ehprof's default           == stackcollapse-perf.pl
#   annotated:  ehprof --folded-annotate   == stackcollapse-perf.pl --all,
#     but for two known differences, evened out before comparing: the
#     script marks every dso in brackets kernel ("[vdso]_[k]"), and it
#     cannot tell perf's "(inlined)" lines inlined (no "_[i]"; it marks
#     only perf's old "a->b" chains).
# In both, ehprof's name for code no symbol covers, FILE+0xSTART, loses its
# "+0x..." as the script cuts perf's symbol offsets (with libc6-dbg there
# should be none; a stray ld.so sample must not fail the test).
# pingpong: two threads in read/write, so stacks reach into the kernel.
#   tests/consumers/stackcollapse_perf.sh EHPROF TESTDATA_DIR
set -euo pipefail
EHPROF=$1 TD=$2
SC=$(cd "$(dirname "$0")" && pwd)/flamegraph/stackcollapse-perf.pl
command -v perl >/dev/null || { echo "perl is needed"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# stackcollapse-perf.pl's lines with each count divided by the period.
collapse() {  # PERF_SCRIPT [OPTION...]
  local script=$1
  shift
  local period
  period=$(head -1 "$script" | sed -n 's/.*: *\([0-9][0-9]*\) cpu-clock: *$/\1/p')
  [[ -n $period && $period != 0 ]] || { echo "no period in: $(head -1 "$script")"; exit 1; }
  perl "$SC" "$@" "$script" | awk -v p="$period" '{
      match($0, / [0-9]+$/); n = substr($0, RSTART + 1)
      if (n % p) { print "count " n " is not a multiple of " p > "/dev/stderr"; exit 1 }
      print substr($0, 1, RSTART - 1) " " n / p }'
}

compare() {  # WHAT EXPECTED ACTUAL
  if ! diff -u "$2" "$3" > "$work/diff"; then
    echo "$1: ehprof's folded output differs from stackcollapse-perf.pl's:"
    head -40 "$work/diff"
    exit 1
  fi
  local lines samples kernel
  lines=$(wc -l < "$3")
  samples=$(awk '{ s += $NF } END { print s }' "$3")
  kernel=$(grep -c 'entry_SYSCALL_64' "$3" || true)
  echo "$1: $lines stacks ($kernel through a system call), $samples samples, identical"
  (( lines >= 3 && samples >= 100 )) || { echo "$1: too little recorded to judge"; exit 1; }
}

# ehprof's folded FILE evened out by the perl substitutions EXPR, lines
# that became equal summed, sorted as the script sorts.
even() {  # FILE EXPR
  perl -pe "$2; s/\+0x[0-9a-f]+(?=;| \d+\$)//g" "$1" |
    awk '{ match($0, / [0-9]+$/); c[substr($0, 1, RSTART - 1)] += substr($0, RSTART + 1) }
         END { for (k in c) print k " " c[k] }' | LC_ALL=C sort
}

"$EHPROF" record -F 499 -q -o "$work/p.folded" -o "$work/p.perf-script" -- "$TD/pingpong" 1 \
  >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
collapse "$work/p.perf-script" > "$work/sc.folded"
even "$work/p.folded" "" > "$work/p-even.folded"
compare plain "$work/sc.folded" "$work/p-even.folded"
grep -q 'pingpong;.*;ping;' "$work/p.folded" || { echo "no ping stacks"; exit 1; }

"$EHPROF" record -F 499 -q --folded-annotate -o "$work/a.folded" -o "$work/a.perf-script" \
  -- "$TD/pingpong" 1 >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
# The vDSO's frames, as the script names them: their _[k] goes.
export VDSO
VDSO=$(awk '/ \(\[vdso\]\)$/ { print ($2 == "[unknown]" ? "[vdso]" : $2) }' "$work/a.perf-script" | sort -u)
collapse "$work/a.perf-script" --all |
  perl -pe 'BEGIN { %v = map { $_ => 1 } split /\n/, $ENV{VDSO} }
            s/([^;]+)_\[k\](?=;| \d+$)/exists $v{$1} ? $1 : "$1_[k]"/ge' > "$work/sc-all.folded"
even "$work/a.folded" 's/_\[i\](?=;| \d+$)//g' > "$work/a-even.folded"
LC_ALL=C sort "$work/sc-all.folded" > "$work/sc-all-sorted.folded"
compare annotated "$work/sc-all-sorted.folded" "$work/a-even.folded"
grep -q 'entry_SYSCALL_64_[^;]*_\[k\]' "$work/a.folded" || { echo "annotated: no kernel frame marked _[k]"; exit 1; }
