// Pyroscope's push API request (push.v1.PushRequest, from its
// api/push/v1/push.proto and api/types/v1/types.proto):
//   PushRequest      { repeated RawProfileSeries series = 1; }
//   RawProfileSeries { repeated LabelPair labels = 1; repeated RawSample samples = 2; }
//   RawSample        { bytes raw_profile = 1; string ID = 2; }
//   LabelPair        { string name = 1; string value = 2; }
// encoded with the project's protobuf writer; raw_profile is a gzipped
// pprof. Label rules (Pyroscope's pkg/validation): at most 30 names a
// series, names up to 1,024 characters, values up to 2,048.
#ifndef EHPROF_AGENT_SINK_PUSH_REQUEST_H_
#define EHPROF_AGENT_SINK_PUSH_REQUEST_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct PushSeries {
  Labels labels;  // __name__, service_name, ...
  std::vector<std::string> profiles;  // gzipped pprof each
};

inline constexpr size_t kMaxLabelNames = 30;
inline constexpr size_t kMaxLabelNameLength = 1024;
inline constexpr size_t kMaxLabelValueLength = 2048;

// An error naming the label that breaks Pyroscope's rules (names are
// [a-zA-Z_][a-zA-Z0-9_]* as in Prometheus; values non-empty).
absl::Status ValidateLabels(const Labels& labels);

// The request body; each profile gets a random ID.
std::string EncodePushRequest(const std::vector<PushSeries>& series);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_PUSH_REQUEST_H_
