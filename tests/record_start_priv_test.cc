// `record -a` of processes that were running before it, with the table
// cache empty: their maps are read at the start and the recording begins
// once their files' tables are loaded (bounded), so their samples are
// complete from the first one on, the vDSO's included (built first for
// every process).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::TestdataPath;

struct Judged {
  size_t samples = 0, incomplete = 0, in_vdso = 0, in_vdso_incomplete = 0;
  std::string first_incomplete;
};

// The samples of `comm` in perf-script output with --show-stops (an
// incomplete stack ends in a "[stop: REASON]" frame).
Judged Judge(const std::string& text, const std::string& comm) {
  Judged j;
  for (absl::string_view block : absl::StrSplit(text, "\n\n", absl::SkipWhitespace())) {
    if (block.substr(0, comm.size() + 1) != comm + " ") continue;
    ++j.samples;
    const bool incomplete = block.find("[stop:") != absl::string_view::npos;
    const bool vdso = block.find("([vdso])") != absl::string_view::npos;
    j.incomplete += incomplete;
    j.in_vdso += vdso;
    j.in_vdso_incomplete += vdso && incomplete;
    if (incomplete && j.first_incomplete.empty()) j.first_incomplete = std::string(block);
  }
  return j;
}

class RecordStart : public testing::RecordingTest {
 protected:
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    testing::RecordingTest::TearDown();
  }
  // Starts argv before the recording; its command name is `comm`.
  void Start(std::vector<std::string> argv) {
    child_ = ::fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      std::vector<char*> a;
      for (std::string& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
    ::usleep(300000);  // running, its libraries mapped
  }
  std::string Record(const std::string& comm, std::string* err) {
    const std::string out = dir_ + "/out.txt";
    auto r = RunEhprof({"record", "-a", "--comm", comm, "-F", "999", "-d", "1.5", "--no-table-cache",
                        "--show-stops", "--format", "perf-script", "-o", out});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    *err = r.err;
    return testing::ReadFile(out);
  }
  pid_t child_ = -1;
};

TEST_F(RecordStart, AProcessRunningBeforeIsCompleteFromItsFirstSample) {
  // A stripped program of its own name (its comm), 20 frames deep.
  const std::string prog = dir_ + "/start_deep";
  std::filesystem::copy_file(TestdataPath("deep_recursion.stripped"), prog);
  std::filesystem::permissions(prog, std::filesystem::perms::owner_all);
  Start({prog, "30", "20"});
  std::string err;
  Judged j = Judge(Record("start_deep", &err), "start_deep");
  // On a loaded machine it gets a share of a CPU: 66 samples in 1.5 s
  // beside the kernel matrix's qemu.
  EXPECT_GE(j.samples, 30u) << err;
  EXPECT_EQ(j.incomplete, 0u) << j.first_incomplete << "\n" << err;
  EXPECT_NE(err.find("processes running at start read before sampling began"), std::string::npos) << err;
}

TEST_F(RecordStart, VdsoFramesAreCompleteFromTheFirstSample) {
  // clock_gettime in a loop: many samples in the vDSO.
  Start({"/usr/bin/python3", "-c",
         "open('/proc/self/comm', 'w').write('start_vdso')\n"
         "import time\n"
         "while True: time.clock_gettime(time.CLOCK_MONOTONIC)\n"});
  std::string err;
  Judged j = Judge(Record("start_vdso", &err), "start_vdso");
  EXPECT_GE(j.in_vdso, 20u) << err;
  EXPECT_EQ(j.in_vdso_incomplete, 0u) << j.first_incomplete << "\n" << err;
}

}  // namespace
}  // namespace ehprof
