#!/usr/bin/env bash
# The arm64 cross build, checked: scripts/build.sh --arch arm64 (into
# $BUILD/arm64, ccache when present), then
#  - the binary and its BPF object are arm64's (ELF machine; the object's
#    BTF names arm64's struct user_pt_regs, which x86's kernel has not),
#  - the arm64 ehprof, run under qemu-user, prints the same `ehprof tables`
#    rows as this host's build for Debian 13's PAC-built arm64 fio and for
#    this host's /usr/bin/fio.
#   tests/arm64_cross.sh HOST_EHPROF BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
host_ehprof="$1"
out="$2/arm64"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
EHPROF_BUILD_DIR="$out" nice bash "$here/../scripts/build.sh" --arch arm64 "${launcher[@]}" >"$out.log" 2>&1 ||
  { tail -30 "$out.log"; exit 1; }
arm="$out/ehprof"
file -b "$arm" | grep -q "ARM aarch64" || { echo "not an aarch64 binary: $(file -b "$arm")"; exit 1; }
obj_btf=$(bpftool btf dump file "$out/bpf/profiler.bpf.o")
grep -q "STRUCT 'user_pt_regs'" <<<"$obj_btf" ||
  { echo "the BPF object was not built against arm64's BTF"; exit 1; }
# Every CO-RE relocation of the object resolves against the arm64 kernel's
# BTF (flavoured types, name___suffix, are alternatives meant to miss).
btf=$(ls /var/cache/ehprof/apt-arm64/bookworm/vmlinux/*/vmlinux.btf | tail -1)
unresolved=$(bpftool -d gen min_core_btf "$btf" "$out/min_core.btf" "$out/bpf/profiler.bpf.o" 2>&1 |
  python3 -c '
import re, sys
what = {}
for line in sys.stdin:
    m = re.search(r"prog .(.*).: relo #(\d+): (<.*)", line)
    if m:
        what[m.group(1, 2)] = m.group(3)
    m = re.search(r"prog .(.*).: relo #(\d+): no matching targets found", line)
    if m and "___" not in what.get(m.group(1, 2), ""):
        print(m.group(1), what.get(m.group(1, 2)))')
if [[ -n "$unresolved" ]]; then
  echo "CO-RE relocations of the arm64 object that arm64's BTF does not resolve:"
  echo "$unresolved" | head
  exit 1
fi
fio13=$(python3 "$here/../scripts/arm64/debian_arm64.py" fetch trixie fio)/usr/bin/fio
for f in "$fio13" /usr/bin/fio; do
  if ! cmp -s <(qemu-aarch64 -L / "$arm" tables "$f") <("$host_ehprof" tables "$f"); then
    echo "arm64 and host ehprof tables differ on $f"
    diff <(qemu-aarch64 -L / "$arm" tables "$f") <("$host_ehprof" tables "$f") | head
    exit 1
  fi
  echo "$f: $(qemu-aarch64 -L / "$arm" tables --stats "$f")"
done
echo "arm64 cross build: ok ($arm)"
