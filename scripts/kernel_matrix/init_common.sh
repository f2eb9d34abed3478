# Sourced by both /init scripts of the kernel matrix's initramfs (init.sh,
# the host's root; init_arm64.sh, the arm64 root): busybox's applets, the
# kernel package's own 9p/virtio modules, the share tagged hostroot mounted
# read-only at $R=/newroot with /proc, /sys, /dev and the BPF, tracing and
# debug file systems mounted inside it. Defines say.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "ehprof-init: $*" > /dev/console; }
for m in $(cat /modules/order); do
  insmod "/modules/$m" 2> /dev/console || say "insmod $m failed"
done
R=/newroot
# cache=loose: the host does not change these files during a run, and TCG
# makes every 9p round trip dear.
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot "$R"; then
  say "cannot mount the root share over 9p"; poweroff -f
fi
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount -t devtmpfs devtmpfs "$R/dev"
mkdir -p "$R/dev/shm" "$R/dev/pts" 2>/dev/null
mount -t tmpfs tmpfs "$R/dev/shm"
mount -t devpts devpts "$R/dev/pts"
mount -t bpf bpf "$R/sys/fs/bpf" 2>/dev/null
mount -t tracefs tracefs "$R/sys/kernel/tracing" 2>/dev/null
mount -t debugfs debugfs "$R/sys/kernel/debug" 2>/dev/null
