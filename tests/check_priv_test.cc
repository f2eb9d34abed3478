// `ehprof check`: the BPF programs load here and keep verifier headroom.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/runtime_programs.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

struct CheckRun {
  int status = -1;  // as pclose returns it
  std::string out;  // stdout and stderr
};

// env: "NAME=VALUE " assignments for the command, or empty.
CheckRun RunCheck(const std::string& args, const std::string& env = "") {
  CheckRun r;
  FILE* p = popen((env + testing::EhprofBinary() + " check " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  r.status = pclose(p);
  return r;
}

// Each program's line of `ehprof check`: its name and the instructions
// the verifier processed.
std::vector<std::pair<std::string, unsigned long long>> ProgramInsns(const std::string& out) {
  std::vector<std::pair<std::string, unsigned long long>> programs;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string name;
    unsigned long long insns = 0;
    f >> name >> insns;
    if (name.rfind("ehprof_", 0) == 0) programs.emplace_back(name, insns);
  }
  return programs;
}

TEST(Check, ProgramsLoadWithAMarginUnderTheVerifierLimit) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  CheckRun run = RunCheck("");
  const std::string& out = run.out;
  ASSERT_EQ(run.status, 0) << out;
  // Every feature probed is present on the kernels ehprof runs on.
  EXPECT_NE(out.find("bpf_loop                     5.17  yes"), std::string::npos) << out;
  EXPECT_EQ(out.find("  NO"), std::string::npos) << out;
  bool saw_sampler = false;
  for (const auto& [name, insns] : ProgramInsns(out)) {
    // The verifier's budget is 1,000,000 processed instructions; keep most
    // of it free so kernel and compiler changes do not tip it over (Parca's
    // unwinder broke on 6.4 and 6.8 that way).
    EXPECT_LT(insns, 250000u) << name;
    EXPECT_GT(insns, 0u) << name;
    saw_sampler = saw_sampler || name == "ehprof_sample";
  }
  EXPECT_TRUE(saw_sampler) << out;
}

// The object built into ehprof, loaded from its file as the kernel matrix
// loads the same source built against other kernels' BTF; a file that is
// not such a build is refused, naming it.
TEST(Check, LoadsABpfObjectFileAndRefusesOneThatIsNotOurs) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  std::string bin = testing::EhprofBinary();
  std::string object = bin.substr(0, bin.rfind('/')) + "/bpf/profiler.bpf.o";
  CheckRun ok = RunCheck("--bpf-object " + object);
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("ehprof_sample"), std::string::npos) << ok.out;
  CheckRun bad = RunCheck("--bpf-object " + bin);
  EXPECT_NE(bad.status, 0) << bad.out;
  EXPECT_NE(bad.out.find(bin + ": not a build of ehprof's BPF programs"), std::string::npos)
      << bad.out;
}

// The tail-call build (kernels without bpf_loop) on this kernel, the three
// helpers taken as absent: it is chosen, says how deep it walks, and each
// program keeps the same headroom; the bpf_loop build's object file is
// refused there, naming the build it needs.
TEST(Check, TailCallBuildLoadsWhereTheLoopBuildsHelpersAreMissing) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  const std::string env = "EHPROF_PRETEND_OLD_KERNEL=1 ";
  CheckRun run = RunCheck("", env);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("user walk: tail calls (bpf_get_current_task_btf, bpf_task_pt_regs, "
                         "bpf_loop missing), up to 1024 frames"),
            std::string::npos)
      << run.out;
  int walks = 0;
  for (const auto& [name, insns] : ProgramInsns(run.out)) {
    EXPECT_LT(insns, 250000u) << name;
    EXPECT_GT(insns, 0u) << name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "_walk") == 0) ++walks;
  }
  EXPECT_EQ(walks, 4) << run.out;  // perf_event, kprobe, tracepoint, tp_btf

  std::string bin = testing::EhprofBinary();
  std::string dir = bin.substr(0, bin.rfind('/')) + "/bpf/";
  CheckRun tail = RunCheck("--bpf-object " + dir + "profiler_compat.bpf.o", env);
  EXPECT_EQ(tail.status, 0) << tail.out;
  CheckRun loop = RunCheck("--bpf-object " + dir + "profiler.bpf.o", env);
  EXPECT_NE(loop.status, 0) << loop.out;
  EXPECT_NE(loop.out.find("needs the tail-call build"), std::string::npos) << loop.out;
}

// The runtimes: the JDK and node installed here, and a Python, a JVM and a
// node running now, each on a line of its own that says its frames are read.
TEST(Check, ListsInstalledAndRunningRuntimesAsReadable) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (!testing::HaveTestJdk()) GTEST_SKIP() << testing::kTestJdk << " is not installed";
  if (!testing::RequireNode()) GTEST_SKIP();
  const std::string dir = ::testing::TempDir() + "/check." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  pid_t py = testing::SpawnProgram({testing::DebianPython(), "-c", "import time\nwhile True: time.sleep(0.01)"});
  pid_t jvm = testing::StartJvmWaits(dir, 20), node = testing::StartNodeWaits(20);
  const CheckRun run = RunCheck("");
  const std::string py_pid = std::to_string(py), jvm_pid = std::to_string(jvm), node_pid = std::to_string(node);
  for (pid_t* p : {&py, &jvm, &node}) testing::KillProgram(p);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run.status, 0) << run.out;
  const std::string libjvm = std::string(testing::kTestJdk) + "/lib/server/libjvm\\.so";
  for (const std::string& line :
       {"CPython +pid " + py_pid + " \\(python3\\.[0-9]+\\) " + testing::DebianPython() +
            " +3\\.[0-9]+ +readable: interpreter state and code objects read",
        "HotSpot +" + libjvm + " +17[.0-9]* +readable: gHotSpotVMStructs and gHotSpotVMTypes exported",
        "HotSpot +pid " + jvm_pid + " \\(java\\) " + libjvm + " +17\\S+ +readable: VMStructs read, code cache found",
        std::string("V8 +/usr/bin/node +- +readable: [0-9]+ v8dbg_\\* values found"),
        "V8 +pid " + node_pid + " \\(node\\) /usr/bin/node +- +readable: v8dbg_\\* metadata found, layout built"}) {
    EXPECT_TRUE(std::regex_search(run.out, std::regex(line))) << line << "\n" << run.out;
  }
}

}  // namespace
}  // namespace ehprof
