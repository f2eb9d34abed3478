#include "tests/pyroscope_server.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof::testing {
namespace {

// Both processes: every listener and ring member at loopback (the
// machine's own address is not listened on, and nothing leaves
// 127.0.0.1), heartbeats every second, nothing reported home.
std::vector<std::string> CommonArgs(const std::string& bin, int http, int grpc, int memberlist) {
  const std::string h = std::to_string(http), g = std::to_string(grpc), m = std::to_string(memberlist);
  return {bin, "-server.http-listen-address=127.0.0.1", "-server.grpc-listen-address=127.0.0.1",
          "-server.http-listen-port=" + h, "-server.grpc-listen-port=" + g,
          "-memberlist.bind-addr=127.0.0.1", "-memberlist.advertise-addr=127.0.0.1",
          "-memberlist.bind-port=" + m, "-memberlist.advertise-port=" + m,
          "-compactor.ring.instance-addr=127.0.0.1", "-distributor.ring.instance-addr=127.0.0.1",
          "-ingester.lifecycler.addr=127.0.0.1", "-overrides-exporter.ring.instance-addr=127.0.0.1",
          "-query-frontend.instance-addr=127.0.0.1", "-query-scheduler.ring.instance-addr=127.0.0.1",
          "-store-gateway.sharding-ring.instance-addr=127.0.0.1",
          "-query-scheduler.ring.heartbeat-period=1s", "-distributor.ring.heartbeat-period=1s",
          "-self-profiling.disable-push=true", "-usage-stats.enabled=false", "-tracing.enabled=false"};
}

}  // namespace

PyroscopeServer::PyroscopeServer() {
  char tmpl[] = "/tmp/ehprof-pyroscope-XXXXXX";
  if (mkdtemp(tmpl)) dir_ = tmpl;
  PickPorts();
}

void PyroscopeServer::PickPorts() {
  for (int* port : {&http_port_, &grpc_port_, &memberlist_port_, &tls_http_port_, &tls_grpc_port_,
                    &tls_memberlist_port_}) {
    *port = FreeLoopbackPort();
  }
}

PyroscopeServer::~PyroscopeServer() {
  Stop();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

std::string PyroscopeServer::Binary() { return InstalledBinary("EHPROF_PYROSCOPE", "install_pyroscope.sh"); }

void PyroscopeServer::UseTls(std::string ca_file, std::string cert_file, std::string key_file) {
  ca_ = std::move(ca_file);
  cert_ = std::move(cert_file);
  key_ = std::move(key_file);
}

std::string PyroscopeServer::url() const {
  if (cert_.empty()) return query_url();
  return "https://127.0.0.1:" + std::to_string(tls_http_port_);
}

bool PyroscopeServer::Launch(std::vector<std::string> args, const std::string& log,
                             const std::string& ready_cmd, pid_t* pid, std::string* error) {
  *pid = SpawnLogged(args, log, dir_);
  if (*pid < 0) {
    *error = "cannot start " + args[0];
    return false;
  }
  for (int i = 0; i < 600; ++i) {
    if (ShellOutput(ready_cmd) == "ready") return true;
    if (waitpid(*pid, nullptr, WNOHANG) == *pid) {
      *pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *error = "Pyroscope did not become ready; its log:\n" + ReadFile(log).substr(0, 4000);
  Stop();
  return false;
}

bool PyroscopeServer::Start(std::string* error) {
  for (int tries = 1;; ++tries) {
    if (StartOnce(error)) {
      started_ = true;
      return true;
    }
    if (started_ || tries == kStartTries || error->find("address already in use") == std::string::npos) {
      return false;
    }
    PickPorts();
  }
}

bool PyroscopeServer::StartOnce(std::string* error) {
  const std::string bin = Binary();
  if (bin.empty()) {
    *error = "the Pyroscope server is not installed (bash scripts/install_pyroscope.sh)";
    return false;
  }
  std::vector<std::string> store = CommonArgs(bin, http_port_, grpc_port_, memberlist_port_);
  // Ready in about a second instead of fifteen.
  for (const char* a : {"-ingester.min-ready-duration=0s", "-ingester.join-after=0s",
                        "-ingester.heartbeat-period=1s"}) {
    store.push_back(a);
  }
  store.push_back("-pyroscopedb.data-path=" + dir_ + "/data");
  const std::string store_ready = "curl -sf " + query_url() + "/ready";
  if (!Launch(store, dir_ + "/server.log", store_ready, &pid_, error)) return false;
  if (cert_.empty()) return true;
  std::vector<std::string> front =
      CommonArgs(bin, tls_http_port_, tls_grpc_port_, tls_memberlist_port_);
  const std::string m = std::to_string(memberlist_port_);
  for (const std::string& a : std::vector<std::string>{
           "-target=distributor", "-memberlist.join=127.0.0.1:" + m,
        // Required out of single-binary mode; a distributor stores nothing.
        "-storage.backend=filesystem", "-storage.filesystem.dir=" + dir_ + "/bucket",
        "-server.http-tls-cert-path=" + cert_, "-server.http-tls-key-path=" + key_}) {
    front.push_back(a);
  }
  // Ready to forward once the store's ingester is in its ring.
  const std::string ready = "curl -sf --cacert '" + ca_ + "' " + url() + "/ring | grep -q '127.0.0.1:" +
                            std::to_string(http_port_) + "' && printf ready";
  return Launch(front, dir_ + "/distributor.log", ready, &tls_pid_, error);
}

void PyroscopeServer::Stop() {
  StopProcess(&tls_pid_);
  StopProcess(&pid_);
}

std::string PyroscopeServer::Get(const std::string& path_and_query) const {
  return ShellOutput("curl -sf '" + query_url() + path_and_query + "'");
}

}  // namespace ehprof::testing
