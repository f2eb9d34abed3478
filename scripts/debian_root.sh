#!/usr/bin/env bash
# Runs a command as root in a clean Debian root (a fresh machine without the
# machine): debian_root.sh CODENAME DIR COMMAND [ARG...]
#   The base root (mmdebstrap --variant=apt, plus systemd) is made once per
#   CODENAME from the machine's own Debian archive (scripts/debian_archive.py)
#   and cached as a tarball under $EHPROF_ROOT_CACHE (/var/cache/ehprof/roots);
#   each run unpacks it afresh, copies DIR into the root as /src, bind-mounts
#   /proc, /sys and /dev (BPF works in the chroot), runs COMMAND in /src, and
#   removes the root. Exit status: COMMAND's. Needs root.
#   EHPROF_ROOT_KEEP=DIR: the root is made in DIR (new or empty) and left
#   there, unmounted, for the caller (e.g. to boot it).
#   EHPROF_ROOT_PACKAGES=P1,P2,...: these packages too, in a base root of
#   their own (cached under a name with a hash of the list).
# debian_root.sh --tarball CODENAME makes the cached base root if it has to
#   and prints its tarball's path (e.g. to import it as a container image).
set -euo pipefail
tarball_only=0
if [[ ${1:-} == --tarball && $# -eq 2 ]]; then
  tarball_only=1
  set -- "$2" /nonexistent true
fi
[[ $# -ge 3 ]] || { echo "usage: debian_root.sh CODENAME DIR COMMAND [ARG...] | --tarball CODENAME" >&2; exit 2; }
codename=$1 src=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
cache=${EHPROF_ROOT_CACHE:-/var/cache/ehprof/roots}
packages=${EHPROF_ROOT_PACKAGES:-}
tarball=$cache/debian-$codename-apt-systemd${packages:+-$(printf %s "$packages" | md5sum | cut -c1-8)}.tar
mkdir -p "$cache"
exec 8>"$cache/.lock-$codename"
flock 8
if [[ ! -s $tarball ]]; then
  archive=$(python3 "$here/debian_archive.py")
  security=$(python3 "$here/debian_archive.py" --security)
  echo "debian_root.sh: making the $codename base root (once; cached in $tarball)" >&2
  # (mmdebstrap picks the output format by the name's extension)
  # (testing's Release may be past its Valid-Until on a frozen mirror:
  # forky's was, for Python 3.14; the signatures are still checked)
  mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' --include="systemd${packages:+,$packages}" "$codename" "$tarball.part.tar" \
    "deb $archive $codename main" "deb $archive $codename-updates main" \
    "deb $security $codename-security main"
  mv "$tarball.part.tar" "$tarball"
fi
flock -u 8
if ((tarball_only)); then
  echo "$tarball"
  exit 0
fi

keep=${EHPROF_ROOT_KEEP:-}
if [[ -n $keep ]]; then
  mkdir -p "$keep"
  [[ -z $(ls -A "$keep") ]] || { echo "debian_root.sh: EHPROF_ROOT_KEEP=$keep is not empty" >&2; exit 2; }
  root=$(cd "$keep" && pwd)
else
  root=$(mktemp -d "/tmp/ehprof-root-$codename.XXXXXX")
fi
cleanup() {
  umount -R "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || umount -R -l "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || true
  if findmnt -rno TARGET | grep -q "^$root/"; then
    echo "debian_root.sh: $root still has mounts; left in place" >&2
  elif [[ -z $keep ]]; then
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT
tar -xf "$tarball" -C "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/src"
cp -a "$src/." "$root/src/"
mount --bind /proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
status=0
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root TERM=dumb LANG=C.UTF-8 sh -c 'cd /src && exec "$@"' sh "$@" || status=$?
exit $status
