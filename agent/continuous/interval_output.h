// One interval's resolved profile as the agent's sinks see it: a single
// interned profile (agent/output/interned_profile.h) for all services, and
// which of its samples each service has.
#ifndef EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_
#define EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_replace.h"
#include "agent/continuous/service_name.h"
#include "agent/output/interned_profile.h"
#include "agent/output/stack_view.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct IntervalOutput {
  uint64_t start_unix_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t frequency_hz = 0;
  uint64_t samples = 0;
  InternedProfile profile;
  // Series (a SeriesKey: service name and cgroup labels) -> its samples
  // (indexes into profile.samples), each labelled service_name and the
  // series' labels.
  std::map<std::string, std::vector<uint32_t>> by_service;
  // Service -> the name its container's runtime gave it (container_names.h),
  // for the services that have one; their samples are labelled
  // container_name too.
  std::map<std::string, std::string> container_names;
  // Mapping path -> GNU build-id (hex), for the profiles' mappings.
  std::map<std::string, std::string> build_ids;
};

// Builds an IntervalOutput's profile from resolved samples, service by
// service (equal samples of a service merged).
class ServiceProfileBuilder {
 public:
  // container_name: the name of a "container/ID" service's container ("" for
  // none), asked once per series: a series with a container.id label is
  // asked for "container/" and that id's first 12 digits.
  using NameOf = std::function<std::string(const std::string& service)>;
  explicit ServiceProfileBuilder(StackView view = StackView::kFull, NameOf container_name = nullptr)
      : builder_(false, view), container_name_(std::move(container_name)) {}
  // service: a SeriesKey.
  void Add(const std::string& service, const ResolvedSample& s) {
    auto [it, fresh_key] = labels_.try_emplace(service);
    if (fresh_key) it->second = Labels(service);
    if (auto [index, fresh] = builder_.Add(s, it->second); fresh) by_service_[service].push_back(index);
  }
  // Into out->profile, out->by_service and out->container_names; the
  // builder is empty again.
  void Finish(IntervalOutput* out) {
    out->profile = builder_.Take();
    out->by_service = std::exchange(by_service_, {});
    out->container_names = std::exchange(container_names_, {});
    labels_.clear();
  }

 private:
  ProfileBuilder builder_;
  // A series' sample labels (string ids): service_name, its cgroup labels
  // (Pyroscope takes a pprof's sample labels as series labels, whose names
  // have no '.': container_id, k8s_pod_uid) and container_name.
  std::vector<std::pair<uint32_t, uint32_t>> Labels(const std::string& service) {
    const ServiceSeries series = SplitSeriesKey(service);
    std::vector<std::pair<uint32_t, uint32_t>> labels = {
        {builder_.String("service_name"), builder_.String(series.name)}};
    std::string asked = series.name;
    for (const auto& [k, v] : series.labels) {
      labels.emplace_back(builder_.String(absl::StrReplaceAll(k, {{".", "_"}})), builder_.String(v));
      if (k == "container.id") asked = "container/" + v.substr(0, 12);
    }
    if (std::string name = container_name_ ? container_name_(asked) : ""; !name.empty()) {
      labels.emplace_back(builder_.String("container_name"), builder_.String(name));
      container_names_.emplace(service, std::move(name));
    }
    return labels;
  }

  NameOf container_name_;
  // Each series' sample labels, made once.
  std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> labels_;
  std::map<std::string, std::vector<uint32_t>> by_service_;
  std::map<std::string, std::string> container_names_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_
