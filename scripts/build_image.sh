#!/usr/bin/env bash
# Builds the agent's OCI image from Debian packages only (no base image from
# a registry): scripts/build_image.sh [--check] [BINARY [OUT.tar]]
#   BINARY (default build/ehprof) and the shared libraries it loads (ldd),
#   each taken from the Debian package that ships it on this machine, at the
#   version installed here, unpacked by mmdebstrap --variant=extract from
#   the machine's own archive (scripts/debian_archive.py); the binary
#   stripped of its debug info; Mozilla's CA bundle for https pushes. The
#   root holds those files and nothing else (no shell, no package manager).
#   OUT.tar (default build/ehprof-agent.oci.tar) is an oci-archive
#   (scripts/oci_archive.py): `podman load -i OUT.tar` makes it
#   localhost/ehprof-agent:latest, whose digest (the manifest's, printed
#   here) `podman image inspect --format '{{.Digest}}' localhost/ehprof-agent`
#   shows.
#   Reproducible: sorted tars, every date SOURCE_DATE_EPOCH (default: the
#   commit time of HEAD), so the same binary and package versions give the
#   same digest. --check builds it twice, each from a fresh mmdebstrap, and
#   fails unless both digests are equal. Prints the digest and the sizes.
#   The unpacked packages are kept in $EHPROF_IMAGE_CACHE
#   (/var/cache/ehprof/image-debs) for the next build of the same versions.
# The entrypoint runs the agent as a DaemonSet would: every process, 99 Hz,
# 10 s intervals, the table cache in /var/cache/ehprof/tables (a host path
# mounted there); arguments after the image name (--pyroscope URL, --otlp
# URL, ...) are appended. Needs root (mmdebstrap).
# Run it with the host's pids, these capabilities and no others, and the
# seccomp profile scripts/agent_seccomp.py prints (tests/container_agent_priv_test.cc
# runs it so under podman):
#   CAP_BPF, CAP_PERFMON  maps, programs, perf events (without either it
#                         stops at its start, saying which is missing)
#   CAP_SYS_PTRACE        other processes' maps, files and roots (a
#                         container's binaries through /proc/PID/root)
#   CAP_SYSLOG            kernel symbol addresses (kernel frames unnamed
#                         without it)
#   CAP_CHECKPOINT_RESTORE /proc/PID/map_files: deleted and memfd files
# Not CAP_SYS_RESOURCE (BPF memory is charged to the cgroup since Linux
# 5.11: no RLIMIT_MEMLOCK to raise) nor CAP_SYS_ADMIN, which the runtime's
# default seccomp profile asks for bpf(2) and perf_event_open(2): the
# profile from agent_seccomp.py lets those two through instead.
#   podman run --pid=host --read-only --cap-drop=all \
#     --cap-add=BPF,PERFMON,SYS_PTRACE,SYSLOG,CHECKPOINT_RESTORE \
#     --security-opt seccomp=ehprof-seccomp.json \
#     -v /var/cache/ehprof/tables:/var/cache/ehprof/tables \
#     -v /var/lib/containers/storage/overlay-containers:/var/lib/containers/storage/overlay-containers:ro \
#     localhost/ehprof-agent --pyroscope URL
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
binary=${1:-$here/../build/ehprof}
out=${2:-$here/../build/ehprof-agent.oci.tar}
[[ -x $binary ]] || { echo "build_image.sh: no executable $binary (scripts/build.sh first)" >&2; exit 2; }
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$here" log -1 --format=%ct)
fi
export SOURCE_DATE_EPOCH
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
cache=${EHPROF_IMAGE_CACHE:-/var/cache/ehprof/image-debs}
arch=$(dpkg --print-architecture)

