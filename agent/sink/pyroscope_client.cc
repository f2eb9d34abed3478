#include "agent/sink/pyroscope_client.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace ehprof {

PyroscopeClient::~PyroscopeClient() = default;

absl::StatusOr<std::unique_ptr<PyroscopeClient>> PyroscopeClient::Create(PyroscopeOptions o) {
  absl::Status s = CheckHttpUrl(o.url, "--pyroscope", o.ca_file, "--pyroscope-ca",
                                "--basic-auth-user and --basic-auth-password-file, or --bearer-token-file");
  if (!s.ok()) return s;
  // libcurl would send "user:" with an empty password: a forgotten
  // password file must not become an attempt without one.
  if (o.basic_user.empty() != o.basic_password.empty()) {
    return absl::InvalidArgumentError(
        "basic auth takes both --basic-auth-user and --basic-auth-password-file (a non-empty password)");
  }
  auto c = std::unique_ptr<PyroscopeClient>(new PyroscopeClient(std::move(o)));
  c->endpoint_ = absl::StrCat(absl::StripSuffix(c->options_.url, "/"), "/push.v1.PusherService/Push");
  c->curl_ = NewCurlHandle();
  if (!c->curl_) return absl::ResourceExhaustedError("libcurl: cannot create a handle");
  return c;
}

absl::Status PyroscopeClient::Push(const std::string& body) {
  std::vector<std::string> headers = {"Content-Type: application/proto", "Connect-Protocol-Version: 1"};
  if (!options_.tenant.empty()) headers.push_back("X-Scope-OrgID: " + options_.tenant);
  if (!options_.bearer_token.empty()) headers.push_back("Authorization: Bearer " + options_.bearer_token);
  HttpPostOptions o;
  o.ca_file = options_.ca_file;
  o.ca_flag = "--pyroscope-ca";
  o.basic_user = options_.basic_user;
  o.basic_password = options_.basic_password;
  o.connect_timeout_ms = options_.connect_timeout_ms;
  o.timeout_ms = options_.timeout_ms;
  return HttpPost(curl_.get(), endpoint_, headers, body, o);
}

}  // namespace ehprof
