// ehprof agent against the real Grafana Pyroscope (built from its Go
// module by scripts/install_pyroscope.sh, started here on 127.0.0.1): what
// Pyroscope's own query API returns for the profiled service matches
// ehprof's local profile of the same run, and an outage of the server
// loses nothing; over HTTPS, with the CA given and without it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/pyroscope_server.h"
#include "tests/runtime_programs.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::PyroscopeServer;
using testing::RunEhprof;

// Pyroscope's render API for one service, judged by a few lines of Python
// (the JSON is a flamebearer: levels of [offset, total, self, name] nodes):
// "ticks=N share=S chain=C": total ticks, the share of them under `fn`,
// and whether some `fn` node has each of `ancestors` above it.
std::string Judge(const PyroscopeServer& server, const std::string& service, const std::string& fn,
                  const std::string& ancestors,
                  const std::string& type = "process_cpu:cpu:nanoseconds:cpu:nanoseconds") {
  // Every series says its --view (the agents here run the default).
  const std::string q = absl::StrCat("/pyroscope/render?query=", type, "%7Bservice_name%3D%22", service,
                                     "%22%2Cehprof_view%3D%22full%22%7D&from=now-15m&until=now%2B1m&format=json");
  const std::string py = R"PY(
import json, sys
fn, anc = sys.argv[1], [a for a in sys.argv[2].split(",") if a]
fb = json.load(sys.stdin)["flamebearer"]
names, levels = fb["names"], fb["levels"]
nodes = []  # per level: (start, total, name)
for lv in levels:
    row, x = [], 0
    for i in range(0, len(lv), 4):
        start = x + lv[i]
        row.append((start, lv[i + 1], names[lv[i + 3]]))
        x = start + lv[i + 1]
    nodes.append(row)
under = sum(t for row in nodes for (s, t, n) in row if n == fn)
chain = 0
for d, row in enumerate(nodes):
    for (s, t, n) in row:
        if n != fn:
            continue
        above = set()
        for up in range(d):
            for (s2, t2, n2) in nodes[up]:
                if s2 <= s and s + t <= s2 + t2:
                    above.add(n2)
        chain |= all(a in above for a in anc)
ticks = fb["numTicks"]
print("ticks=%d share=%.4f chain=%d" % (ticks, under / ticks if ticks else 0, chain))
)PY";
  const std::string script = ::testing::TempDir() + "/judge." + std::to_string(getpid()) + ".py";
  {
    FILE* f = fopen(script.c_str(), "w");
    fputs(py.c_str(), f);
    fclose(f);
  }
  return testing::ShellOutput(absl::StrCat("curl -sf '", server.query_url(), q, "' | python3 ", script, " ",
                                           fn, " ", ancestors));
}

double Field(const std::string& judged, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(judged, m, std::regex(name + "=([0-9.]+)"))) return -1;
  return std::stod(m[1].str());
}

// The off-CPU profiles the agent has written to `dir` (none while it does
// not exist yet).
size_t CountOffCpuFiles(const std::string& dir) {
  std::error_code ec;
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    n += e.path().string().find(".off_cpu.pb.gz") != std::string::npos;
  }
  return n;
}

class Pyroscope : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    ASSERT_NO_FATAL_FAILURE(Configure());
    std::string error;
    if (!testing::RequireServer(server_.Start(&error), error)) GTEST_SKIP() << error;
    dir_ = ::testing::TempDir() + "/pyroscope." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Before the server starts.
  virtual void Configure() {}
  PyroscopeServer server_;
  std::string dir_;
};

