// One interval's resolved profile as the agent's sinks see it: a single
// interned profile (agent/output/interned_profile.h) for all services, and
// which of its samples each service has.
#ifndef EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_
#define EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_

#include <cstdint>
#include <map>
#include <string>
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
  // Mapping path -> GNU build-id (hex), for the profiles' mappings.
  std::map<std::string, std::string> build_ids;
};

// Builds an IntervalOutput's profile from resolved samples, service by
// service (equal samples of a service merged).
class ServiceProfileBuilder {
 public:
  explicit ServiceProfileBuilder(StackView view = StackView::kFull) : builder_(false, view) {}
  void Add(const std::string& service, const ResolvedSample& s) {
    const std::vector<std::pair<uint32_t, uint32_t>> label = {
        {builder_.String("service_name"), builder_.String(service)}};
    if (auto [index, fresh] = builder_.Add(s, label); fresh) by_service_[service].push_back(index);
  }
  // Into out->profile and out->by_service; the builder is empty again.
  void Finish(IntervalOutput* out) {
    out->profile = builder_.Take();
    out->by_service = std::exchange(by_service_, {});
  }

 private:
  ProfileBuilder builder_;
  std::map<std::string, std::vector<uint32_t>> by_service_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_OUTPUT_H_
