// Sends push requests to a Pyroscope server over HTTP(S) with libcurl:
// POST BASE/push.v1.PusherService/Push, Connect protocol, protobuf body.
// The outcome says what to do next: OK; Unavailable (unreachable, timed
// out, 5xx, 429: try again later); anything else (4xx: the request itself
// is wrong, retrying cannot help). Errors carry the server's own answer.
// Credentials go into headers only, never into messages. A server
// certificate that does not verify is Unavailable too (a renewed
// certificate can fix it while the agent runs), with a message that says
// so and names --pyroscope-ca.
#ifndef EHPROF_AGENT_SINK_PYROSCOPE_CLIENT_H_
#define EHPROF_AGENT_SINK_PYROSCOPE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/sink/http_post.h"

namespace ehprof {

struct PyroscopeOptions {
  std::string url;          // http(s)://host[:port][/prefix]
  std::string tenant;       // X-Scope-OrgID, when set
  std::string basic_user;   // with basic_password: HTTP basic auth
  std::string basic_password;
  std::string bearer_token; // Authorization: Bearer
  std::string ca_file;      // PEM CA bundle trusted for https (else the system's)
  long connect_timeout_ms = 5000;
  long timeout_ms = 15000;
};

class PyroscopeClient {
 public:
  // Checks the URL (scheme http or https, a host) and that ca_file can be
  // read before anything is sent.
  static absl::StatusOr<std::unique_ptr<PyroscopeClient>> Create(PyroscopeOptions options);
  ~PyroscopeClient();
  absl::Status Push(const std::string& body);
  const std::string& endpoint() const { return endpoint_; }

 private:
  explicit PyroscopeClient(PyroscopeOptions o) : options_(std::move(o)) {}
  PyroscopeOptions options_;
  std::string endpoint_;
  CurlHandle curl_;  // reused: keeps the connection
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_PYROSCOPE_CLIENT_H_