TEST_F(Pyroscope, ServesFiosHotPathAsEhprofsOwnProfileHasIt) {
  const std::string job = testing::SourcePath("testdata/workloads/fio-cpu.job");
  testing::RunResult r = RunEhprof(
      {"agent", "-a", "--interval", "2", "--pyroscope", server_.url(), "--output-dir",
       dir_ + "/out", "--label", "test=pyroscope_priv_test", "--metrics-every", "0"},
      SIGTERM, 2000, [&](pid_t) {
        pid_t fio = testing::SpawnProgram({"fio", "--output=/dev/null", job});
        waitpid(fio, nullptr, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(0 refused, 0 dropped)"), std::string::npos) << r.err;
  std::string judged;
  for (int i = 0; i < 20; ++i) {  // ingestion is asynchronous: a few seconds at most
    judged = Judge(server_, "fio", "get_io_u", "main,fio_backend");
    if (Field(judged, "ticks") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(Field(judged, "chain"), 1) << judged;  // main -> fio_backend -> ... -> get_io_u
  const double pyroscope_share = Field(judged, "share");
  // The same run's local profile, read by go tool pprof.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/out")) files.push_back(e.path());
  const std::string top =
      testing::GoToolPprof("-top -cum -nodecount=200 -relative_percentages -tagfocus=service_name=fio",
                           files, dir_);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(top, m, std::regex(R"(\s([0-9.]+)%\s+get_io_u\n)"))) << top;
  const double local_share = std::stod(m[1].str()) / 100;
  EXPECT_GT(local_share, 0.2) << top;
  EXPECT_NEAR(pyroscope_share, local_share, 0.05) << judged << "\n" << top;
}

// ehprof agent --off-cpu: off_cpu profiles beside process_cpu, in
// Pyroscope and in the output directory, with the sleeping program's 1:3.
TEST_F(Pyroscope, ServesOffCpuTimeBesideCpu) {
  pid_t sleeper = testing::SpawnProgram({testing::TestdataPath("offcpu_sleep"), "30"});
  ASSERT_GT(sleeper, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past its first block
  testing::RunResult r = RunEhprof(
      {"agent", "-p", std::to_string(sleeper), "--off-cpu", "--interval", "1", "--pyroscope", server_.url(),
       "--output-dir", dir_ + "/off", "--service-name", "offcpu-test", "--metrics-every", "0"},
      SIGTERM, 0, [&](pid_t) {
        // Timed from its first interval, not from its start: on a loaded
        // machine loading the BPF programs alone has taken 3 s.
        for (int i = 0; i < 300 && CountOffCpuFiles(dir_ + "/off") == 0; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(4000));
      });
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string type = "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds";
  std::string a, b;
  for (int i = 0; i < 20; ++i) {
    b = Judge(server_, "offcpu-test", "sleep_b", "main,sleep_loop", type);
    if (Field(b, "ticks") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  a = Judge(server_, "offcpu-test", "sleep_a", "main,sleep_loop", type);
  EXPECT_EQ(Field(a, "chain"), 1) << a;
  EXPECT_EQ(Field(b, "chain"), 1) << b;
  // About 5 s of 400 ms rounds: whole rounds 1:3, a cut round shifts it.
  EXPECT_NEAR(Field(b, "share") / Field(a, "share"), 3.0, 0.9) << a << "\n" << b;
  EXPECT_GT(Field(b, "ticks"), 2e9) << b;  // nanoseconds
  EXPECT_GE(CountOffCpuFiles(dir_ + "/off"), 3u) << r.err;
}

// A JVM and a node started without flags, followed by one agent: their
// Java methods and JavaScript functions, named from the JVM's and V8's own
// memory, arrive under their callers in both the CPU and the off-CPU
// profiles (testdata/JvmWaits.java, testdata/nodewaits.js).
TEST_F(Pyroscope, ServesJavaAndJavaScriptFramesByName) {
  if (!testing::HaveTestJdk()) GTEST_SKIP() << testing::kTestJdk << " is not installed";
  if (!testing::RequireNode()) GTEST_SKIP();
  const std::string cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
  const std::string off = "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds";
  struct Want {
    std::string service, fn, ancestors, type;
    std::string judged;
  };
  std::vector<Want> wants = {{"java", "JvmWaits.spinHere", "JvmWaits.main", cpu, ""},
                             {"java", "JvmWaits.sleepHere", "JvmWaits.main", off, ""},
                             {"node", "spinHere", "mainLoop", cpu, ""},
                             {"node", "sleepHere", "mainLoop", off, ""}};
  auto judge_all = [&] {
    bool all = true;
    for (Want& w : wants) {
      if (Field(w.judged, "chain") == 1) continue;
      w.judged = Judge(server_, w.service, w.fn, w.ancestors, w.type);
      all &= Field(w.judged, "chain") == 1;
    }
    return all;
  };
  pid_t jvm = testing::StartJvmWaits(dir_, 20), node = testing::StartNodeWaits(20);
  // Judged while the agent runs, until Pyroscope serves all four or 40 s
  // have passed: a fixed run was too short once on a loaded machine (the
  // agent's start and the JVM's attach took most of 4 s; nothing served).
  testing::RunResult r = RunEhprof({"agent", "-p", absl::StrCat(jvm, ",", node), "-F", "199", "--off-cpu",
                                    "--interval", "1", "--pyroscope", server_.url(), "--metrics-every", "0"},
                                   SIGTERM, 2000, [&](pid_t) {
                                     for (int i = 0; i < 80 && !judge_all(); ++i) {
                                       std::this_thread::sleep_for(std::chrono::milliseconds(500));
                                     }
                                   });
  testing::KillProgram(&jvm);
  testing::KillProgram(&node);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(0 refused, 0 dropped)"), std::string::npos) << r.err;
  for (Want& w : wants) w.judged.clear();  // judged on all that arrived
  for (int i = 0; i < 20 && !judge_all(); ++i) {  // ingestion is asynchronous
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (const Want& w : wants) {
    EXPECT_EQ(Field(w.judged, "chain"), 1) << w.service << " " << w.fn << " " << w.type << ": " << w.judged;
    EXPECT_GT(Field(w.judged, "share"), 0.01) << w.judged;
  }
}

TEST_F(Pyroscope, AnOutageLosesNoInterval) {
  // Busy for longer than the test can take (killed below): an interval in
  // which the workload had already exited has no samples and is rightly
  // not pushed, which the count below would take for a loss (seen once
  // when Pyroscope's restart took long on a loaded machine).
  pid_t work = testing::SpawnProgram({testing::TestdataPath("deep_recursion"), "300", "10"});
  ASSERT_GT(work, 0);
  testing::RunResult r = RunEhprof(
      {"agent", "-p", std::to_string(work), "--interval", "1", "--pyroscope", server_.url(),
       "--metrics-every", "0", "--service-name", "outage-test"},
      SIGTERM, 2500, [&](pid_t) {
        server_.Stop();
        std::this_thread::sleep_for(std::chrono::seconds(4));
        std::string error;
        ASSERT_TRUE(server_.Start(&error)) << error;
        std::this_thread::sleep_for(std::chrono::seconds(8));
      });
  kill(work, SIGKILL);
  waitpid(work, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Said once each, with what failed; nothing refused or dropped.
  std::smatch pushed, ran;
  ASSERT_TRUE(std::regex_search(r.err, pushed, std::regex(R"(pushed (\d+) profiles to \S+ \((\d+) refused, (\d+) dropped\))")))
      << r.err;
  ASSERT_TRUE(std::regex_search(r.err, ran, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  EXPECT_EQ(pushed[1].str(), ran[2].str()) << r.err;  // every interval arrived
  EXPECT_EQ(pushed[2].str(), "0");
  EXPECT_EQ(pushed[3].str(), "0");
  const std::regex failed("push failed \\(UNAVAILABLE\\)");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), failed), std::sregex_iterator()), 1)
      << r.err;
  EXPECT_NE(r.err.find("push recovered after"), std::string::npos) << r.err;
  // And Pyroscope serves them: its ticks are samples times the period.
  // What it accepted just before it stopped, and around its restart, sits
  // in blocks its querier only sees after a later store sync (Pyroscope's
  // doing; every push above was answered 200), so the served count is
  // asked for up to 20 s until it is all of them, then to be most (100,
  // 100, 100, 94.1 and 70.2 % in five runs with the machine loaded by other
  // builds, load average 25-32 on 2 CPUs), never more.
  const double samples = std::stod(ran[1].str());
  std::string judged;
  for (int i = 0; i < 40; ++i) {
    judged = Judge(server_, "outage-test", "recurse_leaf", "main");
    if (Field(judged, "ticks") / (1e9 / 99) >= samples * 0.99) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const double served = Field(judged, "ticks") / (1e9 / 99);
  std::printf("Pyroscope serves %.0f of %.0f samples (%.1f%%) after the outage\n", served, samples,
              100 * served / samples);
  testing::PrintFigure("outage_served_pct", 100 * served / samples);
  EXPECT_GE(served, samples * 0.65) << judged << "\n" << r.err;
  EXPECT_LE(served, samples + 1) << judged;
  EXPECT_EQ(Field(judged, "chain"), 1) << judged;
}

// Pyroscope taking pushes over HTTPS (a distributor with dskit's
// -server.http-tls-cert-path, see PyroscopeServer) with a certificate for
// 127.0.0.1 from a CA made here with openssl.
class PyroscopeTls : public Pyroscope {
 protected:
  void Configure() override {
    tls_ = ::testing::TempDir() + "/pyroscope-tls." + std::to_string(getpid());
    std::filesystem::remove_all(tls_);
    std::filesystem::create_directories(tls_);
    const std::string failed = testing::MakeTestCertificates(tls_);
    ASSERT_EQ(failed, "");
    server_.UseTls(tls_ + "/ca.pem", tls_ + "/server.pem", tls_ + "/server.key");
  }
  void TearDown() override {
    Pyroscope::TearDown();
    if (!tls_.empty()) std::filesystem::remove_all(tls_);
  }
  // The agent on a busy process for about `ms`, pushing to the server.
  testing::RunResult RunAgent(const std::string& service, std::vector<std::string> extra, int ms) {
    pid_t work = testing::SpawnProgram({testing::TestdataPath("deep_recursion"), "300", "10"});
    std::vector<std::string> args = {"agent", "-p", std::to_string(work), "--interval", "1",
                                     "--pyroscope", server_.url(), "--service-name", service,
                                     "--metrics-every", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    testing::RunResult r = RunEhprof(args, SIGTERM, ms);
    kill(work, SIGKILL);
    waitpid(work, nullptr, 0);
    return r;
  }
  std::string tls_;
};

TEST_F(PyroscopeTls, PushesOverHttpsTrustingTheGivenCa) {
  ASSERT_EQ(server_.url().rfind("https://", 0), 0u) << server_.url();
  testing::RunResult r = RunAgent("tls-test", {"--pyroscope-ca", tls_ + "/ca.pem"}, 3500);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("push failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(0 refused, 0 dropped)"), std::string::npos) << r.err;
  std::string judged;
  for (int i = 0; i < 20; ++i) {
    judged = Judge(server_, "tls-test", "recurse_leaf", "main");
    if (Field(judged, "ticks") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_GT(Field(judged, "ticks"), 0) << judged << "\n" << r.err;
  EXPECT_EQ(Field(judged, "chain"), 1) << judged;
}

TEST_F(PyroscopeTls, WithoutTheCaSaysTheCertificateErrorOnceAndKeepsSampling) {
  testing::RunResult r = RunAgent("tls-untrusted", {}, 4500);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex failed("push failed \\(UNAVAILABLE\\): https://\\S+: the server's TLS certificate did not "
                          "verify \\([^)]+\\); --pyroscope-ca FILE names the CA that signed it");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), failed), std::sregex_iterator()), 1)
      << r.err;
  EXPECT_EQ(r.err.find("push failed", r.err.find("push failed") + 1), std::string::npos) << r.err;
  // Sampling went on, an interval a second, while no push got through.
  std::smatch ran;
  ASSERT_TRUE(std::regex_search(r.err, ran, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  EXPECT_GE(std::stoi(ran[2].str()), 3) << r.err;
  EXPECT_GT(std::stoi(ran[1].str()), 100) << r.err;
  EXPECT_NE(r.err.find("pushed 0 profiles"), std::string::npos) << r.err;
  EXPECT_EQ(Field(Judge(server_, "tls-untrusted", "recurse_leaf", "main"), "ticks"), 0);
}

}  // namespace
}  // namespace ehprof
