#include "tests/server_process.h"

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
#include <cstdio>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_support.h"

extern char** environ;

namespace ehprof::testing {

std::string InstalledBinary(const std::string& env_var, const std::string& script) {
  if (const char* b = std::getenv(env_var.c_str()); b && *b) return b;
  std::string out = ShellOutput("bash " + SourcePath("scripts/" + script) + " 2>/dev/null");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const size_t nl = out.rfind('\n');
  if (nl != std::string::npos) out = out.substr(nl + 1);
  return access(out.c_str(), X_OK) == 0 ? out : "";
}

int FreeLoopbackPort() {
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

pid_t SpawnLogged(std::vector<std::string> args, const std::string& log, const std::string& cwd) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

pid_t SpawnProgram(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  return posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0 ? pid : -1;
}

bool RequireServer(bool started, const std::string& why) {
  if (started) return true;
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true") {
    ADD_FAILURE() << why;
    return false;
  }
  std::printf("SKIPPED: %s\n", why.c_str());
  return false;
}

std::string MakeTestCertificates(const std::string& dir) {
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string out = ShellOutput(
      "(cd '" + dir + "' && echo subjectAltName=IP:127.0.0.1 > san.ext && " +
      "openssl req -x509 " + ec + " -keyout ca.key -out ca.pem -days 2 -subj /CN=ehprof-test-ca " +
      "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign && " +
      "openssl req " + ec + " -keyout server.key -out server.csr -subj /CN=127.0.0.1 && " +
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 " +
      "-extfile san.ext -out server.pem && echo made) 2>&1");
  return out.find("made") != std::string::npos ? "" : out;
}

void StopProcess(pid_t* pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(*pid, nullptr, WNOHANG) == *pid) {
      *pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
  *pid = -1;
}

}  // namespace ehprof::testing
