// ehprof agent --otlp against the real OpenTelemetry Collector (built from
// its Go modules by scripts/install_otelcol.sh, started here on 127.0.0.1
// with the profiles feature gate on, its file exporter writing what it
// received): fio's hot path arrives with the share ehprof's own profile of
// the same intervals gives it, every sample of them; the same over gRPC;
// and a Collector down for a while loses nothing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "profile.pb.h"
#include "tests/otelcol_server.h"
#include "tests/runtime_programs.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::OtelcolServer;
using testing::RunEhprof;

// What the Collector received, by tests/otlp_fold.py.
std::string Fold(const OtelcolServer& server, const std::string& mode) {
  std::string cmd = "python3 " + testing::SourcePath("tests/otlp_fold.py") + " " + mode;
  for (const std::string& f : server.files()) {
    if (std::filesystem::exists(f)) cmd += " '" + f + "'";
  }
  return testing::ShellOutput(cmd);
}

// A service's entry in --summary's JSON, as one line of text to search.
std::string ServiceSummary(const std::string& summary, const std::string& service) {
  const size_t at = summary.find("\"" + service + "\": {\"attributes\"");
  if (at == std::string::npos) return "";
  return summary.substr(at, summary.find("}, \"", summary.find("\"types\"", at)) - at);
}

uint64_t Number(const std::string& text, const std::string& field) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + field + "\": ([0-9]+)"))) return 0;
  return std::stoull(m[1].str());
}

// Of folded stacks ("a;b;c N"): the total, and the part whose stack holds
// `fn` below `ancestors` (in that order, not necessarily adjacent).
std::pair<uint64_t, uint64_t> Under(const std::string& folded, const std::string& fn,
                                    const std::vector<std::string>& ancestors) {
  uint64_t total = 0, under = 0;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    const uint64_t n = std::stoull(line.substr(sp + 1));
    total += n;
    std::vector<std::string> frames = absl::StrSplit(line.substr(0, sp), ';');
    size_t next = 0;
    for (const std::string& f : frames) {
      if (next < ancestors.size() && f == ancestors[next]) ++next;
      if (next == ancestors.size() && f == fn) {
        under += n;
        break;
      }
    }
  }
  return {total, under};
}

// The agent's own --output-dir profiles of one service as folded stacks
// ("root;...;leaf COUNT", inline frames innermost last), read with the
// classes protoc generates from pprof's profile.proto.
std::string PprofFolded(const std::vector<std::string>& files, const std::string& service) {
  std::map<std::string, uint64_t> folded;
  for (const std::string& f : files) {
    perftools::profiles::Profile p;
    EXPECT_TRUE(p.ParseFromString(testing::ShellOutput("gzip -dc '" + f + "'"))) << f;
    auto str = [&](int64_t i) { return i >= 0 && i < p.string_table_size() ? p.string_table(i) : "?"; };
    std::map<uint64_t, std::string> functions;
    for (const auto& fn : p.function()) functions[fn.id()] = str(fn.name());
    std::map<uint64_t, std::vector<std::string>> locations;  // innermost first
    for (const auto& loc : p.location()) {
      for (const auto& line : loc.line()) locations[loc.id()].push_back(functions[line.function_id()]);
    }
    for (const auto& sample : p.sample()) {
      bool ours = false;
      for (const auto& l : sample.label()) ours |= str(l.key()) == "service_name" && str(l.str()) == service;
      if (!ours || sample.value_size() == 0) continue;
      std::vector<std::string> names;  // leaf first
      for (uint64_t id : sample.location_id()) {
        for (const std::string& n : locations[id]) names.push_back(n);
      }
      std::string stack;
      for (auto it = names.rbegin(); it != names.rend(); ++it) stack += (stack.empty() ? "" : ";") + *it;
      folded[stack] += sample.value(0);
    }
  }
  std::string out;
  for (const auto& [stack, n] : folded) out += absl::StrCat(stack, " ", n, "\n");
  return out;
}

// Folded lines, merged and in order.
std::string Sorted(const std::string& folded) {
  std::map<std::string, uint64_t> m;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.rfind(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] += std::stoull(line.substr(sp + 1));
  }
  std::string out;
  for (const auto& [stack, n] : m) out += absl::StrCat(stack, " ", n, "\n");
  return out;
}

