#include "agent/sink/push_request.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/output/protobuf_writer.h"

namespace ehprof {
namespace {

enum : uint32_t { kRequestSeries = 1 };
enum : uint32_t { kSeriesLabels = 1, kSeriesSamples = 2 };
enum : uint32_t { kSampleRawProfile = 1, kSampleId = 2 };
enum : uint32_t { kLabelName = 1, kLabelValue = 2 };

bool ValidName(const std::string& n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string RandomId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("%016x%016x", rng(), rng());
}

}  // namespace

absl::Status ValidateLabels(const Labels& labels) {
  if (labels.size() > kMaxLabelNames) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels.size(), " labels: Pyroscope takes at most ", kMaxLabelNames));
  }
  for (const auto& [name, value] : labels) {
    if (!ValidName(name) || name.size() > kMaxLabelNameLength) {
      return absl::InvalidArgumentError(absl::StrCat("label name '", name, "' is not [a-zA-Z_][a-zA-Z0-9_]* of at most ",
                                                     kMaxLabelNameLength, " characters"));
    }
    if (value.empty() || value.size() > kMaxLabelValueLength) {
      return absl::InvalidArgumentError(absl::StrCat("label ", name, ": the value must have 1 to ",
                                                     kMaxLabelValueLength, " characters"));
    }
  }
  return absl::OkStatus();
}

std::string EncodePushRequest(const std::vector<PushSeries>& series) {
  ProtobufWriter request, s, inner;
  for (const PushSeries& ps : series) {
    s.Clear();
    for (const auto& [name, value] : ps.labels) {
      inner.Clear();
      inner.Bytes(kLabelName, name);
      inner.Bytes(kLabelValue, value);
      s.Message(kSeriesLabels, inner);
    }
    for (const std::string& profile : ps.profiles) {
      inner.Clear();
      inner.Bytes(kSampleRawProfile, profile);
      inner.Bytes(kSampleId, RandomId());
      s.Message(kSeriesSamples, inner);
    }
    request.Message(kRequestSeries, s);
  }
  return request.data();
}

}  // namespace ehprof
