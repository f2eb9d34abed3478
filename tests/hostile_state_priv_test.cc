// A local user against the long-running agent's state: thousands of
// distinct binaries, each run and deleted, must not leave the agent holding
// fds (pinning the deleted files' space) once they are gone; thousands of
// idle connections and a request sent byte by byte must not block or grow
// its metrics server. The user is uid 65534, with files it owns.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "agent/continuous/metrics_server.h"
#include "gtest/gtest.h"
#include "tests/loopback_http.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"

extern char** environ;

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::TestdataPath;

using testing::kNobody;
constexpr int kBinaries = 1500;
constexpr int kIdleConnections = 2000;

// What pid's fds link to ("/path", "/path (deleted)", "socket:[N]", ...).
std::vector<std::string> FdTargets(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    out.push_back(std::filesystem::read_symlink(e.path(), link_ec).string());
  }
  return out;
}
size_t FdCount(pid_t pid) { return FdTargets(pid).size(); }
size_t FdsStartingWith(pid_t pid, const std::string& prefix) {
  const std::vector<std::string> t = FdTargets(pid);
  return std::count_if(t.begin(), t.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}
// Links of deleted files: "... (deleted)".
std::vector<std::string> DeletedHeld(pid_t pid) {
  std::vector<std::string> out;
  for (std::string& t : FdTargets(pid)) {
    if (t.size() > 10 && t.compare(t.size() - 10, 10, " (deleted)") == 0) out.push_back(std::move(t));
  }
  return out;
}

// Runs fn as uid/gid 65534 in a child (with room for `fds` descriptors);
// returns its pid.
pid_t AsNobody(rlim_t fds, const std::function<int()>& fn) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const rlimit lim{fds, fds};
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0 || !testing::BecomeUser()) _exit(100);
  _exit(fn());
}

// A byte from fd within `seconds` (0 on a timeout or EOF).
char ReadByte(int fd, int seconds) {
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  if (poll(&p, 1, seconds * 1000) == 1 && read(fd, &c, 1) == 1) return c;
  return 0;
}

