// The cold window's walks finished late (bpf/deferred.bpf.h,
// agent/deferred/): a sample the kernel could not walk past a file whose
// table was still being built is finished from the copy of its stack once
// the table is loaded, and gives the frames the kernel's own walk gives the
// same code later; the per-CPU budget bounds the copies (samples over it
// keep their kernel frames); the agent finishes them too; a process whose
// stack is garbage from its first moments cannot make ehprof hang, crash
// or grow.
#include <algorithm>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"
#include "tests/hostile_user.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

// One sample of perf-script output: its user frames' addresses and
// functions, leaf first, and whether it ends in "[finished late]" or a
// "[stop: ...]" frame.
struct Sample {
  std::vector<std::string> addrs, symbols, dsos;
  bool late = false;
  std::string stop;
};

std::vector<Sample> ParseSamples(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  bool open = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      open = false;
      continue;
    }
    if (line[0] != '\t' && line[0] != ' ') {
      out.emplace_back();
      open = true;
      continue;
    }
    if (!open) continue;
    const size_t a = line.find_first_not_of(" \t"), sym = line.find(' ', a), dso = line.rfind(" (");
    if (sym == std::string::npos || dso == std::string::npos || dso <= sym) continue;
    const std::string where = line.substr(dso + 2, line.size() - dso - 3);
    const std::string symbol = line.substr(sym + 1, dso - sym - 1);
    if (where == "[finished late]") {
      out.back().late = true;
    } else if (where == "[stop]") {
      out.back().stop = symbol;
    } else if (where != "inlined" && !absl::StartsWith(where, "[kernel")) {
      out.back().addrs.push_back(line.substr(a, sym - a));
      out.back().symbols.push_back(symbol.substr(0, symbol.find('+')));
      out.back().dsos.push_back(where);
    }
  }
  return out;
}

// A number the summary line says before `what` ("N what"), or -1.
long long SummaryCount(const std::string& err, const std::string& what) {
  std::smatch m;
  const std::regex re("([0-9]+) " + what);
  return std::regex_search(err, m, re) ? std::stoll(m[1]) : -1;
}

// Runs prog with `args` as the unprivileged user (30 s at most) and waits
// for it.
void RunAsNobody(const std::string& prog, const std::vector<std::string>& args) {
  std::vector<char*> argv = {const_cast<char*>(prog.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!testing::BecomeUser()) _exit(2);
    alarm(30);
    execv(prog.c_str(), argv.data());
    _exit(127);
  }
  ::waitpid(pid, nullptr, 0);
}

std::string Joined(const std::vector<std::string>& v, size_t from) {
  std::string s;
  for (size_t i = from; i < v.size(); ++i) s += (i > from ? ";" : "") + v[i];
  return s;
}

