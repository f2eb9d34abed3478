#!/bin/busybox sh
# /init of the arm64 guest's initramfs (Debian's arm64 busybox): loads the
# kernel package's own virtio-pci/9p modules, mounts the arm64 root (Debian's
# arm64 packages, arm64_guest.py) read-only over 9p with tmpfs wherever a
# run writes, the cross-built ehprof's directory at /ehprof/bin and the
# writable results share at /ehprof/results, and runs guest_arm64.sh from
# the results share in a chroot. EHPROF_* come on the kernel command line.
. /init_common.sh
for d in tmp run var/tmp root; do mount -t tmpfs tmpfs "$R/$d"; done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose bin "$R/ehprof/bin" ||
   ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results "$R/ehprof/results"; then
  say "cannot mount the ehprof or results share"; poweroff -f
fi
hostname ehprof-arm64
say "running guest_arm64.sh"
chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root TERM=dumb EHPROF_FREQ="$EHPROF_FREQ" EHPROF_RUNTIME="$EHPROF_RUNTIME" \
  EHPROF_STARTDELAY="$EHPROF_STARTDELAY" EHPROF_PERF="${EHPROF_PERF:-1}" \
  /bin/bash /ehprof/results/guest_arm64.sh > "$R/ehprof/results/guest.log" 2>&1
say "guest_arm64.sh exited $?"
sync
umount "$R/ehprof/results"
poweroff -f
