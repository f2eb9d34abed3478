// `ehprof check`: the BPF programs load here and keep verifier headroom.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

TEST(Check, ProgramsLoadWithAMarginUnderTheVerifierLimit) {
  if (geteuid() != 0) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "CI=true but not root: the BPF tests must run";
    std::printf("SKIPPED: needs root (CAP_BPF, CAP_PERFMON)\n");
    GTEST_SKIP();
  }
  FILE* p = popen((testing::EhprofBinary() + " check 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
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

}  // namespace
}  // namespace ehprof
