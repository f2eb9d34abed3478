// The real Grafana Pyroscope server for tests (scripts/install_pyroscope.sh
// builds it once): started on 127.0.0.1 at free ports with its data in a
// temporary directory, ready when /ready says so; it can be stopped and
// started again on the same ports and data (an outage).
#ifndef EHPROF_TESTS_PYROSCOPE_SERVER_H_
#define EHPROF_TESTS_PYROSCOPE_SERVER_H_

#include <sys/types.h>

#include <string>

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
  // Starts it and waits up to 60 s for /ready; false with the reason.
  bool Start(std::string* error);
  void Stop();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  // GET url() + path_and_query; the body ("" on failure).
  std::string Get(const std::string& path_and_query) const;

 private:
  std::string dir_;
  int http_port_ = 0, grpc_port_ = 0, memberlist_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_PYROSCOPE_SERVER_H_
