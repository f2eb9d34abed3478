// The real Grafana Pyroscope server for tests (scripts/install_pyroscope.sh
// builds it once): started on 127.0.0.1 at free ports with its data in a
// temporary directory, ready when /ready says so; it can be stopped and
// started again on the same ports and data (an outage).
//
// With TLS, pushes go through a second Pyroscope process: a distributor
// alone (-target=distributor), serving HTTPS (dskit's
// -server.http-tls-cert-path), joined to the first by memberlist and
// forwarding to its ingester. TLS on the all-in-one server itself is not
// an option: its components call each other over plain HTTP/2 on that same
// port (pkg/util/http.go dials TCP even for https), so its distributor's
// pushes to its ingester are reset. Queries go to the first process.
#ifndef EHPROF_TESTS_PYROSCOPE_SERVER_H_
#define EHPROF_TESTS_PYROSCOPE_SERVER_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace ehprof::testing {

class PyroscopeServer {
 public:
  PyroscopeServer();
  ~PyroscopeServer();
  PyroscopeServer(const PyroscopeServer&) = delete;
  PyroscopeServer& operator=(const PyroscopeServer&) = delete;

  // The server binary: $EHPROF_PYROSCOPE, else what install_pyroscope.sh
  // prints (it builds the pinned version if it has to); empty if neither.
  static std::string Binary();
  // From the next Start: the HTTPS distributor too, with this certificate
  // and key (PEM files), its /ready asked trusting ca_file.
  void UseTls(std::string ca_file, std::string cert_file, std::string key_file);
  // Starts it and waits up to 60 s for /ready; false with the reason. Until
  // it has once started, a port another process took first (the ports are
  // found free, then bound by the server: ctest -j runs other servers) is
  // tried again on new ports, at most kStartTries times in all; after that,
  // on the same ports as before (an outage's restart).
  bool Start(std::string* error);
  void Stop();
  // Where to push: https://... with TLS.
  std::string url() const;
  // Where to query (render API, UI).
  std::string query_url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  // GET query_url() + path_and_query; the body ("" on failure).
  std::string Get(const std::string& path_and_query) const;

 private:
  static constexpr int kStartTries = 3;
  void PickPorts();
  bool StartOnce(std::string* error);
  // One process with `args` after the common ones, logging to `log`,
  // ready when `ready_cmd` prints "ready".
  bool Launch(std::vector<std::string> args, const std::string& log, const std::string& ready_cmd,
              pid_t* pid, std::string* error);

  std::string dir_;
  int http_port_ = 0, grpc_port_ = 0, memberlist_port_ = 0;
  int tls_http_port_ = 0, tls_grpc_port_ = 0, tls_memberlist_port_ = 0;
  std::string ca_, cert_, key_;
  pid_t pid_ = -1, tls_pid_ = -1;
  bool started_ = false;
};

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_PYROSCOPE_SERVER_H_
