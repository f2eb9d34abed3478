#!/usr/bin/env bash
# The Debian package as a user installs it: built from this build directory
# (cpack -G DEB), installed with `apt-get install ./ehprof_*.deb` into a clean
# Debian root of the machine's release (scripts/debian_root.sh; its Depends
# come from the archive), where `ehprof --version`, `ehprof check` (BPF
# loads in the chroot) and `systemd-analyze verify` of the installed unit
# must pass, and the man page and bash completion must be in place.
#   deb_install_test.sh BUILD_DIR      (root)
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ehprof-deb-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log") || { cat "$work/cpack.log"; exit 1; }
mkdir "$work/src"
cp "$work"/out/ehprof_*.deb "$work/src/"
. /etc/os-release
bash "$here/../scripts/debian_root.sh" "$VERSION_CODENAME" "$work/src" sh -euxc '
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ./ehprof_*.deb >/dev/null
  ehprof --version
  ehprof check
  systemd-analyze verify /usr/lib/systemd/system/ehprof-agent.service
  grep -q "^ExecStart=/usr/bin/ehprof agent " /usr/lib/systemd/system/ehprof-agent.service
  zcat /usr/share/man/man1/ehprof.1.gz | grep -q "^\.SS \"ehprof record\""
  bash -c ". /usr/share/bash-completion/completions/ehprof && COMP_WORDS=(ehprof record --fre) COMP_CWORD=2 && _ehprof && test \"\${COMPREPLY[*]}\" = --freq"
  echo "deb_install_test: installed and ran in a clean $(cat /etc/debian_version) root"'
