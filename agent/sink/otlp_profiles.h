// One interval as an OTLP profiles export request
// (opentelemetry.proto.collector.profiles.v1development
// .ExportProfilesServiceRequest, field numbers in otlp_fields.h), encoded
// with the project's protobuf writer:
//   one ResourceProfiles per series, its Resource attributed service.name,
//   host.name, the series' cgroup labels (container.id, k8s.pod.uid),
//   process.executable.name (when the service's samples all have one
//   comm), and the --label pairs; one ScopeProfiles (scope "ehprof");
//   a CPU profile (sample type samples/count, period type cpu/nanoseconds,
//   period 1e9/Hz) and, with --off-cpu, an off-CPU one (off_cpu/nanoseconds,
//   period 1), each sample attributed thread.name (the comm);
//   one dictionary for the request: strings, functions (name, source file),
//   mappings (the process's range and file offset, the file's path,
//   process.executable.build_id.gnu), locations (the address in the
//   process, lines innermost inline first, profile.frame.type kernel,
//   native or cpython), stacks (locations leaf first); entry 0 of each table is the
//   zero value, as the schema asks.
#ifndef EHPROF_AGENT_SINK_OTLP_PROFILES_H_
#define EHPROF_AGENT_SINK_OTLP_PROFILES_H_

#include <string>
#include <utility>
#include <vector>

#include "agent/continuous/interval_output.h"

namespace ehprof {

using OtlpAttributes = std::vector<std::pair<std::string, std::string>>;

// host.name and the --label pairs go into `common`, on every resource.
std::string EncodeOtlpProfiles(const IntervalOutput& out, const OtlpAttributes& common);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_OTLP_PROFILES_H_