class Otlp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    ASSERT_NO_FATAL_FAILURE(Configure());
    std::string error;
    if (!testing::RequireServer(server_.Start(&error), error)) GTEST_SKIP() << error;
    dir_ = ::testing::TempDir() + "/otlp." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Before the Collector starts.
  virtual void Configure() {}
  // The summary once the exporter has flushed `want` samples of `service`
  // (it writes each second), or what there is after 10 s.
  std::string WaitFor(const std::string& service, uint64_t want) {
    std::string s;
    for (int i = 0; i < 20; ++i) {
      s = ServiceSummary(Fold(server_, "--summary"), service);
      if (Number(s, "total") >= want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return s;
  }
  OtelcolServer server_;
  std::string dir_;
};

TEST_F(Otlp, FiosHotPathArrivesWithItsShareAndEverySample) {
  const std::string job = testing::SourcePath("testdata/workloads/fio-cpu.job");
  testing::RunResult r = RunEhprof(
      {"agent", "-a", "--interval", "2", "--otlp", server_.http_url(), "--output-dir", dir_ + "/out",
       "--label", "test=otlp_priv_test", "--metrics-every", "0"},
      SIGTERM, 2000, [&](pid_t) {
        pid_t fio = testing::SpawnProgram({"fio", "--output=/dev/null", job});
        waitpid(fio, nullptr, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(otlp exported \d+ intervals to \S+/v1development/profiles \(0 refused, 0 dropped\))")))
      << r.err;
  // ehprof's own profile of the same intervals.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/out")) files.push_back(e.path());
  const std::string local = PprofFolded(files, "fio");
  const auto [local_total, local_under] = Under(local, "get_io_u", {});
  ASSERT_GT(local_total, 20u) << local.substr(0, 2000);  // ~400 on an idle machine

  const std::string fio = WaitFor("fio", local_total);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_NE(fio.find("\"service.name\": \"fio\""), std::string::npos) << fio;
  EXPECT_NE(fio.find(absl::StrCat("\"host.name\": \"", host, "\"")), std::string::npos) << fio;
  EXPECT_NE(fio.find("\"process.executable.name\": \"fio\""), std::string::npos) << fio;
  EXPECT_NE(fio.find("\"test\": \"otlp_priv_test\""), std::string::npos) << fio;
  EXPECT_NE(fio.find("\"ehprof.view\": \"full\""), std::string::npos) << fio;  // the default --view
  EXPECT_NE(fio.find("\"period_type\": \"cpu/nanoseconds\""), std::string::npos) << fio;
  EXPECT_EQ(Number(fio, "period"), 1'000'000'000u / 99) << fio;
  EXPECT_NE(fio.find("\"types\": [\"samples/count\"]"), std::string::npos) << fio;
  // Every sample arrived, each stack with its count: the Collector's
  // folded stacks are ehprof's own, so get_io_u has the same share, and
  // sits under main -> fio_backend.
  const std::string received = Fold(server_, "--folded fio");
  EXPECT_EQ(Number(fio, "total"), local_total) << fio;
  const auto [total, under] = Under(received, "get_io_u", {});
  EXPECT_EQ(total, local_total);
  EXPECT_EQ(under, local_under);
  // Its share (about a third on an idle machine; less beside a build, which
  // takes fio's CPU for its start-up and exit).
  EXPECT_GT(under, total / 20) << local;
  EXPECT_GT(Under(received, "get_io_u", {"main", "fio_backend"}).second, under / 2) << received;
  EXPECT_EQ(Sorted(received), Sorted(local));
}

// A busy process profiled for about `ms` with --otlp and `extra` flags.
testing::RunResult RunOnBusyProcess(const std::string& service, std::vector<std::string> extra, int ms,
                                    const std::function<void(pid_t)>& while_running = nullptr) {
  // Busy for longer than the test can take (killed below): every interval
  // has samples, so every interval is exported.
  pid_t work = testing::SpawnProgram({testing::TestdataPath("deep_recursion"), "300", "10"});
  std::vector<std::string> args = {"agent", "-p", std::to_string(work), "--interval", "1",
                                   "--service-name", service, "--metrics-every", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  testing::RunResult r = RunEhprof(args, SIGTERM, ms, while_running);
  kill(work, SIGKILL);
  waitpid(work, nullptr, 0);
  return r;
}

// "N samples in M intervals" of the agent's last line.
std::pair<uint64_t, uint64_t> SamplesAndIntervals(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex(R"((\d+) samples in (\d+) intervals)"))) return {0, 0};
  return {std::stoull(m[1].str()), std::stoull(m[2].str())};
}

// A JVM and a node started without flags, followed by one agent: their
// Java methods and JavaScript functions arrive at the Collector named, in
// locations whose profile.frame.type is jvm and v8js; libjvm's and node's
// own C++ is native (testdata/JvmWaits.java, testdata/nodewaits.js).
TEST_F(Otlp, JavaAndJavaScriptFramesArriveTypedJvmAndV8js) {
  if (!testing::HaveTestJdk()) GTEST_SKIP() << testing::kTestJdk << " is not installed";
  if (!testing::RequireNode()) GTEST_SKIP();
  struct Want {
    std::string service, type;
    std::vector<std::string> named;  // each in a location of `type`, and in no other
    std::string native;              // a native function under them
    std::map<std::string, std::string> types;  // function -> its types, space-separated
  };
  std::vector<Want> wants = {{"java", "jvm", {"JvmWaits.main", "JvmWaits.spinHere"}, "JavaMain", {}},
                             {"node", "v8js", {"mainLoop", "spinHere"}, "node::Start(int, char**)", {}}};
  auto read_all = [&] {  // whether each service's last named function has arrived
    bool all = true;
    for (Want& w : wants) {
      if (w.types.count(w.named.back())) continue;
      w.types.clear();
      std::istringstream in(Fold(server_, "--types " + w.service));
      for (std::string line; std::getline(in, line);) {
        const std::vector<std::string> f = absl::StrSplit(line, '\t');
        if (f.size() == 3) w.types[f[1]] += (w.types[f[1]].empty() ? "" : " ") + f[0];
      }
      all &= w.types.count(w.named.back()) > 0;
    }
    return all;
  };
  pid_t jvm = testing::StartJvmWaits(dir_, 20), node = testing::StartNodeWaits(20);
  // Read while the agent runs, until both arrived or 40 s have passed: a
  // loaded machine can take most of a fixed few seconds to start the agent.
  testing::RunResult r = RunEhprof({"agent", "-p", absl::StrCat(jvm, ",", node), "-F", "199", "--interval", "1",
                                    "--otlp", server_.http_url(), "--metrics-every", "0"},
                                   SIGTERM, 2000, [&](pid_t) {
                                     for (int i = 0; i < 80 && !read_all(); ++i) {
                                       std::this_thread::sleep_for(std::chrono::milliseconds(500));
                                     }
                                   });
  testing::KillProgram(&jvm);
  testing::KillProgram(&node);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (Want& w : wants) w.types.clear();  // judged on all that arrived
  for (int i = 0; i < 20 && !read_all(); ++i) {  // the exporter writes each second
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (const Want& w : wants) {
    for (const std::string& fn : w.named) EXPECT_EQ(w.types.count(fn) ? w.types.at(fn) : "", w.type) << w.service << " " << fn;
    EXPECT_EQ(w.types.count(w.native) ? w.types.at(w.native) : "", "native") << w.service;
  }
}

TEST_F(Otlp, ExportsOverGrpcToo) {
  testing::RunResult r = RunOnBusyProcess("otlp-grpc", {"--otlp", server_.grpc_url(), "--otlp-protocol", "grpc"}, 4000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("push failed"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(otlp exported \d+ intervals to \S+/opentelemetry\.proto\.collector\.profiles\.v1development\.ProfilesService/Export \(0 refused, 0 dropped\))")))
      << r.err;
  const auto [samples, intervals] = SamplesAndIntervals(r.err);
  // Some (about 99 a second on an idle CPU; a handful at a load of 30 on
  // two CPUs, seen here): the check is that each one arrived.
  ASSERT_GT(samples, 0u) << r.err;
  const std::string s = WaitFor("otlp-grpc", samples);
  EXPECT_EQ(Number(s, "total"), samples) << s << "\n" << r.err;
  const auto [total, under] = Under(Fold(server_, "--folded otlp-grpc"), "recurse_leaf", {"main", "recurse"});
  EXPECT_EQ(total, samples);
  // Most (the rest: its start-up, a larger part of few samples).
  EXPECT_GE(under * 4, total * 3);
}

TEST_F(Otlp, ACollectorDownForAWhileLosesNothing) {
  testing::RunResult r = RunOnBusyProcess("otlp-outage", {"--otlp", server_.http_url()}, 2500, [&](pid_t) {
    server_.Stop();
    std::this_thread::sleep_for(std::chrono::seconds(12));
    std::string error;
    ASSERT_TRUE(server_.Start(&error)) << error;
    std::this_thread::sleep_for(std::chrono::seconds(6));
  });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto [samples, intervals] = SamplesAndIntervals(r.err);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(otlp exported (\d+) intervals to \S+ \((\d+) refused, (\d+) dropped\))")))
      << r.err;
  const uint64_t exported = std::stoull(m[1].str());
  EXPECT_EQ(m[2].str(), "0") << r.err;
  EXPECT_EQ(m[3].str(), "0") << r.err;
  // Every interval with samples is exported (on a crowded machine a 1 s
  // interval may have none, and an empty one is not sent).
  EXPECT_LE(exported, intervals) << r.err;
  EXPECT_GE(exported, intervals * 3 / 4) << r.err;
  EXPECT_GE(intervals, 15u) << r.err;
  // The failure and the recovery said once each.
  const std::regex failed("otlp push failed \\(UNAVAILABLE\\)");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), failed), std::sregex_iterator()), 1)
      << r.err;
  EXPECT_NE(r.err.find("otlp push recovered after"), std::string::npos) << r.err;
  // And the Collector has every sample, from before, during and after.
  const std::string s = WaitFor("otlp-outage", samples);
  EXPECT_EQ(Number(s, "total"), samples) << s << "\n" << r.err;
  EXPECT_EQ(Number(s, "profiles"), exported) << s;
}

// The Collector's receivers serving TLS with a certificate for 127.0.0.1
// from a CA made here with openssl.
class OtlpTls : public Otlp {
 protected:
  void Configure() override {
    tls_ = ::testing::TempDir() + "/otlp-tls." + std::to_string(getpid());
    std::filesystem::remove_all(tls_);
    std::filesystem::create_directories(tls_);
    ASSERT_EQ(testing::MakeTestCertificates(tls_), "");
    server_.UseTls(tls_ + "/server.pem", tls_ + "/server.key");
  }
  void TearDown() override {
    Otlp::TearDown();
    if (!tls_.empty()) std::filesystem::remove_all(tls_);
  }
  std::string tls_;
};

TEST_F(OtlpTls, ExportsOverHttpsAndGrpcWithTlsTrustingTheGivenCa) {
  ASSERT_EQ(server_.http_url().rfind("https://", 0), 0u);
  for (const auto& [service, url, protocol] :
       {std::tuple{"otlp-https", server_.http_url(), "http/protobuf"},
        std::tuple{"otlp-grpcs", server_.grpc_url(), "grpc"}}) {
    // Uncompressed this time (gzip, the default, in the tests above).
    testing::RunResult r = RunOnBusyProcess(service,
                                            {"--otlp", url, "--otlp-protocol", protocol, "--otlp-ca",
                                             tls_ + "/ca.pem", "--otlp-compression", "none"},
                                            3500);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("push failed"), std::string::npos) << r.err;
    const auto [samples, intervals] = SamplesAndIntervals(r.err);
    ASSERT_GT(samples, 0u) << r.err;  // as in ExportsOverGrpcToo
    EXPECT_EQ(Number(WaitFor(service, samples), "total"), samples) << service << "\n" << r.err;
  }
}

TEST_F(OtlpTls, WithoutTheCaSaysTheCertificateErrorOnceAndKeepsSampling) {
  testing::RunResult r = RunOnBusyProcess("otlp-untrusted", {"--otlp", server_.http_url()}, 6000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex failed("otlp push failed \\(UNAVAILABLE\\): https://\\S+: the server's TLS certificate did "
                          "not verify \\([^)]+\\); --otlp-ca FILE names the CA that signed it");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), failed), std::sregex_iterator()), 1)
      << r.err;
  EXPECT_EQ(r.err.find("push failed", r.err.find("push failed") + 1), std::string::npos) << r.err;
  const auto [samples, intervals] = SamplesAndIntervals(r.err);
  EXPECT_GE(intervals, 2u) << r.err;  // the agent starts in 1-3 s on a crowded machine
  EXPECT_GT(samples, 0u) << r.err;
  EXPECT_NE(r.err.find("otlp exported 0 intervals"), std::string::npos) << r.err;
  EXPECT_EQ(Number(ServiceSummary(Fold(server_, "--summary"), "otlp-untrusted"), "total"), 0u);
}

}  // namespace
}  // namespace ehprof
