#!/usr/bin/env python3
"""bench/jvm_profiles.py on hand-made folded profiles in both spellings:
async-profiler's ([name tid=N], slashes in packages, [unknown_Java]) and
ehprof's (comm first, C++ parameter lists, file:line, _[j] annotations);
ehprof's perf-script output, its samples in a time window; JFR's JSON."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import jvm_profiles  # noqa: E402

ASYNC = """\
[hot-arith tid=101];java/lang/Thread.run;JvmHot$Worker.run;JvmHot.arithLoop;JvmHot.hashMix 60
[hot-arith tid=101];[unknown_Java];__ieee754_fmod 30
[hot-arith tid=101];JvmHot$Worker.run;JvmHot.arithLoop;JvmHot.fmodLoop;fmod 10
[hot-virtual tid=102];JvmHot$Worker.run;JvmHot.virtualLoop;JvmHot$Square.area_[i] 50
[hot-virtual tid=102];JvmHot$Worker.run;JvmHot.virtualLoop;JvmHot.fib;JvmHot.fib 50
[C2 CompilerThread0 tid=90];start_thread;Compile::Compile 7
"""
EHPROF = """\
hot-arith;clone3;start_thread;thread_native_entry(Thread*);java.lang.Thread.run;JvmHot$Worker.run (JvmHot.java:180);JvmHot.arithLoop;JvmHot.hashMix_[j] 50
hot-arith;clone3;start_thread;thread_native_entry(Thread*);JvmHot$Worker.run;JvmHot.arithLoop;JvmHot.fmodLoop_[j];__fmod_finite 40
hot-arith;[anon] 10
hot-virtual;clone3;start_thread;JvmHot$Worker.run;JvmHot.virtualLoop;JvmHot$Square.area_[i] 100
C2 CompilerThre;clone3;start_thread;Compile::Compile(ciEnv*) 9
"""



def jfr_event(thread, *frames):
    """A jdk.ExecutionSample event as `jfr print --json` prints it: frames
    leaf first, each as (class, method)."""
    return {"type": "jdk.ExecutionSample", "values": {
        "sampledThread": {"osName": thread, "javaName": thread},
        "stackTrace": {"truncated": False, "frames": [
            {"method": {"type": {"name": c}, "name": m}, "lineNumber": 1, "type": "JIT compiled"}
            for c, m in frames]}}}


JFR = json.dumps({"recording": {"events": [
    jfr_event("hot-arith", ("JvmHot", "hashMix"), ("JvmHot", "arithLoop"), ("JvmHot$Worker", "run")),
    jfr_event("hot-arith", ("JvmHot", "fmodLoop"), ("JvmHot", "arithLoop"), ("JvmHot$Worker", "run")),
    jfr_event("hot-virtual", ("JvmHot$Square", "area"), ("JvmHot", "virtualLoop"), ("JvmHot$Worker", "run")),
    jfr_event("JFR Periodic Tasks", ("java/lang/Object", "wait")),
    {"type": "jdk.ExecutionSample", "values": {"sampledThread": None, "stackTrace": None}},
]}})


# ehprof's perf-script output: one sample before the window, two in it.
PERF = """\
hot-virtual  8061 [001] 99.500000:    1001001 cpu-clock:
\t    400000000010004b JvmHot.fib ([java])
\t          3000ba JvmHot$Worker.run ([java])

hot-virtual  8061 [001] 100.250000:    1001001 cpu-clock:
\t    400000000010004b JvmHot.fib (inlined)
\t    400000000010004b JvmHot.fib ([java])
\t          200093 JvmHot.virtualLoop ([java])
\t          3000ba JvmHot$Worker.run ([java])
\t          8282d1 JavaCalls::call_helper(JavaValue*, methodHandle const&) (/usr/lib/jvm/lib/server/libjvm.so)
\t           94ac3 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

