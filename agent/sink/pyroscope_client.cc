#include "agent/sink/pyroscope_client.h"

#include <curl/curl.h>

#include <fstream>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace ehprof {
namespace {

size_t Collect(char* data, size_t size, size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->size() < 4096) s->append(data, std::min(size * n, 4096 - s->size()));
  return size * n;
}

// The curl errors that mean the server's certificate did not verify (an
// unreadable CA file is another: its message says so).
bool CertificateError(CURLcode rc) {
  return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_ISSUER_ERROR;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

void CloseCurl(CURL* c) { curl_easy_cleanup(c); }

PyroscopeClient::~PyroscopeClient() = default;

absl::StatusOr<std::unique_ptr<PyroscopeClient>> PyroscopeClient::Create(PyroscopeOptions o) {
  GlobalInit();
  ScopedHandle<CURLU, curl_url_cleanup> u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, o.url.c_str(), 0) != CURLUE_OK) {
    return absl::InvalidArgumentError(absl::StrCat("--pyroscope ", o.url, ": not a URL"));
  }
  char* scheme = nullptr;
  char* host = nullptr;
  curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0);
  curl_url_get(u.get(), CURLUPART_HOST, &host, 0);
  const std::string s = scheme ? scheme : "", h = host ? host : "";
  curl_free(scheme);
  curl_free(host);
  if ((s != "http" && s != "https") || h.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pyroscope ", o.url, ": needs http:// or https:// and a host"));
  }
  // Said at start-up, not as a failed push for every interval.
  if (!o.ca_file.empty() && !std::ifstream(o.ca_file)) {
    return absl::NotFoundError(absl::StrCat("--pyroscope-ca ", o.ca_file, ": cannot read it"));
  }
  auto c = std::unique_ptr<PyroscopeClient>(new PyroscopeClient(std::move(o)));
  c->endpoint_ = absl::StrCat(absl::StripSuffix(c->options_.url, "/"), "/push.v1.PusherService/Push");
  c->curl_.reset(curl_easy_init());
  if (!c->curl_) return absl::ResourceExhaustedError("libcurl: cannot create a handle");
  return c;
}

absl::Status PyroscopeClient::Push(const std::string& body) {
  CURL* c = curl_.get();
  curl_easy_reset(c);
  ScopedHandle<curl_slist, curl_slist_free_all> headers;
  auto add = [&](const std::string& h) { headers.reset(curl_slist_append(headers.release(), h.c_str())); };
  add("Content-Type: application/proto");
  add("Connect-Protocol-Version: 1");
  if (!options_.tenant.empty()) add("X-Scope-OrgID: " + options_.tenant);
  if (!options_.bearer_token.empty()) add("Authorization: Bearer " + options_.bearer_token);
  std::string answer;
  char detail[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
  curl_easy_setopt(c, CURLOPT_URL, endpoint_.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, options_.connect_timeout_ms);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, options_.timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (!options_.basic_user.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, options_.basic_user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, options_.basic_password.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  // `detail` is this frame's: the handle must not keep pointing at it.
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  if (rc != CURLE_OK) {
    const std::string why = detail[0] ? detail : curl_easy_strerror(rc);
    if (CertificateError(rc)) {
      return absl::UnavailableError(absl::StrCat(
          endpoint_, ": the server's TLS certificate did not verify (", why, "); ",
          options_.ca_file.empty() ? "--pyroscope-ca FILE names the CA that signed it"
                                   : absl::StrCat("trusted: the CAs in ", options_.ca_file)));
    }
    return absl::UnavailableError(absl::StrCat(endpoint_, ": ", why));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return absl::OkStatus();
  const std::string what = absl::StrCat(endpoint_, ": HTTP ", status, ": ", absl::StripAsciiWhitespace(answer));
  if (status >= 500 || status == 429 || status == 408) return absl::UnavailableError(what);
  if (status == 401 || status == 403) return absl::PermissionDeniedError(what);
  return absl::InvalidArgumentError(what);
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
