#!/usr/bin/env python3
"""scripts/kernel_matrix/a64_programs.py's judges on hand-made perf-script
dumps, without a guest: frames named by nm of the twin, the bottom by
readelf's CFI. The judges do not depend on the architecture, so testdata's
x86-64 builds stand in for the arm64 ones.

  a64_programs_test.py TESTDATA_DIR
"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts", "kernel_matrix"))
import a64_programs  # noqa: E402
import judge  # noqa: E402

TESTDATA = sys.argv.pop(1) if len(sys.argv) > 1 else "build/testdata"


def addr_of(path, name):
    return next(s for s, _, n in a64_programs.symbols(path) if n == name) + 4


def frame(addr, sym, dso):
    return f"\t{addr:16x} {sym} ({dso})"


class JudgeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "testdata-a64"))
        for name in ("sig_handler", "offcpu_sleep"):
            for suffix in ("", ".stripped"):
                shutil.copy(os.path.join(TESTDATA, name + suffix),
                            os.path.join(self.dir, "testdata-a64", name + suffix))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def sample(self, name, functions, period=1001001, bottom=True, leaf_dso=None):
        """A perf-script sample of the guest's stripped `name`: frames in
        `functions` (leaf first; "[vdso]" a vDSO frame), then _start."""
        twin = os.path.join(self.dir, "testdata-a64", name)
        dso = f"/ehprof/bin/testdata-a64/{name}.stripped"
        lines = [f"{name}.stripped 7 [000] 1.000000: {period} cpu-clock:",
                 frame(0xffffffff81000000, "do_syscall_64", "[kernel.kallsyms]")]
        for fn in functions:
            if fn == "[vdso]":
                lines.append(frame(0x7ffd0000066c, "__kernel_rt_sigreturn", "[vdso]"))
            else:
                lines.append(frame(addr_of(twin, fn), f"{name}.stripped+0x0", leaf_dso or dso))
        start = min(s for s, _ in judge.ra_undefined(twin + ".stripped"))
        lines.append(frame(start if bottom else addr_of(twin, "main"), f"{name}.stripped+0x0", dso))
        return "\n".join(lines) + "\n"

    def write(self, samples):
        path = os.path.join(self.dir, "dump.perf-script")
        with open(path, "w") as f:
            f.write("\n".join(samples))
        return path

    def test_handler_chain_through_the_vdso_to_the_bottom(self):
        chain = ["sig_handler_work", "sig_handler_outer", "sig_prof_handler", "[vdso]",
                 "sig_main_work", "sig_main_loop", "main"]
        dump = self.write([self.sample("sig_handler", chain)] * 3 +
                          [self.sample("sig_handler", chain, bottom=False)] +
                          [self.sample("sig_handler", ["sig_handler_work", "sig_main_loop", "main"])] +
                          [self.sample("sig_handler", ["sig_main_work", "sig_main_loop", "main"])])
        got = a64_programs.judge_program(dump, "sig_handler", "", self.dir)
        self.assertEqual(got["samples"], 6)
        self.assertEqual(got["leaf_samples"], 5)
        self.assertEqual(got["complete_pct"], 80.0)  # the one stopping at main is not at the bottom
        self.assertEqual(got["chain_pct"], 60.0)     # nor is the one without the handler's frames

    def test_offcpu_blocks_by_their_means(self):
        fns = {"a": ["sleep_a", "sleep_loop", "main"], "b": ["sleep_b", "sleep_loop", "main"]}
        blocks = [self.sample("offcpu_sleep", fns["a"], period=120_000_000),
                  self.sample("offcpu_sleep", fns["b"], period=320_000_000)] * 4
        blocks.append(self.sample("offcpu_sleep", fns["b"], period=300_000_000, bottom=False))
        got = a64_programs.judge_offcpu(self.write(blocks), "", self.dir)
        self.assertEqual((got["blocks_a"], got["blocks_b"]), (4, 4))
        self.assertEqual((got["mean_a_ms"], got["mean_b_ms"], got["mean_diff_ms"]), (120.0, 320.0, 200.0))
        self.assertEqual(got["incomplete_ns"], 300_000_000)
        self.assertEqual(got["b_to_a"], round(320 / 120, 3))

    def test_offcpu_a_sleep_woken_early_is_one_block(self):
        fns = {"a": ["sleep_a", "sleep_loop", "main"], "b": ["sleep_b", "sleep_loop", "main"]}
        blocks = [self.sample("offcpu_sleep", fns["a"], period=100_000_000),
                  self.sample("offcpu_sleep", fns["b"], period=300_000_000)] * 3
        # The last sleep_b woken after 250 ms and put back for the rest.
        blocks[-1] = self.sample("offcpu_sleep", fns["b"], period=250_000_000)
        blocks.append(self.sample("offcpu_sleep", fns["b"], period=50_000_000))
        got = a64_programs.judge_offcpu(self.write(blocks), "", self.dir)
        self.assertEqual((got["blocks_a"], got["blocks_b"]), (3, 3))
        self.assertEqual((got["mean_a_ms"], got["mean_b_ms"]), (100.0, 300.0))


if __name__ == "__main__":
    unittest.main()