class RecordDeferred : public testing::RecordingTest {
 protected:
  // A copy of testdata's `program` as dir_/name, owned by the unprivileged
  // user (dir_ opened to it); empty when it cannot be given away.
  std::string NobodysCopy(const std::string& program, const std::string& name) {
    const std::string path = dir_ + "/" + name;
    ::chmod(dir_.c_str(), 0755);
    std::filesystem::copy_file(TestdataPath(program), path);
    return ::chown(path.c_str(), testing::kNobody, testing::kNobody) == 0 ? path : "";
  }
  void TearDown() override {
    for (pid_t p : children_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    testing::RecordingTest::TearDown();
  }
  // plt_spin for `seconds`, started now (before ehprof: its files are
  // first seen, and their tables first built, when the recording starts).
  pid_t StartSpin(double seconds) {
    const std::string prog = TestdataPath("plt_spin"), s = std::to_string(seconds);
    const pid_t pid = fork();
    if (pid == 0) {
      execl(prog.c_str(), prog.c_str(), s.c_str(), nullptr);
      _exit(127);
    }
    children_.push_back(pid);
    return pid;
  }
  // Records pid with no table cache (every table built as the recording
  // starts): the perf-script text, stderr in *err.
  std::string RecordPid(pid_t pid, const std::vector<std::string>& extra, std::string* err) {
    const std::string out = dir_ + "/out.perf";
    // --start-wait-ms 0: sampling begins before the running process's
    // tables are built (as for a process that starts after the recording),
    // which the start otherwise waits for.
    std::vector<std::string> args = {"record", "-p", std::to_string(pid), "-F", "999", "-d", "1.5",
                                     "--no-table-cache", "--start-wait-ms", "0", "--show-stops", "--format",
                                     "perf-script", "-o", out};
    // At 2048 KiB/s (record's default is 8192) unless `extra` says.
    if (std::find(extra.begin(), extra.end(), "--defer-budget") == extra.end()) {
      args.insert(args.end(), {"--defer-budget", "2048"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunEhprof(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    *err = r.err;
    return testing::ReadFile(out);
  }
  std::vector<pid_t> children_;
};

TEST_F(RecordDeferred, FinishedLateStacksHaveTheKernelWalksFrames) {
  std::string err;
  // Long enough for ehprof's start on a loaded machine (seconds of
  // verifying); killed at the end.
  const std::string text = RecordPid(StartSpin(30), {}, &err);
  const std::vector<Sample> samples = ParseSamples(text);
  // Every stack the kernel walked to its end: the frames above the leaf
  // (return addresses, fixed by the code; a leaf in labs and one in its
  // PLT stub have the same).
  std::set<std::string> kernel_tails;
  size_t late = 0, kernel_complete = 0, late_complete = 0, still_cold = 0;
  for (const Sample& s : samples) {
    if (s.addrs.empty()) continue;
    const bool complete = s.stop.empty() && s.symbols.back().rfind("_start", 0) == 0;
    if (s.late) {
      ++late;
      late_complete += complete;
    } else if (complete) {
      ++kernel_complete;
      kernel_tails.insert(Joined(s.addrs, 1));
    }
    still_cold += absl::StrContains(s.stop, "table not loaded") || absl::StrContains(s.stop, "not yet known");
  }
  size_t matched = 0;
  std::string unmatched;
  for (const Sample& s : samples) {
    if (!s.late || s.addrs.empty()) continue;
    if (kernel_tails.count(Joined(s.addrs, 1))) {
      ++matched;
    } else if (unmatched.size() < 4000) {
      unmatched += Joined(s.symbols, 0) + " | " + Joined(s.addrs, 0) + "\n";
    }
  }
  std::printf("%zu samples: %zu finished late (%zu complete, %zu with the frames of a kernel walk), "
              "%zu complete from the kernel, %zu left cold\n",
              samples.size(), late, late_complete, matched, kernel_complete, still_cold);
  testing::PrintFigure("finished_late", late);
  testing::PrintFigure("left_cold", still_cold);
  // The summary's line comes only when a copy was sent or refused: none
  // when the window was missed (its count then 0).
  EXPECT_EQ(std::max(0LL, SummaryCount(err, "samples \\(their table or process not known")),
            static_cast<long long>(late))
      << err;
  // The window is libc's table build: 1 to 6 samples at 999 Hz before the
  // builds went by demand on two threads; now often none (the comparison
  // below is then empty, and still_cold says no sample stayed cold).
  EXPECT_GT(kernel_complete, 100u) << err;
  // Every late walk reached the bottom, through the frames the kernel's
  // walk finds for the same code once the tables are in.
  EXPECT_EQ(late_complete, late) << unmatched;
  EXPECT_EQ(matched, late) << "late stacks no kernel walk gave:\n" << unmatched;
  EXPECT_EQ(still_cold, 0u) << err;
}

TEST_F(RecordDeferred, CopiesOverTheBudgetKeepTheirKernelFrames) {
  std::string err;
  // 4 KiB a second per CPU: a copy or two, then one a second at most.
  const std::string text = RecordPid(StartSpin(30), {"--defer-budget", "4"}, &err);
  const long long dropped = SummaryCount(err, "not copied, over the");
  size_t cold_with_frames = 0, cold = 0;
  for (const Sample& s : ParseSamples(text)) {
    if (!absl::StrContains(s.stop, "table not loaded") && !absl::StrContains(s.stop, "not yet known")) continue;
    ++cold;
    cold_with_frames += !s.addrs.empty();
  }
  std::printf("over the budget: %lld samples not copied; %zu samples left cold, %zu of them with their frames\n",
              dropped, cold, cold_with_frames);
  // Each kept its kernel frames (the leaf at least) and its stop reason
  // (the budget's count also has samples from before the start, which the
  // output leaves out).
  EXPECT_EQ(cold_with_frames, cold);
}

TEST_F(RecordDeferred, TheAgentFinishesTheColdWindowToo) {
  const pid_t pid = StartSpin(40);
  // The agent's start takes seconds of verifying on a loaded machine. Its
  // copies are on by default (512 KiB/s a CPU).
  RunResult r = RunEhprof({"agent", "-p", std::to_string(pid), "-F", "999", "--interval", "1",
                           "--no-table-cache", "--start-wait-ms", "0", "--output-dir", dir_ + "/out"},
                          SIGTERM, 9000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const long long late = SummaryCount(r.err, "stack walks finished late");
  std::printf("agent: %lld walks finished late\n", late);
  // The window is libc's table build: a few samples at 999 Hz, often none
  // since builds go by demand: the agent's run with the copies on is what
  // is checked (its exit above), the count printed.
}

// A library dlopen()ed while the process runs: its first samples come
// before user space has read the new mapping (the walk stops at a pc in no
// mapping of the process's entry and asks for the maps again); their walks
// are finished late over the maps read after them, so none stays at "pc
// outside known mappings".
TEST_F(RecordDeferred, AJustDlopenedLibrarysFirstSamplesAreFinishedLate) {
  // A fresh copy: a file no table of this run or an earlier one covers.
  const std::string lib = dir_ + "/libdlwork_fresh.so", out = dir_ + "/out.perf";
  std::filesystem::copy_file(TestdataPath("libdlwork.so"), lib);
  ASSERT_EQ(::setenv("EHPROF_DLWORK_PATH", lib.c_str(), 1), 0);
  RunResult r = RunEhprof({"record", "-F", "999", "--no-table-cache", "--show-stops", "--format", "perf-script",
                           "-o", out, "--", TestdataPath("dlopen_main"), "1"});
  ::unsetenv("EHPROF_DLWORK_PATH");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t in_lib = 0, in_lib_complete = 0, unmapped = 0, late = 0;
  std::string stops;
  for (const Sample& s : ParseSamples(testing::ReadFile(out))) {
    unmapped += absl::StrContains(s.stop, "outside known mappings");
    late += s.late;
    if (s.symbols.empty() || s.symbols.front() != "dlwork_inner") continue;
    ++in_lib;
    const bool complete = s.stop.empty() && s.symbols.back().rfind("_start", 0) == 0;
    in_lib_complete += complete;
    if (!complete && stops.size() < 2000) stops += Joined(s.symbols, 0) + " [" + s.stop + "]\n";
  }
  std::printf("dlopened library: %zu samples in it, %zu complete; %zu finished late; %zu at a pc outside "
              "known mappings\n", in_lib, in_lib_complete, late, unmapped);
  EXPECT_GT(in_lib, 500u) << r.err;
  EXPECT_EQ(unmapped, 0u) << r.err;
  EXPECT_EQ(in_lib_complete, in_lib) << stops;
}

// A process gone before its library's table was built (a short tool: ar
// loading its LLVM plugin spends its last ~100 ms in libLLVM's static
// initializers, whose 950k-row table takes longer to build): the build is
// loaded all the same, parked for the next process running it, and the
// samples held for it are finished with it (before: dropped with the
// process, and the late walk went on by frame pointer: "bad frame").
TEST_F(RecordDeferred, AProcessGoneBeforeItsTableWasBuiltIsFinishedWithIt) {
  size_t in_llvm = 0, complete = 0;
  std::string stops;
  for (int run = 0; run < 2; ++run) {
    const std::string out = dir_ + "/gone" + std::to_string(run) + ".perf";
    ASSERT_EQ(::setenv("EHPROF_DLWORK_PATH", testing::DebianLibLlvm(), 1), 0);
    RunResult r = RunEhprof({"record", "-F", "999", "--no-table-cache", "--show-stops", "--format", "perf-script",
                             "-o", out, "--", TestdataPath("dlopen_main"), "0.1"});
    ::unsetenv("EHPROF_DLWORK_PATH");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const Sample& s : ParseSamples(testing::ReadFile(out))) {
      if (std::find(s.dsos.begin(), s.dsos.end(), testing::DebianLibLlvm()) == s.dsos.end()) continue;
      ++in_llvm;
      const bool ok = s.stop.empty() && s.symbols.back().rfind("_start", 0) == 0;
      complete += ok;
      if (!ok && stops.size() < 2000) stops += Joined(s.symbols, 0) + " [" + s.stop + "]\n";
    }
  }
  std::printf("libLLVM loaded by a process gone before its table: %zu samples there, %zu complete\n", in_llvm,
              complete);
  EXPECT_GT(in_llvm, 0u);
  EXPECT_EQ(complete, in_llvm) << stops;
}

// Code called from JIT code placed after the maps were read (a Chromium
// renderer's V8 code space growing): the walk reaches, through a frame
// pointer, a return address in no mapping known yet (testdata/late_jit.c).
// The bpf_loop build finds it is anonymous executable memory (bpf_find_vma)
// and walks it by frame pointer at once; the tail-call build's kernels have
// no bpf_find_vma, so the maps are read again and the walk finished late.
// Either way every sample reaches main through the stub.
TEST_F(RecordDeferred, CallsFromJitCodePlacedAfterTheMapsWereReadReachMain) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 machine code in testdata/late_jit.c";
#endif
  const char* old = std::getenv("EHPROF_PRETEND_OLD_KERNEL");
  const bool tail_calls = old && std::string(old) == "1";
  const std::string out = dir_ + "/late_jit.perf";
  RunResult r = RunEhprof({"record", "-F", "999", "--show-stops", "--format", "perf-script", "-o", out, "--",
                           TestdataPath("late_jit"), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t spin = 0, through_stub = 0, late = 0;
  std::string stops;
  for (const Sample& s : ParseSamples(testing::ReadFile(out))) {
    if (s.symbols.empty() || s.symbols.front() != "late_spin") continue;
    ++spin;
    late += s.late;
    const bool reached =
        std::find(s.symbols.begin(), s.symbols.end(), "main") != s.symbols.end() &&
        std::find(s.symbols.begin(), s.symbols.end(), "late_round") != s.symbols.end() && s.stop.empty();
    through_stub += reached;
    if (!reached && stops.size() < 2000) stops += Joined(s.symbols, 0) + " [" + s.stop + "]\n";
  }
  std::printf("late JIT code: %zu samples in late_spin, %zu through the stub to main, %zu finished late\n", spin,
              through_stub, late);
  // 2 s at 999 Hz, less when the machine is busy (ctest runs tests side by
  // side on two CPUs).
  EXPECT_GT(spin, 500u) << r.err;
  EXPECT_EQ(through_stub, spin) << stops;
  if (tail_calls) {
    // A new page every 250 ms: its first sample is before the maps' next read.
    EXPECT_GT(late, 0u) << r.err;
  } else {
    // Walked in the kernel from the new page's first sample; but a sample
    // taken while the program holds its mapping lock (mmap of the next
    // page) gets no answer from bpf_find_vma and is finished late.
    EXPECT_LE(late * 50, spin) << r.err;
  }
}

// An unprivileged user's process whose every sample's walk reaches an
// unmapped return address (crafted: 0x1000) would ask for a stack copy
// each time, spending each CPU's copy budget that other processes' cold
// windows need: it gets EHP_DEFERRED_NOMAP_PER_S copies a second, no more.
// Both ways there: by CFI ("pc outside known mappings") and by a frame
// pointer from code without CFI (`fp`).
class RecordDeferredUnmapped : public RecordDeferred, public ::testing::WithParamInterface<const char*> {};

TEST_P(RecordDeferredUnmapped, AProcessLeadingToUnmappedAddressesGetsFewCopies) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 assembly in testdata/unmapped_ra.c";
#endif
  if (!testing::RequireSetpriv()) GTEST_SKIP();
  const bool fp = std::string(GetParam()) == "fp";
  // A name of each mode's own (--comm): ctest runs the two side by side,
  // and each recording would count the other's copies too.
  const std::string name = fp ? "unmapped_fp" : "unmapped_ra";
  const std::string prog = NobodysCopy("unmapped_ra", name), out = dir_ + "/unmapped.perf";
  ASSERT_FALSE(prog.empty());
  // The same file under another name, run first: its table is loaded when
  // the measured run starts, so that run's copies are the capped kind only
  // (not its first samples', which wait for the table and are finished
  // late), and this one's samples are not recorded (--comm).
  const std::string warm = dir_ + "/warm_" + name;
  ASSERT_EQ(::link(prog.c_str(), warm.c_str()), 0);
  const double seconds = 2;
  RunResult r = RunEhprof({"record", "-a", "--comm", name, "-F", "999", "--show-stops", "--format", "perf-script",
                           "-o", out},
                          SIGINT, 500, [&](pid_t) {
                            RunAsNobody(warm, {std::to_string(1.0), GetParam()});
                            RunAsNobody(prog, {std::to_string(seconds), GetParam()});
                          });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Its samples that came with a copy (the host's other processes' copies
  // are counted in "sent" too).
  const long long with_copy = std::max(0LL, SummaryCount(r.err, "samples \\(their table or process not known")) +
                              std::max(0LL, SummaryCount(r.err, "not finishable"));
  size_t unmapped = 0;
  for (const Sample& s : ParseSamples(testing::ReadFile(out))) {
    unmapped += absl::StrContains(s.stop, fp ? "frame pointer leads outside the mappings" : "outside known mappings");
  }
  std::printf("unmapped return addresses (%s): %zu samples stopped there, %lld with a stack copy; %lld copies sent "
              "on the host\n",
              GetParam(), unmapped, with_copy, SummaryCount(r.err, "stack copies sent"));
  // A quarter of 2 s at 999 Hz at least (a busy machine runs it less).
  EXPECT_GT(unmapped, 500u) << r.err;
  // Its windows of a second: at most seconds + 1 of them.
  EXPECT_LE(with_copy, static_cast<long long>(EHP_DEFERRED_NOMAP_PER_S * (seconds + 1))) << r.err;
}

INSTANTIATE_TEST_SUITE_P(ByCfiAndByFramePointer, RecordDeferredUnmapped, ::testing::Values("cfi", "fp"));

TEST_F(RecordDeferred, GarbageStackFromTheFirstSampleIsBounded) {
  if (!testing::RequireSetpriv()) GTEST_SKIP();
  const std::string prog = NobodysCopy("garbage_stack", "garbage_stack");
  ASSERT_FALSE(prog.empty());
  const std::string out = dir_ + "/garbage.perf";
  long hwm_kb = 0;
  const auto start = std::chrono::steady_clock::now();
  // Started once the recording runs, each run's first samples in the
  // cold window (its binary unknown, then its table building).
  RunResult r = RunEhprof(
      {"record", "-a", "--comm", "garbage_stack", "-F", "999", "--no-table-cache", "--defer-budget", "2048",
       "--show-stops", "--format",
       "perf-script", "-o", out},
      SIGINT, 2500, [&](pid_t ehprof) {
        for (int run = 0; run < 6; ++run) RunAsNobody(prog, {"0.3"});
        std::ifstream in(absl::StrCat("/proc/", ehprof, "/status"));
        for (std::string line; std::getline(in, line);) {
          if (absl::StartsWith(line, "VmHWM:")) hwm_kb = std::stol(line.substr(6));
        }
      });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* bad : {"terminate", "internal error", "Sanitizer", "killed after"}) {
    EXPECT_FALSE(absl::StrContains(r.err, bad)) << bad << "\n" << r.err;
  }
  const long long sent = SummaryCount(r.err, "stack copies sent");
  size_t samples = 0, longest = 0;
  for (const Sample& s : ParseSamples(testing::ReadFile(out))) {
    ++samples;
    longest = std::max(longest, s.addrs.size());
  }
  std::printf("garbage stacks: %lld copies sent, %zu samples, longest %zu frames, ehprof's peak RSS %ld KB, "
              "%.1f s\n",
              sent, samples, longest, hwm_kb, took);
  EXPECT_GT(samples, 100u);
  EXPECT_LE(longest, static_cast<size_t>(EHP_MAX_USER_FRAMES));
  EXPECT_LT(took, 30.0) << r.err;
  // ehprof -a's own size here is ~100-200 MB; held copies are capped at
  // 64 MB in all.
  EXPECT_GT(hwm_kb, 0);
  EXPECT_LT(hwm_kb, 700 * 1024) << r.err;
}

// An unprivileged user's program spinning in code it placed in a fresh
// RWX page, its rbp at a fake frame that leads to itself with a return
// address in that page (testdata/jit_fp_loop.c): the walk through that
// anonymous executable memory (finished late while the page is unknown,
// then by the entry's anonymous mapping once the maps are read; a return
// address in it the kernel steps at once, bpf/fp_fallback.bpf.h) steps by
// frame pointer back to where it was. Each walk ends with a stop reason within the frame bound, ehprof
// keeps sampling and says nothing went wrong.
TEST_F(RecordDeferred, AFramePointerLoopThroughNewJitCodeEnds) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 machine code in testdata/jit_fp_loop.c";
#endif
  if (!testing::RequireSetpriv()) GTEST_SKIP();
  const std::string prog = NobodysCopy("jit_fp_loop", "jit_fp_loop");
  ASSERT_FALSE(prog.empty());
  const std::string out = dir_ + "/jit_fp_loop.perf";
  RunResult r = RunEhprof({"record", "-a", "--comm", "jit_fp_loop", "-F", "999", "--show-stops", "--format",
                           "perf-script", "-o", out},
                          SIGINT, 2000, [&](pid_t) { RunAsNobody(prog, {"1.5"}); });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* bad : {"terminate", "internal error", "Sanitizer", "killed after"}) {
    EXPECT_FALSE(absl::StrContains(r.err, bad)) << bad << "\n" << r.err;
  }
  size_t in_page = 0, longest = 0;
  std::set<std::string> stops;
  for (const Sample& s : ParseSamples(testing::ReadFile(out))) {
    longest = std::max(longest, s.addrs.size());
    if (s.symbols.empty() || s.symbols.front() != "[unknown]") continue;
    ++in_page;
    stops.insert(s.stop);
    EXPECT_FALSE(s.stop.empty()) << Joined(s.symbols, 0);
  }
  std::printf("fp loop in new JIT code: %zu samples in the page, longest stack %zu frames, stops:", in_page,
              longest);
  for (const std::string& st : stops) std::printf(" [%s]", st.c_str());
  std::printf("\n");
  EXPECT_GT(in_page, 300u) << r.err;
  EXPECT_LE(longest, static_cast<size_t>(EHP_MAX_USER_FRAMES));
}

}  // namespace
}  // namespace ehprof
