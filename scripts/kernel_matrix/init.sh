#!/bin/busybox sh
# /init of the kernel matrix's initramfs (busybox): loads the 9p/virtio
# modules copied from the kernel's own package, mounts the host's root
# filesystem read-only over 9p, gives it a tmpfs wherever a run writes, mounts
# the writable results share at its host path, and runs guest.sh there in a
# chroot. The host passes EHPROF_* on the kernel command line (the kernel
# hands unknown name=value parameters to init as environment variables).
. /init_common.sh
# The repository, the ehprof binary's directory and the BPF objects (a CI
# clone may live under /tmp or /root) must stay visible through the tmpfs
# mounted over their parent: each is bound aside first, then put back
# inside the tmpfs.
n=0
: > /keep.list
for p in "$EHPROF_REPO" "${EHPROF_BIN%/*}" "$EHPROF_OBJECTS"; do
  [ -n "$p" ] && [ -d "$R$p" ] || continue
  mkdir -p "/keep$n"
  mount -o bind "$R$p" "/keep$n" && echo "$n $p" >> /keep.list
  n=$((n + 1))
done
for d in tmp run var/tmp root; do mount -t tmpfs tmpfs "$R/$d"; done
while read -r i p; do
  case "$p/" in
    /tmp/*|/run/*|/var/tmp/*|/root/*)
      mkdir -p "$R$p"
      mount -o bind "/keep$i" "$R$p" || say "cannot bind $p back";;
  esac
done < /keep.list
# A results directory under /tmp exists only in the tmpfs now over it.
mkdir -p "$R$EHPROF_RESULTS" 2>/dev/null
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results "$R$EHPROF_RESULTS"; then
  say "cannot mount the results share at $EHPROF_RESULTS"; poweroff -f
fi
hostname ehprof-guest
say "running $EHPROF_REPO/scripts/kernel_matrix/guest.sh"
chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root TERM=dumb EHPROF_RESULTS="$EHPROF_RESULTS" EHPROF_REPO="$EHPROF_REPO" \
  EHPROF_BIN="$EHPROF_BIN" EHPROF_FREQ="$EHPROF_FREQ" EHPROF_OBJECTS="$EHPROF_OBJECTS" \
  EHPROF_MODE="$EHPROF_MODE" \
  /bin/bash "$EHPROF_REPO/scripts/kernel_matrix/guest.sh" > "$R$EHPROF_RESULTS/guest.log" 2>&1
say "guest.sh exited $?"
sync
umount "$R$EHPROF_RESULTS"
poweroff -f
