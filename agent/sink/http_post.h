// One HTTP(S) POST with libcurl, for the sinks that push to a server
// (Pyroscope, an OTLP endpoint). The outcome says what to do next: OK;
// Unavailable (unreachable, timed out, 5xx, 429, 408: try again later);
// PermissionDenied (401, 403); InvalidArgument (other 4xx: the request
// itself is wrong, retrying cannot help). Errors carry the server's own
// answer. A server certificate that does not verify is Unavailable too (a
// renewed certificate can fix it while the agent runs), with a message that
// names the flag that gives a CA.
#ifndef EHPROF_AGENT_SINK_HTTP_POST_H_
#define EHPROF_AGENT_SINK_HTTP_POST_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/scoped_handle.h"

typedef void CURL;

namespace ehprof {

struct HttpPostOptions {
  std::string ca_file;  // PEM CA bundle trusted for https (else the system's)
  std::string ca_flag;  // the flag that sets it, for the certificate error
  std::string basic_user, basic_password;
  long connect_timeout_ms = 5000;
  long timeout_ms = 15000;
  // HTTP/2 without upgrade over http:// (h2 by ALPN over https://), as gRPC
  // wants.
  bool http2 = false;
};

// curl_easy_cleanup, with curl's header kept out of includers.
void CloseCurl(CURL* c);
using CurlHandle = ScopedHandle<CURL, CloseCurl>;
// A new handle (libcurl initialised once), reused across posts so the
// connection is kept.
CurlHandle NewCurlHandle();

// InvalidArgument unless `url` is http:// or https:// with a host and no
// user name or password in it (the command line is every local user's to
// read: credentials come from files, the options `credentials_flags` names);
// then, NotFound if ca_file is set and cannot be read (said at start-up, not
// as a failed push every interval). `flag` names the option in the message,
// which shows the URL without its user information.
absl::Status CheckHttpUrl(const std::string& url, const std::string& flag, const std::string& ca_file,
                          const std::string& ca_flag, const std::string& credentials_flags);

// url with anything between "scheme://" and an '@' of its authority
// replaced by "***": what a message may show of a URL someone typed
// credentials into.
std::string RedactUrl(const std::string& url);

// POSTs body to endpoint with these header lines ("Name: value"). The
// answer's header lines (and HTTP/2 trailers) go to *response_headers when
// it is given; at most 4 KiB of the body to *response_body.
absl::Status HttpPost(CURL* c, const std::string& endpoint, const std::vector<std::string>& headers,
                      const std::string& body, const HttpPostOptions& o,
                      std::string* response_headers = nullptr, std::string* response_body = nullptr);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_HTTP_POST_H_
