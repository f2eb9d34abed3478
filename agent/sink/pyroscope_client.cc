#include "agent/sink/pyroscope_client.h"

#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace ehprof {

PyroscopeClient::~PyroscopeClient() = default;

absl::StatusOr<std::unique_ptr<PyroscopeClient>> PyroscopeClient::Create(PyroscopeOptions o) {
  if (absl::Status s = CheckHttpUrl(o.url, "--pyroscope", o.ca_file, "--pyroscope-ca"); !s.ok()) return s;
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

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot read the secret"));
  }
  return std::string(absl::StripAsciiWhitespace(line));
}

}  // namespace ehprof
