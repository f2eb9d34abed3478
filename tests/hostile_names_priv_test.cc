// Names, numbers and series an unprivileged user controls, against a real
// ehprof agent (and ehprof record -a) running as root: a program named
// python3.99999999999 with the interpreter's symbols (std::stoi once threw
// and aborted the agent), comms that are not UTF-8 or hold escape bytes
// (Pyroscope once refused every push: no service on the host got its
// interval), and thousands of processes with distinct comms (one series
// each, without end). Each child runs as uid/gid 65534.
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "profile.pb.h"
#include "tests/pyroscope_server.h"
#include "tests/server_process.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

using testing::kNobody;
constexpr char kOverflow[] = "ehprof-other-services";

// A child of uid/gid 65534 running fn (which does not return, or the child
// exits 0).
pid_t AsNobody(const std::function<void()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!testing::BecomeUser()) _exit(2);
    alarm(120);  // whatever happens to the test, it ends
    fn();
    _exit(0);
  }
  return pid;
}

// Spins on a CPU under comm `name` until killed.
pid_t SpinNamed(const std::string& name) {
  return AsNobody([&name] {
    prctl(PR_SET_NAME, name.c_str());
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  });
}

void Reap(pid_t* pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
  *pid = -1;
}

// A directory 65534 owns, in a fresh one all may enter.
class HostileNames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    dir_ = "/tmp/hostile_names." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/user");
    chmod(dir_.c_str(), 0755);
    ASSERT_EQ(chown((dir_ + "/user").c_str(), kNobody, kNobody), 0);
    other_ = testing::SpawnProgram({TestdataPath("deep_recursion"), "60", "10"});
    ASSERT_GT(other_, 0);
  }
  void TearDown() override {
    for (pid_t& p : children_) Reap(&p);
    Reap(&other_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // The interval files of an --output-dir (CPU ones), oldest first.
  std::vector<std::string> IntervalFiles(const std::string& out) const {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(out)) {
      const std::string p = e.path();
      if (p.ends_with(".pb.gz") && !p.ends_with(".off_cpu.pb.gz")) files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    return files;
  }
  // Waits (up to 40 s: a loaded machine loads BPF and reads every process
  // slowly) until the agent has written `more` interval files beyond the
  // `already` there; not a timed assertion, the test judges the files.
  void AwaitIntervals(const std::string& out, size_t already, size_t more) const {
    for (int i = 0; i < 400; ++i) {
      std::error_code ec;
      if (std::filesystem::exists(out, ec) && IntervalFiles(out).size() >= already + more) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  size_t IntervalsSoFar(const std::string& out) const {
    std::error_code ec;
    return std::filesystem::exists(out, ec) ? IntervalFiles(out).size() : 0;
  }
  std::string dir_;
  pid_t other_ = -1;  // deep_recursion: the program that must go on being sampled
  std::vector<pid_t> children_;
};

// service_name -> samples, as pprof's own schema reads an interval file.
std::map<std::string, int64_t> Services(const std::string& path) {
  std::map<std::string, int64_t> out;
  const std::optional<std::string> raw = testing::Gunzip(testing::ReadFile(path));
  perftools::profiles::Profile p;
  if (!raw || !p.ParseFromString(*raw)) {
    ADD_FAILURE() << path << ": not a gzipped pprof profile";
    return out;
  }
  for (const auto& s : p.sample()) {
    for (const auto& l : s.label()) {
      if (p.string_table(static_cast<int>(l.key())) == "service_name") {
        out[p.string_table(static_cast<int>(l.str()))] += s.value(0);
      }
    }
  }
  return out;
}

// (a) python3.99999999999 with _PyEval_EvalFrameDefault, _PyRuntime and
// PyCode_Type: one started before the agent and record -a (their first
// scan of /proc meets it), one while they run (an exec they see). Both
// stay alive, write every interval and go on sampling deep_recursion.
TEST_F(HostileNames, PythonVersionNoIntHoldsCrashesNothing) {
  const std::string fake = dir_ + "/user/python3.99999999999";
  std::filesystem::copy_file(TestdataPath("fake_python"), fake);
  ASSERT_EQ(chown(fake.c_str(), kNobody, kNobody), 0);
  chmod(fake.c_str(), 0755);
  auto start_fake = [&] {
    children_.push_back(AsNobody([&fake] { execl(fake.c_str(), fake.c_str(), "60", nullptr); }));
  };
  start_fake();
  const std::string folded = dir_ + "/record.folded", record_log = dir_ + "/record.log";
  pid_t record = testing::SpawnLogged(
      {testing::EhprofBinary(), "record", "-a", "-F", "199", "-q", "-o", folded}, record_log, dir_);
  ASSERT_GT(record, 0);
  RunResult r = RunEhprof({"agent", "-a", "-F", "199", "--interval", "2", "--output-dir", dir_ + "/out",
                           "--metrics-every", "0"},
                          SIGTERM, 500, [&](pid_t) {
                            AwaitIntervals(dir_ + "/out", 0, 1);
                            const size_t before = IntervalsSoFar(dir_ + "/out");
                            start_fake();
                            AwaitIntervals(dir_ + "/out", before, 3);
                          });
  kill(record, SIGINT);
  int status = -1;
  for (int i = 0; i < 300 && waitpid(record, &status, WNOHANG) != record; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Reap(&record);
  const std::string record_err = testing::ReadFile(record_log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << record_err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  // Every interval handed over written (the worker may fall behind on a
  // loaded machine and drop some, counted: not this test's concern), and
  // deep_recursion in each but the last (which may be a few ms long).
  std::smatch ran;
  ASSERT_TRUE(std::regex_search(r.err, ran, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  const std::vector<std::string> files = IntervalFiles(dir_ + "/out");
  EXPECT_EQ(std::to_string(files.size()), ran[2].str()) << r.err;
  ASSERT_GE(files.size(), 4u) << r.err;
  for (size_t i = 0; i + 1 < files.size(); ++i) {
    EXPECT_GT(Services(files[i])["deep_recursion"], 0) << files[i];
  }
  // record -a went on too: deep_recursion and the fake interpreter sampled.
  uint64_t other = 0, fakes = 0;
  std::ifstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const uint64_t n = std::stoull(line.substr(line.rfind(' ') + 1));
    if (line.starts_with("deep_recursion;")) other += n;
    if (line.starts_with("python3.9999999;")) fakes += n;
  }
  EXPECT_GT(other, 100u) << record_err;
  EXPECT_GT(fakes, 100u) << record_err;
}

// (b) comms that are not UTF-8 and that hold a terminal escape, while the
// agent pushes to the real Pyroscope every second: every push accepted,
// deep_recursion's series there, the names arrived escaped, and no escape
// byte in the agent's log.
TEST_F(HostileNames, CommsThatAreNotUtf8OrEscapesBlindNoService) {
  testing::PyroscopeServer server;
  std::string error;
  if (!testing::RequireServer(server.Start(&error), error)) GTEST_SKIP() << error;
  children_.push_back(SpinNamed("\xff\xfe\xc3" "bad"));
  children_.push_back(SpinNamed("\x1b[2Jesc"));
  RunResult r = RunEhprof({"agent", "-a", "--interval", "1", "--pyroscope", server.url(), "--output-dir",
                           dir_ + "/out", "--metrics-every", "0"},
                          SIGTERM, 500, [&](pid_t) { AwaitIntervals(dir_ + "/out", 0, 4); });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  std::smatch pushed, ran;
  ASSERT_TRUE(std::regex_search(r.err, pushed, std::regex(R"(pushed (\d+) profiles to \S+ \((\d+) refused, (\d+) dropped\))")))
      << r.err;
  ASSERT_TRUE(std::regex_search(r.err, ran, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  EXPECT_EQ(pushed[1].str(), ran[2].str()) << r.err;  // every interval arrived
  EXPECT_GE(std::stoi(ran[2].str()), 4) << r.err;
  EXPECT_EQ(pushed[2].str(), "0") << r.err;
  EXPECT_EQ(pushed[3].str(), "0") << r.err;
  EXPECT_EQ(r.err.find("invalid utf8"), std::string::npos) << r.err;
  // Pyroscope's own label values: the names as ehprof escaped them.
  const std::string values = testing::ShellOutput(absl::StrCat(
      "curl -s -X POST -H 'Content-Type: application/json' -d '{\"name\":\"service_name\"}' ",
      server.query_url(), "/querier.v1.QuerierService/LabelValues"));
  EXPECT_NE(values.find(R"("deep_recursion")"), std::string::npos) << values;
  EXPECT_NE(values.find(R"("\\xff\\xfe\\xc3bad")"), std::string::npos) << values;
  EXPECT_NE(values.find(R"("\\x1b[2Jesc")"), std::string::npos) << values;
}

// (c) 2,000 short-lived processes, each with its own comm, with
// --max-services 20: no interval has more than 20 services and the
// overflow one, deep_recursion (sampled before the burst) keeps its place
// in each, and the overflow is said once.
TEST_F(HostileNames, ManyCommsStayWithinTheServiceBound) {
  RunResult r = RunEhprof(
      {"agent", "-a", "-F", "499", "--interval", "1", "--max-services", "20", "--output-dir", dir_ + "/out",
       "--metrics-every", "0"},
      SIGTERM, 500, [&](pid_t) {
        AwaitIntervals(dir_ + "/out", 0, 1);  // deep_recursion has its place before the burst
        const pid_t spawner = AsNobody([] {
          for (int i = 0; i < 2000; ++i) {
            const pid_t c = fork();
            if (c == 0) {
              char name[16];
              std::snprintf(name, sizeof(name), "r%04d", i);
              prctl(PR_SET_NAME, name);
              const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(3);
              volatile unsigned long x = 0;
              while (std::chrono::steady_clock::now() < end) x = x + 1;
              _exit(0);
            }
            if (i >= 4) wait(nullptr);  // four at a time
          }
          while (wait(nullptr) > 0) {
          }
        });
        children_.push_back(spawner);
        waitpid(spawner, nullptr, 0);
        children_.back() = -1;
        AwaitIntervals(dir_ + "/out", IntervalsSoFar(dir_ + "/out"), 2);
      });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = IntervalFiles(dir_ + "/out");
  ASSERT_GE(files.size(), 4u) << r.err;
  std::set<std::string> churners;
  int64_t overflow = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::map<std::string, int64_t> services = Services(files[i]);
    EXPECT_LE(services.size(), 21u) << files[i];
    if (i + 1 < files.size()) {
      EXPECT_TRUE(services.count("deep_recursion")) << files[i];
    }
    for (const auto& [name, n] : services) {
      if (std::regex_match(name, std::regex("r[0-9]{4}"))) churners.insert(name);
    }
    if (auto it = services.find(kOverflow); it != services.end()) overflow += it->second;
  }
  EXPECT_GT(overflow, 0) << r.err;
  EXPECT_GE(churners.size(), 20u);
  const std::regex said("more than 20 services had samples in one interval");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), said), std::sregex_iterator()), 1)
      << r.err;
}

}  // namespace
}  // namespace ehprof
