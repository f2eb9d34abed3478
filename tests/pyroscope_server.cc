#include "tests/pyroscope_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "tests/test_support.h"

extern char** environ;

namespace ehprof::testing {
namespace {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

PyroscopeServer::PyroscopeServer() {
  char tmpl[] = "/tmp/ehprof-pyroscope-XXXXXX";
  if (mkdtemp(tmpl)) dir_ = tmpl;
  http_port_ = FreePort();
  grpc_port_ = FreePort();
  memberlist_port_ = FreePort();
}

PyroscopeServer::~PyroscopeServer() {
  Stop();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

std::string PyroscopeServer::Binary() {
  if (const char* b = std::getenv("EHPROF_PYROSCOPE"); b && *b) return b;
  std::string out = ShellOutput("bash " + SourcePath("scripts/install_pyroscope.sh") + " 2>/dev/null");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const size_t nl = out.rfind('\n');
  if (nl != std::string::npos) out = out.substr(nl + 1);
  return access(out.c_str(), X_OK) == 0 ? out : "";
}

bool PyroscopeServer::Start(std::string* error) {
  const std::string bin = Binary();
  if (bin.empty()) {
    *error = "the Pyroscope server is not installed (bash scripts/install_pyroscope.sh)";
    return false;
  }
  const std::string h = std::to_string(http_port_), g = std::to_string(grpc_port_),
                    m = std::to_string(memberlist_port_);
  std::vector<std::string> args = {
      bin, "-server.http-listen-address=127.0.0.1", "-server.grpc-listen-address=127.0.0.1",
      "-server.http-listen-port=" + h, "-server.grpc-listen-port=" + g,
      "-memberlist.bind-addr=127.0.0.1", "-memberlist.advertise-addr=127.0.0.1",
      "-memberlist.bind-port=" + m, "-memberlist.advertise-port=" + m,
      // Every ring member at loopback: the machine's own address is not
      // listened on, and nothing leaves 127.0.0.1.
      "-compactor.ring.instance-addr=127.0.0.1", "-distributor.ring.instance-addr=127.0.0.1",
      "-ingester.lifecycler.addr=127.0.0.1", "-overrides-exporter.ring.instance-addr=127.0.0.1",
      "-query-frontend.instance-addr=127.0.0.1", "-query-scheduler.ring.instance-addr=127.0.0.1",
      "-store-gateway.sharding-ring.instance-addr=127.0.0.1",
      // Ready in about a second instead of fifteen.
      "-ingester.min-ready-duration=0s", "-ingester.join-after=0s", "-ingester.heartbeat-period=1s",
      "-query-scheduler.ring.heartbeat-period=1s", "-distributor.ring.heartbeat-period=1s",
      "-self-profiling.disable-push=true", "-usage-stats.enabled=false", "-tracing.enabled=false",
      "-pyroscopedb.data-path=" + dir_ + "/data"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = dir_ + "/server.log";
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addchdir_np(&fa, dir_.c_str());
  const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *error = "cannot start " + bin;
    pid_ = -1;
    return false;
  }
  for (int i = 0; i < 600; ++i) {
    if (ShellOutput("curl -sf " + url() + "/ready") == "ready") return true;
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *error = "Pyroscope did not become ready; its log:\n" + ReadFile(log).substr(0, 4000);
  Stop();
  return false;
}

void PyroscopeServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string PyroscopeServer::Get(const std::string& path_and_query) const {
  return ShellOutput("curl -sf '" + url() + path_and_query + "'");
}

}  // namespace ehprof::testing
