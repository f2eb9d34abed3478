#!/usr/bin/env bash
# The readelf agreement over Debian's arm64 binaries, judged on this host
# without emulation: fio, libc6, libstdc++6, python3's interpreter and
# libLLVM of Debian 12 (bookworm) and Debian 13 (trixie), downloaded once
# by scripts/arm64/debian_arm64.py (private apt state, the machine's own
# archive URI, cached under /var/cache/ehprof), each file's `ehprof tables`
# rows against `readelf --debug-dump=frames-interp`, then the PAC state of
# the rows against the signing instructions (tests/pac_check.py).
#   tests/arm64_readelf.sh EHPROF [-j N]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ehprof="$1"; shift
jobs="${1:--j}"; [[ "$jobs" == "-j" ]] && jobs=2 || jobs="${2:-2}"
list="$(python3 "$here/../scripts/arm64/debian_arm64.py" corpus)"
status=0
for suite in bookworm trixie; do
  trees=$(awk -F'\t' -v s="$suite" '$1 == s {print $3}' <<<"$list" |
          sed -E 's|(/x/[^/]+)/.*|\1|' | sort -u)
  echo "== Debian $suite arm64: $(awk -F'\t' -v s="$suite" '$1 == s' <<<"$list" | wc -l) ELF files"
  out=$(python3 "$here/readelf_compare.py" --ehprof "$ehprof" -j "$jobs" --tree $trees) || status=1
  echo "$out" | tail -20
  echo "$out" | grep -q "^TOTAL: .* mismatches=0 (failed=0" || status=1
  files=$(awk -F'\t' -v s="$suite" '$1 == s && $2 != "libc6" {print $3}' <<<"$list")
  files="$files $(awk -F'\t' -v s="$suite" '$1 == s && $2 == "libc6" && $3 ~ /libc\.so\.6$|ld-linux-aarch64/ {print $3}' <<<"$list")"
  python3 "$here/pac_check.py" --ehprof "$ehprof" $files |
    python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
for r in rows:
    if r["mismatches"]:
        print("PAC MISMATCH", r)
print("PAC: files=%d sign_insns=%d auth_insns=%d pac_rows=%d mismatches=%d "
      "(clang-style CFI: cfi_late=%d no_epilogue_cfi=%d)" % (
    len(rows), sum(r["sign_insns"] for r in rows), sum(r["auth_insns"] for r in rows),
    sum(r["pac_rows"] for r in rows), sum(r["mismatches"] for r in rows),
    sum(r["cfi_late"] for r in rows), sum(r["no_epilogue_cfi"] for r in rows)))
sys.exit(1 if any(r["mismatches"] for r in rows) else 0)' || status=1
done
exit $status
