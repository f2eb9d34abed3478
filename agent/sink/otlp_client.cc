#include "agent/sink/otlp_client.h"

#include <cstdlib>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/output/output_pprof.h"

namespace ehprof {
namespace {

constexpr char kHttpPath[] = "/v1development/profiles";
constexpr char kGrpcPath[] = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

// Whether the URL names a path beyond "/" (after scheme://authority).
bool HasPath(const std::string& url) {
  const size_t authority = url.find("://");
  const size_t slash = url.find('/', authority == std::string::npos ? 0 : authority + 3);
  return slash != std::string::npos && slash + 1 < url.size();
}

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpClient>> OtlpClient::Create(OtlpOptions o) {
  if (o.protocol != "http/protobuf" && o.protocol != "grpc") {
    return absl::InvalidArgumentError(
        absl::StrCat("--otlp-protocol ", o.protocol, ": give http/protobuf or grpc"));
  }
  if (o.compression != "gzip" && o.compression != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--otlp-compression ", o.compression, ": give gzip or none"));
  }
  if (absl::Status s = CheckHttpUrl(o.url, "--otlp", o.ca_file, "--otlp-ca", "--otlp-header-file"); !s.ok()) return s;
  for (const std::string& h : o.headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--otlp-header takes 'Name: value', not '", h, "'"));
    }
  }
  auto c = std::unique_ptr<OtlpClient>(new OtlpClient(std::move(o)));
  const std::string base(absl::StripSuffix(c->options_.url, "/"));
  if (c->options_.protocol == "grpc") {
    c->endpoint_ = base + kGrpcPath;
  } else {
    c->endpoint_ = HasPath(c->options_.url) ? c->options_.url : base + kHttpPath;
  }
  c->curl_ = NewCurlHandle();
  if (!c->curl_) return absl::ResourceExhaustedError("libcurl: cannot create a handle");
  return c;
}

absl::Status OtlpClient::Push(const std::string& body) {
  HttpPostOptions o;
  o.ca_file = options_.ca_file;
  o.ca_flag = "--otlp-ca";
  o.connect_timeout_ms = options_.connect_timeout_ms;
  o.timeout_ms = options_.timeout_ms;
  std::vector<std::string> headers = options_.headers;
  headers.push_back("OTLP-Profiles-Development-Version: 1");
  const bool gzip = options_.compression == "gzip";
  std::ostringstream zipped;
  if (gzip) {
    if (absl::Status s = WriteGzip(body, zipped); !s.ok()) return s;
  }
  const std::string& payload = gzip ? zipped.str() : body;
  if (options_.protocol != "grpc") {
    headers.push_back("Content-Type: application/x-protobuf");
    if (gzip) headers.push_back("Content-Encoding: gzip");
    return HttpPost(curl_.get(), endpoint_, headers, payload, o);
  }
  headers.push_back("Content-Type: application/grpc");
  headers.push_back("TE: trailers");
  if (gzip) headers.push_back("grpc-encoding: gzip");
  o.http2 = true;
  // The length-prefixed message: compressed flag, size big-endian.
  std::string framed(5, '\0');
  framed[0] = gzip ? 1 : 0;
  for (int i = 0; i < 4; ++i) framed[1 + i] = static_cast<char>(payload.size() >> (8 * (3 - i)));
  framed += payload;
  std::string answer;
  if (absl::Status s = HttpPost(curl_.get(), endpoint_, headers, framed, o, &answer); !s.ok()) return s;
  return GrpcOutcome(endpoint_, answer);
}

absl::Status GrpcOutcome(const std::string& endpoint, const std::string& header_lines) {
  int code = -1;
  std::string message;
  for (absl::string_view line : absl::StrSplit(header_lines, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name = absl::AsciiStrToLower(line.substr(0, colon));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (name == "grpc-status" && !absl::SimpleAtoi(value, &code)) code = -1;
    if (name == "grpc-message") message = std::string(value);
  }
  if (code == 0) return absl::OkStatus();
  const std::string what = absl::StrCat(endpoint, ": gRPC status ", code, ": ", message);
  if (code < 0) return absl::UnavailableError(absl::StrCat(endpoint, ": no gRPC status in the answer"));
  // UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED, CANCELLED,
  // OUT_OF_RANGE, DATA_LOSS
  for (int retryable : {14, 8, 4, 10, 1, 11, 15}) {
    if (code == retryable) return absl::UnavailableError(what);
  }
  return absl::InvalidArgumentError(what);
}

}  // namespace ehprof
