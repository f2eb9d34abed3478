"""Boots one kernel under qemu with the host's root filesystem shared
read-only over 9p and a writable results share, and waits for guest.sh to
finish (the guest powers itself off)."""
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def kvm_usable():
    """KVM only when asked for: on these machines /dev/kvm exists (kvm_pvm)
    but Debian's kernels never get past decompression under it."""
    return os.environ.get("EHPROF_KVM") == "1" and os.access("/dev/kvm", os.R_OK | os.W_OK)


# What init.sh prints once the kernel has booted and the shares are mounted.
INIT_MARKER = "ehprof-init: running"


def console_tail(results, lines=6):
    try:
        with open(os.path.join(results, "console.log"), errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


def boot(vmlinuz, initramfs, results, env, timeout_s, smp=2, mem_mb=2048, boot_deadline_s=240):
    """Runs the guest; returns (exit status of qemu, seconds, how it ended:
    None when it powered off, "boot" when init never ran within
    boot_deadline_s (a stall in the emulated boot, before any of ours runs),
    "run" when it ran but did not finish within timeout_s)."""
    accel = ["-accel", "kvm", "-cpu", "host"] if kvm_usable() else \
        ["-accel", "tcg,thread=multi", "-cpu", "max"]
    # env: EHPROF_* for init.sh and guest.sh (values without spaces).
    cmdline = " ".join(["console=ttyS0", "panic=-1", "loglevel=4", "mitigations=off",
                        "rdinit=/init", f"EHPROF_RESULTS={results}"] +
                       [f"{k}={v}" for k, v in env.items()])
    console = os.path.join(results, "console.log")
    cmd = [
        "qemu-system-x86_64", *accel, "-smp", str(smp), "-m", str(mem_mb),
        "-display", "none", "-monitor", "none", "-serial", f"file:{console}",
        "-no-reboot", "-net", "none",
        "-kernel", vmlinuz, "-initrd", initramfs, "-append", cmdline,
        # multidevs=remap: the host's files come from several filesystems;
        # without it two can share an inode number inside the guest, and
        # ehprof keys its tables by (device, inode).
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={results},mount_tag=results,security_model=none,multidevs=remap",
    ]
    with open(os.path.join(results, "qemu.cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    start = time.monotonic()
    with open(os.path.join(results, "qemu.log"), "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        hung = None
        booted = False
        while p.poll() is None:
            waited = time.monotonic() - start
            if not booted:
                booted = any(INIT_MARKER in line for line in console_tail(results, 50))
            if not booted and waited > boot_deadline_s:
                hung = "boot"
            elif waited > timeout_s:
                hung = "run"
            if hung:
                p.kill()
                break
            time.sleep(1)
        rc = p.wait()
    return rc, time.monotonic() - start, hung