# The libraries the dynamic loader maps for the binary, as paths.
libraries() {
  ldd "$binary" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}'
}
# Each library's package as NAME=VERSION (installed here), sorted.
packages() {
  local lib owner
  for lib in $(libraries) /usr/share/ca-certificates; do
    owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null) ||
      { echo "build_image.sh: no package ships $lib" >&2; return 1; }
    owner=${owner%%:*}
    owner=${owner%%,*}
    dpkg-query -W -f='${Package}=${Version}\n' "$owner"
  done | sort -u
}

# One build into $1 (a new directory); prints the digest line.
build_once() {
  local work=$1 pkgs archive security
  pkgs=$(packages | paste -sd, -)
  archive=$(python3 "$here/debian_archive.py")
  security=$(python3 "$here/debian_archive.py" --security)
  # The unpacked packages are cached by their names and versions (the same
  # inputs); --check unpacks them afresh each time.
  local cached=$cache/$codename-$(printf %s "$pkgs" | md5sum | cut -c1-12).tar
  if ((check)) || [[ ! -s $cached ]]; then
    mmdebstrap --quiet --variant=extract --include="$pkgs" "$codename" "$work/debs" \
      "deb $archive $codename main" "deb $archive $codename-updates main" \
      "deb $security $codename-security main" >&2
    mkdir -p "$cache"
    tar -cf "$cached.part" -C "$work/debs" . && mv "$cached.part" "$cached"
  else
    mkdir "$work/debs"
    tar -xf "$cached" -C "$work/debs"
  fi
  local root=$work/root lib dir src
  mkdir -p "$root/usr/bin" "$root/usr/lib64" "$root/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" \
    "$root/etc/ssl/certs" "$root/tmp" "$root/run" "$root/proc" "$root/sys" "$root/dev" "$root/var/cache/ehprof/tables"
  ln -s usr/lib "$root/lib"
  ln -s usr/lib64 "$root/lib64"
  ln -s usr/bin "$root/bin"
  chmod 1777 "$root/tmp"
  for lib in $(libraries); do
    # As the package ships it (merged /usr or not), under /usr in the image.
    src=$work/debs$lib
    [[ -e $src ]] || src=$work/debs/usr$lib
    [[ -e $src ]] || { echo "build_image.sh: $lib is in no unpacked package" >&2; return 1; }
    dir=$root/usr${lib#/usr}
    mkdir -p "$(dirname "$dir")"
    cp -L "$src" "$dir"
  done
  objcopy --strip-debug "$binary" "$root/usr/bin/ehprof"
  # What ca-certificates' update-ca-certificates would write: every
  # certificate Debian trusts, in name order.
  find "$work/debs/usr/share/ca-certificates/mozilla" -name '*.crt' | LC_ALL=C sort | xargs cat \
    >"$root/etc/ssl/certs/ca-certificates.crt"
  find "$root" -type d -exec chmod 0755 {} + && chmod 1777 "$root/tmp"
  find "$root" -type f -exec chmod go-w {} +
  python3 "$here/oci_archive.py" "$root" "$work/image.tar" --tag ehprof-agent --arch "$arch" \
    --env PATH=/usr/bin \
    --entrypoint '["/usr/bin/ehprof","agent","-a","-F","99","--interval","10","--table-cache","/var/cache/ehprof/tables","--metrics-every","60"]'
}

work=$(mktemp -d /tmp/ehprof-image.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
mkdir "$work/a"
first=$(build_once "$work/a")
echo "$first"
if ((check)); then
  mkdir "$work/b"
  second=$(build_once "$work/b")
  if [[ $(head -1 <<<"$first") != $(head -1 <<<"$second") ]]; then
    echo "build_image.sh: two builds differ: $(head -1 <<<"$first") and $(head -1 <<<"$second")" >&2
    exit 1
  fi
  cmp "$work/a/image.tar" "$work/b/image.tar"
  echo "reproducible: two builds from fresh roots have the same digest and archive"
fi
mkdir -p "$(dirname "$out")"
mv "$work/a/image.tar" "$out"
echo "image $out: $(stat -c %s "$out") bytes (the oci-archive)"