// GET /metrics from 127.0.0.1:port, the whole response ("" on a failure).
std::string Scrape(uint16_t port) {
  return testing::LoopbackRequest(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

// The agent's metrics port, from what it says on stderr (0: not yet).
uint16_t MetricsPort() {
  const std::string err = testing::ReadFile(::testing::TempDir() + "/ending_err." + std::to_string(getpid()));
  std::smatch m;
  return std::regex_search(err, m, std::regex(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)"))
             ? static_cast<uint16_t>(std::stoi(m[1].str()))
             : 0;
}

class HostileState : public testing::RecordingTest {
 protected:
  void SetUp() override {
    testing::RecordingTest::SetUp();
    if (IsSkipped()) return;
    // As /proc's links name it (TempDir() may end in a slash).
    user_dir_ = std::filesystem::path(dir_ + "/user").lexically_normal().string();
    std::filesystem::create_directories(user_dir_);
    std::filesystem::permissions(dir_, std::filesystem::perms::all);
    ASSERT_EQ(chown(user_dir_.c_str(), kNobody, kNobody), 0);
    // Another program, root's, that must stay sampled whatever the user does.
    std::vector<std::string> args = {TestdataPath("deep_recursion"), "60", "20"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&victim_, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  }
  void TearDown() override {
    if (victim_ > 0) {
      kill(victim_, SIGKILL);
      waitpid(victim_, nullptr, 0);
    }
    testing::RecordingTest::TearDown();
  }
  std::vector<std::string> Profiles() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/out", ec)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Until `n` more profiles than `before` are written (at most 20 s).
  void WaitForProfiles(size_t before, size_t n) const {
    for (int i = 0; i < 200 && Profiles().size() < before + n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::vector<std::string> AgentArgs() const {
    return {"agent", "-a",          "-F", "99", "--interval", "1", "--output-dir", dir_ + "/out", "--keep",
            "1000",  "--metrics-every", "0", "--metrics-addr", "127.0.0.1:0"};
  }

  std::string user_dir_;
  pid_t victim_ = 0;
};

// The user's side: kBinaries copies of offcpu_sleep, each with its own
// build-id, started, then deleted while they run; 'R' on `ready`; killed
// when 'K' comes on `go`.
int RunDistinctBinaries(const std::string& dir, const std::string& image, int ready, int go) {
  std::vector<pid_t> kids;
  for (int i = 0; i < kBinaries; ++i) {
    std::string bytes = image;
    const std::string note("\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU\0", 16);
    if (const size_t at = bytes.find(note); at != std::string::npos) {
      std::memcpy(&bytes[at + note.size()], &i, sizeof(i));
    }
    const std::string path = dir + "/bin" + std::to_string(i);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd < 0 || write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) return 1;
    close(fd);
    const pid_t kid = fork();
    if (kid == 0) {
      const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
      dup2(null, STDERR_FILENO);  // its wall time at the end
      execl(path.c_str(), path.c_str(), "30", nullptr);
      _exit(127);
    }
    kids.push_back(kid);
  }
  // Every one has exec'd (its exe is its file) before the files go.
  for (int i = 0; i < kBinaries; ++i) {
    const std::string exe = "/proc/" + std::to_string(kids[i]) + "/exe";
    const std::string want = dir + "/bin" + std::to_string(i);
    for (int t = 0; t < 1000; ++t) {
      std::error_code ec;
      if (std::filesystem::read_symlink(exe, ec).string() == want) break;
      usleep(10000);
    }
    unlink(want.c_str());
  }
  if (write(ready, "R", 1) != 1) return 2;
  ReadByte(go, 60);
  for (pid_t kid : kids) kill(kid, SIGKILL);
  for (pid_t kid : kids) waitpid(kid, nullptr, 0);
  return 0;
}

TEST_F(HostileState, DistinctDeletedBinariesLeaveNoFdBehind) {
  const std::string image = testing::ReadFile(TestdataPath("offcpu_sleep.stripped"));
  ASSERT_FALSE(image.empty());
  size_t baseline = 0, after = 0, users_peak = 0, users_after = 0, profiles_before_exit = 0;
  std::vector<std::string> deleted_before, deleted_after;
  std::string scrape_at_peak;
  int child_status = -1;
  testing::RunResult r = RunEhprof(AgentArgs(), SIGTERM, 100, [&](pid_t agent) {
    WaitForProfiles(0, 2);  // sampling, symbolizing and writing
    baseline = FdCount(agent);
    deleted_before = DeletedHeld(agent);
    int ready[2], go[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
    const pid_t user = AsNobody(4096, [&] { return RunDistinctBinaries(user_dir_, image, ready[1], go[0]); });
    close(ready[1]);
    close(go[0]);
    const bool started = ReadByte(ready[0], 60) == 'R';
    // The agent holds the files their processes map, deleted or not, as
    // long as they run: more than 1024 fds, where select() fails.
    for (int i = 0; started && i < 100 && users_peak < kBinaries * 2 / 3; ++i) {
      users_peak = std::max(users_peak, FdsStartingWith(agent, user_dir_));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (const uint16_t port = MetricsPort()) scrape_at_peak = Scrape(port);
    profiles_before_exit = Profiles().size();
    ASSERT_EQ(write(go[1], "K", 1), 1);
    waitpid(user, &child_status, 0);
    close(ready[0]);
    close(go[1]);
    // Gone: two more intervals later (more on a machine so busy that the
    // symbolizing worker lags), no fd of theirs is left.
    const size_t at_exit = Profiles().size();
    for (int i = 0; i < 300; ++i) {
      if (Profiles().size() >= at_exit + 2 && FdsStartingWith(agent, user_dir_) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    after = FdCount(agent);
    users_after = FdsStartingWith(agent, user_dir_);
    deleted_after = DeletedHeld(agent);
  });
  std::printf("agent fds: %zu before, %zu on the user's files at the peak, %zu after (%zu on them)\n", baseline,
              users_peak, after, users_after);
  ASSERT_EQ(child_status, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(users_peak, size_t{kBinaries * 2 / 3}) << "the agent never held the user's files: no attack";
  EXPECT_NE(scrape_at_peak.find("\nehprof_kept_files "), std::string::npos) << scrape_at_peak.substr(0, 300);
  EXPECT_EQ(users_after, 0u);
  // Other processes of the machine come and go meanwhile: the agent holds
  // their files while they run.
  EXPECT_LE(after, baseline + 16) << "baseline " << baseline << ", the user's files at the peak " << users_peak;
  EXPECT_LE(deleted_after.size(), deleted_before.size()) << "deleted files still open, e.g. " << deleted_after[0];
  // Every interval written, and the other program still sampled in the last.
  EXPECT_NE(r.err.find("(0 intervals dropped)"), std::string::npos) << r.err;
  const std::vector<std::string> files = Profiles();
  ASSERT_GE(files.size(), profiles_before_exit + 2);
  const std::optional<std::string> last = testing::Gunzip(testing::ReadFile(files[files.size() - 2]));
  ASSERT_TRUE(last.has_value());
  EXPECT_NE(last->find("recurse_leaf"), std::string::npos) << "the other program was not sampled";
}

// The user's side: kIdleConnections connections that send nothing and four
// that send a request a byte every 200 ms, held until 'K' comes on `go`;
// 'R' on `ready` once every connection is made.
int HoldConnections(uint16_t port, int ready, int go) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> fds;
  for (int i = 0; i < kIdleConnections + 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return 1;
    connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    fds.push_back(fd);
  }
  for (int fd : fds) {  // made (the server may have closed it since)
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, 15000);
  }
  if (write(ready, "R", 1) != 1) return 2;
  const std::string slow = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t at = 0; ReadByte(go, 0) == 0 && at < 300; ++at) {
    for (int i = 0; i < 4; ++i) {
      send(fds[kIdleConnections + i], &slow[at % slow.size()], 1, MSG_NOSIGNAL);
    }
    usleep(200000);
  }
  for (int fd : fds) close(fd);
  return 0;
}

TEST_F(HostileState, MetricsServerOutlastsIdleAndSlowConnections) {
  size_t baseline = 0, during = 0, after = 0;  // the agent's sockets
  std::string under_flood, afterwards;
  int child_status = -1;
  testing::RunResult r = RunEhprof(AgentArgs(), SIGTERM, 100, [&](pid_t agent) {
    WaitForProfiles(0, 1);
    const uint16_t port = MetricsPort();
    ASSERT_NE(port, 0);
    baseline = FdsStartingWith(agent, "socket:");
    int ready[2], go[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
    const pid_t user = AsNobody(kIdleConnections + 64, [&] { return HoldConnections(port, ready[1], go[0]); });
    close(ready[1]);
    close(go[0]);
    EXPECT_EQ(ReadByte(ready[0], 30), 'R');
    for (int i = 0; i < 10; ++i) {
      during = std::max(during, FdsStartingWith(agent, "socket:"));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    under_flood = Scrape(port);  // the user still holds every connection
    ASSERT_EQ(write(go[1], "K", 1), 1);
    waitpid(user, &child_status, 0);
    close(ready[0]);
    close(go[1]);
    // Every connection ends by its 2 s deadline or at the user's exit; on a
    // loaded machine the agent may take a while to get there: up to 15 s.
    for (int i = 0; i < 150; ++i) {
      after = FdsStartingWith(agent, "socket:");
      if (after <= baseline && i >= 30) break;  // and at least past every deadline
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    afterwards = Scrape(port);
  });
  std::printf("agent sockets: %zu before, at most %zu under %d connections, %zu after\n", baseline, during,
              kIdleConnections + 4, after);
  ASSERT_EQ(child_status, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(under_flood.find("HTTP/1.1 200 OK"), std::string::npos) << under_flood.substr(0, 300);
  EXPECT_NE(under_flood.find("\nehprof_samples_total "), std::string::npos) << under_flood.substr(0, 300);
  EXPECT_NE(afterwards.find("\nehprof_samples_total "), std::string::npos) << afterwards.substr(0, 300);
  // At most its connection limit held at once (and the one just accepted
  // before the oldest is closed), none once they are gone.
  EXPECT_LE(during, baseline + MetricsServer::kMaxConnections + 1) << "baseline " << baseline;
  EXPECT_EQ(after, baseline);
  EXPECT_NE(r.err.find("(0 intervals dropped)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ehprof