hot-virtual  8061 [000] 100.750000:    1001001 cpu-clock:
\tffffffff81001000 asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
\t          40002d JvmHot$Square.area ([java])
\t          200092 JvmHot.virtualLoop ([java])
"""


def profile(text, source, window=None):
    with tempfile.NamedTemporaryFile("w", suffix=".folded", delete=False) as f:
        f.write(text)
    try:
        return jvm_profiles.Profile(f.name, source, window)
    finally:
        os.unlink(f.name)


class JvmProfilesTest(unittest.TestCase):
    def test_normalise(self):
        n = jvm_profiles.normalise
        self.assertEqual(n("java/lang/Thread.run"), "java.lang.Thread.run")
        self.assertEqual(n("JvmHot.hashMix_[j]"), "JvmHot.hashMix")
        self.assertEqual(n("JvmHot$Worker.run (JvmHot.java:180)"), "JvmHot$Worker.run")
        self.assertEqual(n("thread_native_entry(Thread*)"), "thread_native_entry")
        self.assertEqual(n("[unknown_Java]"), "[unknown_Java]")

    def test_threads(self):
        self.assertEqual(jvm_profiles.thread_of("[hot-arith tid=101]", "asprof"), "hot-arith")
        self.assertEqual(jvm_profiles.thread_of("[C2 CompilerThread0 tid=9]", "asprof"), "C2 CompilerThre")
        self.assertEqual(jvm_profiles.thread_of("hot-arith", "ehprof"), "hot-arith")

    def test_async_profiler_counts(self):
        p = profile(ASYNC, "asprof")
        self.assertEqual(dict(p.samples), {"hot-arith": 100, "hot-virtual": 100})
        self.assertAlmostEqual(p.share("hot-arith", "JvmHot.hashMix"), 60.0)
        self.assertAlmostEqual(p.share("hot-arith", jvm_profiles.NO_JAVA), 30.0)
        self.assertAlmostEqual(p.share("hot-virtual", "JvmHot$Square.area"), 50.0)
        self.assertAlmostEqual(p.pct(p.with_java), 85.0)
        self.assertEqual(p.fmod_leaf["hot-arith"], 40)
        self.assertEqual(p.fmod_named["hot-arith"], 10)
        fib = ("hot-virtual", ("JvmHot$Worker.run", "JvmHot.virtualLoop", "JvmHot.fib", "JvmHot.fib"))
        self.assertEqual(p.chains[fib], 50)
        self.assertEqual(jvm_profiles.hottest(p, 2), [("hot-arith", "JvmHot.hashMix"),
                                                     ("hot-virtual", "JvmHot$Square.area")])

    def test_ehprof_counts(self):
        p = profile(EHPROF, "ehprof")
        self.assertEqual(dict(p.samples), {"hot-arith": 100, "hot-virtual": 100})
        self.assertAlmostEqual(p.share("hot-arith", "JvmHot.fmodLoop"), 40.0)
        self.assertAlmostEqual(p.pct(p.reach_start), 95.0)
        self.assertAlmostEqual(p.thread_pct(p.fmod_named, "hot-arith"), 40.0)

    def test_chain_overlap(self):
        a, e = profile(ASYNC, "asprof"), profile(EHPROF, "ehprof")
        # hot-arith: async-profiler's 70 chained samples hashMix 60, fmodLoop
        # 10, ehprof's 90: 50, 40; hot-virtual: Square.area 50, fib 50
        # against Square.area 100; hot-data: in neither, left out.
        want = 100.0 * ((50 / 90 + 10 / 70) + 50 / 100) / 2
        self.assertAlmostEqual(jvm_profiles.chain_overlap(a, e), want)
        self.assertAlmostEqual(jvm_profiles.chain_overlap(a, a), 100.0)
        self.assertEqual(jvm_profiles.chain_overlap(a, profile("hot-arith;[anon] 5\n", "ehprof")), 0.0)
        # Without the samples in fmod: hot-arith hashMix alone in both.
        self.assertAlmostEqual(jvm_profiles.chain_overlap(a, e, "chains_no_fmod"), 100.0 * (1.0 + 50 / 100) / 2)

    def test_jfr(self):
        j = profile(JFR, "jfr")
        self.assertEqual(dict(j.samples), {"hot-arith": 2, "hot-virtual": 1})
        self.assertAlmostEqual(j.share("hot-arith", "JvmHot.fmodLoop"), 50.0)
        chain = ("hot-virtual", ("JvmHot$Worker.run", "JvmHot.virtualLoop", "JvmHot$Square.area"))
        self.assertEqual(j.chains[chain], 1)
        # hot-arith: JFR hashMix 1/2, fmodLoop 1/2 against ehprof's 50/90,
        # 40/90; hot-virtual: Square.area alone in both.
        self.assertAlmostEqual(jvm_profiles.chain_overlap(j, profile(EHPROF, "ehprof")),
                               100.0 * ((0.5 + 40 / 90) + 1.0) / 2)

    def test_merge(self):
        p = profile(ASYNC, "asprof")
        p.merge(profile(ASYNC, "asprof"))
        self.assertEqual(dict(p.samples), {"hot-arith": 200, "hot-virtual": 200})
        self.assertAlmostEqual(p.share("hot-arith", "JvmHot.hashMix"), 60.0)
        self.assertEqual(p.fmod_leaf["hot-arith"], 80)

    def test_perf_script_window(self):
        p = profile(PERF, "ehprof_perf", (100.0, 101.0))
        self.assertEqual(dict(p.samples), {"hot-virtual": 2})
        fib = ("hot-virtual", ("JvmHot$Worker.run", "JvmHot.virtualLoop", "JvmHot.fib", "JvmHot.fib"))
        self.assertEqual(p.chains[fib], 1)
        self.assertAlmostEqual(p.share("hot-virtual", "JvmHot$Square.area"), 50.0)
        self.assertAlmostEqual(p.pct(p.reach_start), 50.0)
        self.assertEqual(profile(PERF, "ehprof_perf", (0.0, 1e9)).total(), 3)

    def test_hostile_lines(self):
        p = profile("no count here\nhot-arith;JvmHot.crc x\n;\n\nhot-arith 3\n", "ehprof")
        self.assertEqual(p.samples["hot-arith"], 3)
        self.assertAlmostEqual(p.share("hot-arith", jvm_profiles.NO_JAVA), 100.0)


if __name__ == "__main__":
    unittest.main()
