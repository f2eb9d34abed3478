// Sends OTLP profiles export requests (otlp_profiles.h) to an OpenTelemetry
// Collector or any OTLP endpoint, with libcurl:
//   http/protobuf: POST URL/v1development/profiles (URL as given when it
//     has a path), Content-Type application/x-protobuf;
//   grpc: POST URL/opentelemetry.proto.collector.profiles.v1development
//     .ProfilesService/Export over HTTP/2 (prior knowledge on http://, ALPN
//     on https://), the body in one uncompressed gRPC message frame, the
//     outcome from the grpc-status trailer.
// Bodies are gzip-compressed unless compression is "none" (HTTP:
// Content-Encoding; gRPC: grpc-encoding and the frame's compressed flag),
// as OTLP exporters do by default. Both say the Profiles development version ("1", the schema of
// otlp_fields.h) in OTLP-Profiles-Development-Version. Outcomes as
// http_post.h says; gRPC codes the OTLP spec calls retryable (UNAVAILABLE,
// RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED, CANCELLED, OUT_OF_RANGE,
// DATA_LOSS) are Unavailable, the others InvalidArgument.
#ifndef EHPROF_AGENT_SINK_OTLP_CLIENT_H_
#define EHPROF_AGENT_SINK_OTLP_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/sink/http_post.h"

namespace ehprof {

struct OtlpOptions {
  std::string url;                   // http(s)://host[:port][/path]
  std::string protocol = "http/protobuf";  // or "grpc"
  std::string compression = "gzip";  // or "none"
  std::string ca_file;               // --otlp-ca
  std::vector<std::string> headers;  // "Name: value", each request
  long connect_timeout_ms = 5000;
  long timeout_ms = 15000;
};

class OtlpClient {
 public:
  static absl::StatusOr<std::unique_ptr<OtlpClient>> Create(OtlpOptions options);
  absl::Status Push(const std::string& body);
  const std::string& endpoint() const { return endpoint_; }

 private:
  explicit OtlpClient(OtlpOptions o) : options_(std::move(o)) {}
  OtlpOptions options_;
  std::string endpoint_;
  CurlHandle curl_;  // reused: keeps the connection
};

// The gRPC status in a response's header and trailer lines: OK, the
// retryable codes as Unavailable, others InvalidArgument; Unavailable when
// there is none (a proxy's answer, a cut stream).
absl::Status GrpcOutcome(const std::string& endpoint, const std::string& header_lines);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_OTLP_CLIENT_H_
