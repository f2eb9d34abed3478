// `ehprof check`: the BPF programs load here and keep verifier headroom.

#include <cstdio>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

struct CheckRun {
  int status = -1;  // as pclose returns it
  std::string out;  // stdout and stderr
};

CheckRun RunCheck(const std::string& args) {
  CheckRun r;
  FILE* p = popen((testing::EhprofBinary() + " check " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  r.status = pclose(p);
  return r;
}

TEST(Check, ProgramsLoadWithAMarginUnderTheVerifierLimit) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  CheckRun run = RunCheck("");
  const std::string& out = run.out;
  ASSERT_EQ(run.status, 0) << out;
  // Every feature probed is present on the kernels ehprof runs on.
  EXPECT_NE(out.find("bpf_loop                     5.17  yes"), std::string::npos) << out;
  EXPECT_EQ(out.find("  NO"), std::string::npos) << out;
  std::istringstream lines(out);
  std::string line;
  bool saw_sampler = false;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string name;
    unsigned long long insns = 0;
    f >> name >> insns;
    if (name.rfind("ehprof_", 0) != 0) continue;
    // The verifier's budget is 1,000,000 processed instructions; keep most
    // of it free so kernel and compiler changes do not tip it over (Parca's
    // unwinder broke on 6.4 and 6.8 that way).
    EXPECT_LT(insns, 250000u) << line;
    EXPECT_GT(insns, 0u) << line;
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

}  // namespace
}  // namespace ehprof
