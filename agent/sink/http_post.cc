#include "agent/sink/http_post.h"

#include <curl/curl.h>

#include <algorithm>
#include <fstream>
#include <mutex>

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

}  // namespace

void CloseCurl(CURL* c) { curl_easy_cleanup(c); }

CurlHandle NewCurlHandle() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return CurlHandle(curl_easy_init());
}

std::string RedactUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t authority = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t end = url.find_first_of("/?#", authority);
  const size_t at = url.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < authority) return url;
  return absl::StrCat(url.substr(0, authority), "***", url.substr(at));
}

absl::Status CheckHttpUrl(const std::string& url, const std::string& flag, const std::string& ca_file,
                          const std::string& ca_flag, const std::string& credentials_flags) {
  NewCurlHandle();  // libcurl initialised
  const std::string shown = RedactUrl(url);
  ScopedHandle<CURLU, curl_url_cleanup> u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", shown, ": not a URL"));
  }
  auto part = [&](CURLUPart which) {
    char* p = nullptr;
    curl_url_get(u.get(), which, &p, 0);
    std::string out = p ? p : "";
    curl_free(p);
    return out;
  };
  if (shown != url || !part(CURLUPART_USER).empty() || !part(CURLUPART_PASSWORD).empty()) {
    // Refused, not redacted: the URL is on the command line, where ps shows
    // it to every user whatever ehprof prints.
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " ", shown != url ? shown : "(not shown)",
        ": credentials in a URL are visible to every user in ps; give them with ", credentials_flags));
  }
  const std::string s = part(CURLUPART_SCHEME), h = part(CURLUPART_HOST);
  if ((s != "http" && s != "https") || h.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", url, ": needs http:// or https:// and a host"));
  }
  if (!ca_file.empty() && !std::ifstream(ca_file)) {
    return absl::NotFoundError(absl::StrCat(ca_flag, " ", ca_file, ": cannot read it"));
  }
  return absl::OkStatus();
}

absl::Status HttpPost(CURL* c, const std::string& endpoint, const std::vector<std::string>& headers,
                      const std::string& body, const HttpPostOptions& o, std::string* response_headers,
                      std::string* response_body) {
  curl_easy_reset(c);
  ScopedHandle<curl_slist, curl_slist_free_all> list;
  for (const std::string& h : headers) list.reset(curl_slist_append(list.release(), h.c_str()));
  std::string answer, answer_headers;
  char detail[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
  curl_easy_setopt(c, CURLOPT_URL, endpoint.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &answer_headers);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o.connect_timeout_ms);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o.timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (o.http2) {
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    // A new connection each time: reusing the HTTP/2 one failed the next
    // request here ("Error in the HTTP2 framing layer", libcurl 7.88 and the
    // Collector's gRPC server); one connection an interval costs nothing.
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
  }
  if (!o.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, o.ca_file.c_str());
  if (!o.basic_user.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, o.basic_user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, o.basic_password.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  // `detail` is this frame's: the handle must not keep pointing at it.
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  if (rc != CURLE_OK) {
    const std::string why = detail[0] ? detail : curl_easy_strerror(rc);
    if (CertificateError(rc)) {
      return absl::UnavailableError(absl::StrCat(
          endpoint, ": the server's TLS certificate did not verify (", why, "); ",
          o.ca_file.empty() ? absl::StrCat(o.ca_flag, " FILE names the CA that signed it")
                            : absl::StrCat("trusted: the CAs in ", o.ca_file)));
    }
    return absl::UnavailableError(absl::StrCat(endpoint, ": ", why));
  }
  if (response_headers) *response_headers = std::move(answer_headers);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) {
    if (response_body) *response_body = std::move(answer);
    return absl::OkStatus();
  }
  const std::string what = absl::StrCat(endpoint, ": HTTP ", status, ": ", absl::StripAsciiWhitespace(answer));
  if (status >= 500 || status == 429 || status == 408) return absl::UnavailableError(what);
  if (status == 401 || status == 403) return absl::PermissionDeniedError(what);
  return absl::InvalidArgumentError(what);
}

}  // namespace ehprof
