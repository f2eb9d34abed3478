"""Boots a Debian root directory under qemu with systemd as PID 1: Debian
12's stock kernel (as the kernel matrix fetches it), the root shared
read-write over 9p (the guest's files are the directory's), the console in
RESULTS/console.log. Returns when the guest powers itself off, or fails
after the timeout.
    boot_systemd.py ROOT RESULTS [--timeout S]
Exit status: 0 when the guest powered off, 1 when it did not (hung or
never booted). Needs root and qemu-system-x86."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest_vm  # noqa: E402
import kernels  # noqa: E402

# Debian 12's own kernel: the release the root is made from.
LINE, SUITES = "6.1", ["bookworm", "bookworm-security"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("results")
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    root, results = os.path.abspath(a.root), os.path.abspath(a.results)
    os.makedirs(results, exist_ok=True)
    apt = kernels.Apt(os.environ.get("EHPROF_KERNEL_CACHE", "/var/cache/ehprof/kernels"))
    apt.update()
    pkg, ver = apt.resolve(LINE, SUITES)
    kver, vmlinuz = kernels.kernel_files(apt.fetch(pkg, ver))
    initramfs = os.path.join(results, "initramfs.gz")
    kernels.build_initramfs(apt.fetch(pkg, ver), kver, os.path.join(HERE, "init_systemd.sh"), initramfs)
    accel = ["-accel", "kvm", "-cpu", "host"] if guest_vm.kvm_usable() else \
        ["-accel", "tcg,thread=multi", "-cpu", "max"]
    # no_timer_check: on a loaded host the emulated timer can miss the
    # kernel's IO-APIC check, which then panics ("IO-APIC + timer doesn't
    # work!"); the guest's clock is fine without it.
    cmdline = " ".join(["console=ttyS0", "panic=-1", "loglevel=5", "mitigations=off", "no_timer_check",
                        "rdinit=/init", "systemd.show_status=1", "systemd.log_target=console"])
    cmd = [
        "qemu-system-x86_64", *accel, "-smp", "2", "-m", "2048",
        "-display", "none", "-monitor", "none", "-serial", f"file:{os.path.join(results, 'console.log')}",
        "-no-reboot", "-net", "none",
        "-kernel", vmlinuz, "-initrd", initramfs, "-append", cmdline,
        "-virtfs", f"local,path={root},mount_tag=hostroot,security_model=none,multidevs=remap",
    ]
    print(f"boot_systemd: {pkg} {ver} under qemu ({'KVM' if guest_vm.kvm_usable() else 'TCG'}), "
          f"systemd from {root}", file=sys.stderr, flush=True)
    rc, secs, hung, retried = guest_vm.boot_with_retry(lambda: guest_vm.run_qemu(cmd, results, a.timeout),
                                                       results)
    print(f"boot_systemd: qemu exited {rc} after {secs:.0f} s" + (f" ({hung}: hung)" if hung else "") +
          (" (booted again after an emulated boot failure)" if retried else ""), file=sys.stderr)
    sys.exit(1 if hung else 0)


if __name__ == "__main__":
    main()
