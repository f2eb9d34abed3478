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
  // Service name -> its samples (indexes into profile.samples), each
  // labelled service_name.
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
  // container_name: a service's container name ("" for none), asked once
  // per service.
  using NameOf = std::function<std::string(const std::string& service)>;
  explicit ServiceProfileBuilder(StackView view = StackView::kFull, NameOf container_name = nullptr)
      : builder_(false, view), container_name_(std::move(container_name)) {}
  void Add(const std::string& service, const ResolvedSample& s) {
    auto [named, first] = container_names_.try_emplace(service);
    if (first && container_name_) named->second = container_name_(service);
    std::vector<std::pair<uint32_t, uint32_t>> labels = {
        {builder_.String("service_name"), builder_.String(service)}};
    if (!named->second.empty()) {
      labels.emplace_back(builder_.String("container_name"), builder_.String(named->second));
    }
    if (auto [index, fresh] = builder_.Add(s, labels); fresh) by_service_[service].push_back(index);
  }
  // Into out->profile, out->by_service and out->container_names; the
  // builder is empty again.
  void Finish(IntervalOutput* out) {
    out->profile = builder_.Take();
    out->by_service = std::exchange(by_service_, {});
    out->container_names.clear();
    for (auto& [service, name] : container_names_) {
      if (!name.empty()) out->container_names.emplace(service, std::move(name));
    }
    container_names_.clear();
  }

 private:
  ProfileBuilder builder_;
  NameOf container_name_;
  std::map<std::string, std::vector<uint32_t>> by_service_;
  std::map<std::string, std::string> container_names_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_
