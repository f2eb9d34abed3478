#include "tests/otelcol_server.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof::testing {

OtelcolServer::OtelcolServer() {
  char tmpl[] = "/tmp/ehprof-otelcol-XXXXXX";
  if (mkdtemp(tmpl)) dir_ = tmpl;
  http_port_ = FreeLoopbackPort();
  grpc_port_ = FreeLoopbackPort();
}

OtelcolServer::~OtelcolServer() {
  Stop();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

std::string OtelcolServer::Binary() { return InstalledBinary("EHPROF_OTELCOL", "install_otelcol.sh"); }

void OtelcolServer::UseTls(std::string cert_file, std::string key_file) {
  cert_ = std::move(cert_file);
  key_ = std::move(key_file);
}

bool OtelcolServer::Start(std::string* error) {
  const std::string bin = Binary();
  if (bin.empty()) {
    *error = "the OpenTelemetry Collector is not installed (bash scripts/install_otelcol.sh)";
    return false;
  }
  const std::string n = std::to_string(files_.size());
  const std::string out = dir_ + "/received." + n + ".jsonl", config = dir_ + "/config." + n + ".yaml";
  const std::string log = dir_ + "/collector." + n + ".log";
  const std::string tls = cert_.empty() ? "" : "        tls:\n          cert_file: " + cert_ +
                                                    "\n          key_file: " + key_ + "\n";
  std::ofstream(config) << "receivers:\n  otlp:\n    protocols:\n"
                        << "      http:\n        endpoint: 127.0.0.1:" << http_port_ << "\n" << tls
                        << "      grpc:\n        endpoint: 127.0.0.1:" << grpc_port_ << "\n" << tls
                        << "exporters:\n  file:\n    path: " << out << "\n"
                        << "service:\n  telemetry:\n    metrics:\n      level: none\n"
                        << "  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n";
  pid_ = SpawnLogged({bin, "--config=" + config, "--feature-gates=+service.profilesSupport"}, log, dir_);
  if (pid_ < 0) {
    *error = "cannot start " + bin;
    return false;
  }
  files_.push_back(out);
  for (int i = 0; i < 600; ++i) {
    if (ReadFile(log).find("Everything is ready") != std::string::npos) return true;
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *error = "the Collector did not become ready; its log:\n" + ReadFile(log).substr(0, 4000);
  Stop();
  return false;
}

void OtelcolServer::Stop() { StopProcess(&pid_); }

}  // namespace ehprof::testing
