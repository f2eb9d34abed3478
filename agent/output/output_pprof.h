// pprof's profile.proto (github.com/google/pprof/proto/profile.proto),
// gzip-compressed: the format `go tool pprof`, pprof's web UI, Parca,
// Pyroscope and Google Cloud Profiler read.
//
// Layout:
//   sample_type [samples/count, cpu/nanoseconds], period_type cpu/nanoseconds,
//   period = 1e9 / frequency_hz; each sample's values [count, count * period];
//   one Mapping per dso (has_functions set, so pprof never tries to
//   re-symbolize; memory_start/limit/file_offset are 0 because addresses
//   are already ELF virtual addresses, not runtime ones);
//   one Function per (symbol, dso);
//   one Location per (dso, address, inline chain), its `line`s innermost
//   first: frames marked `inlined` fold into the Location of the frame
//   they expand, as pprof models inlining;
//   labels pid, tid (numeric) and comm (string).
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_PPROF_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_PPROF_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "agent/output/interned_profile.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct PprofOptions {
  uint64_t frequency_hz = 99;  // must be > 0: it sets the period
  int64_t time_nanos = 0;      // profile start, ns since the epoch
  int64_t duration_nanos = 0;
  // dso path -> hex build id, for the Mapping's build_id (symbol servers
  // and `pprof -symbolize` key on it).
  std::map<std::string, std::string> build_ids;
  // Time in nanoseconds per sample (weight_ns) rather than a period:
  // "off_cpu" (ehprof record --off-cpu; sample types blocks/count and
  // off_cpu/nanoseconds, as Pyroscope's eBPF agent names it) or "wall"
  // (--wall: samples/count, wall/nanoseconds); frequency_hz is then unused.
  std::string ns_type;
  // Events counted rather than timed: probe hits (-e uprobe:..., period 1)
  // or a counter sampled every count_period events (-e cycles -c N).
  // Sample types samples/count and COUNT_TYPE/count ("uprobe", as
  // Pyroscope's eBPF agent names it; "cycles"), the second count x period.
  // Takes precedence over ns_type.
  std::string count_type;
  uint64_t count_period = 1;
};

// Samples with equal stacks and labels are merged; samples with count 0
// are dropped. Note pprof itself drops numeric labels whose value is 0, so
// pid/tid 0 (the idle task) show no pid/tid label there.
absl::Status WritePprof(const std::vector<ResolvedSample>& samples, std::ostream& out,
                        const PprofOptions& options);
// Some samples of an interned profile (the agent's interval: one file per
// service and kind), in their order.
absl::Status WritePprof(const InternedProfile& profile, const std::vector<uint32_t>& samples,
                        std::ostream& out, const PprofOptions& options);

// `data` gzip-compressed (as pprof files are; the OTLP sink's requests
// too).
absl::Status WriteGzip(std::string_view data, std::ostream& out);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_PPROF_H_
