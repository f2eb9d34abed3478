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
    # One host thread for both vCPUs: multi-threaded TCG (QEMU 7.2) runs
    # x86 code another vCPU is patching wrong, and the kernel patches its
    # own text whenever a tracepoint or static key flips (ehprof's attach
    # does). A 5.10 guest hung for good so, both vCPUs looping in
    # syscall_exit_to_user_mode+0xb3 (the sys_exit tracepoint's jump) with
    # "BUG: soft lockup": in the matrix's agent step (2026-11-27 and -29),
    # and without ehprof at all, the sys_exit_mmap trace event turned on and
    # off from tracefs beside deep_recursion (2026-11-29: hung within 100
    # toggles in 1 of 3 runs, about 1,000 toggles in all); under
    # thread=single 900 toggles held.
    accel = ["-accel", "kvm", "-cpu", "host"] if kvm_usable() else \
        ["-accel", "tcg,thread=single", "-cpu", "max"]
    # env: EHPROF_* for init.sh and guest.sh (values without spaces).
    # loglevel=5: a soft lockup's or an RCU stall's stack dump (printed at
    # the default level) reaches the console too.
    cmdline = " ".join(["console=ttyS0", "panic=-1", "loglevel=5", "mitigations=off",
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
    return run_qemu(cmd, results, timeout_s, boot_deadline_s)


def run_qemu(cmd, results, timeout_s, boot_deadline_s=240):
    """Runs a qemu command line whose guest prints INIT_MARKER on its
    console (results/console.log) once our init runs; returns as boot()."""
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


def boot_with_retry(run, results):
    """run() (a boot, returning as boot()), once more when the emulated
    kernel never got to our init: multi-threaded TCG now and then breaks
    the kernel's own code patching at boot ("Oops: int3" in a static key,
    a panic) or stalls there for good, before anything of ehprof's runs;
    emulation, not ehprof. A guest that hangs after init ran is not
    retried: that is ours. Returns (qemu's status, seconds,
    None/"boot"/"run", retried)."""
    rc, secs, hung = run()
    console = os.path.join(results, "console.log")
    try:
        with open(console, errors="replace") as f:
            panicked = "Kernel panic" in f.read()
    except OSError:
        panicked = False
    if (hung == "boot" or panicked) and not os.path.exists(os.path.join(results, "guest.json")):
        os.rename(console, os.path.join(results, "console-panic.log" if panicked else "console-stall.log"))
        rc, secs2, hung = run()
        return rc, secs + secs2, hung, True
    return rc, secs, hung, False
