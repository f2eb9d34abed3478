#!/bin/busybox sh
# /init of the unit boot test's initramfs (boot_systemd.py): the share
# tagged hostroot is a whole Debian root made for the guest (not this
# machine's), mounted read-write; systemd boots from it as PID 1.
. /init_common.sh
if ! mount -o remount,rw "$R"; then
  say "cannot remount the root share read-write"; poweroff -f
fi
say "running systemd"
exec switch_root "$R" /lib/systemd/systemd
