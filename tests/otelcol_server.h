// The real OpenTelemetry Collector for tests (scripts/install_otelcol.sh
// builds it once): the OTLP receiver on 127.0.0.1 at free ports (HTTP and
// gRPC) with the profiles feature gate on, and the file exporter writing
// what it received as OTLP JSON, one request a line. It can be stopped and
// started again on the same ports (an outage); each start writes a file of
// its own, and Received() reads them all.
#ifndef EHPROF_TESTS_OTELCOL_SERVER_H_
#define EHPROF_TESTS_OTELCOL_SERVER_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace ehprof::testing {

class OtelcolServer {
 public:
  OtelcolServer();
  ~OtelcolServer();
  OtelcolServer(const OtelcolServer&) = delete;
  OtelcolServer& operator=(const OtelcolServer&) = delete;

  // $EHPROF_OTELCOL, else what install_otelcol.sh prints; empty if neither.
  static std::string Binary();
  // From the next Start: both receivers serve TLS with this certificate
  // and key (PEM files); the URLs say https.
  void UseTls(std::string cert_file, std::string key_file);
  // Starts it and waits up to 60 s for it to say it is ready; false with
  // the reason.
  bool Start(std::string* error);
  void Stop();
  std::string http_url() const { return Scheme() + "://127.0.0.1:" + std::to_string(http_port_); }
  std::string grpc_url() const { return Scheme() + "://127.0.0.1:" + std::to_string(grpc_port_); }
  // The exporter's files so far (it flushes each second).
  std::vector<std::string> files() const { return files_; }

 private:
  std::string Scheme() const { return cert_.empty() ? "http" : "https"; }
  std::string dir_;
  std::string cert_, key_;
  int http_port_ = 0, grpc_port_ = 0;
  std::vector<std::string> files_;
  pid_t pid_ = -1;
};

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_OTELCOL_SERVER_H_
