// What a recording needs of the loaded BPF programs, as an interface: the
// maps it writes (through the tables' MapWriter seams), the events it reads
// and the counters it reports. The BPF session (agent/session/bpf_session.h)
// is the implementation; the command line starts it and hands the recorder
// a SessionStarter, so the recorder and everything above it link no libbpf.
#ifndef EHPROF_AGENT_SAMPLING_SAMPLING_SESSION_H_
#define EHPROF_AGENT_SAMPLING_SAMPLING_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/sampling/event_source.h"
#include "agent/sampling/session_options.h"
#include "agent/tables/kernel_file_index.h"
#include "agent/tables/map_writer.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

class SamplingSession {
 public:
  // Runtime statistics of the sampling program (kernel.bpf_stats_enabled).
  struct ProgStats {
    uint64_t run_time_ns = 0;
    uint64_t run_cnt = 0;
  };

  virtual ~SamplingSession() = default;

  // Writers of the session's maps (bpf/maps.bpf.h); each writes a map the
  // session keeps, so none may outlive it.
  // targets: pid or tid → uint8_t enum ehp_target_kind.
  virtual std::unique_ptr<MapWriter> TargetsMap() const = 0;
  // procs: pid → struct ehp_proc.
  virtual std::unique_ptr<MapWriter> ProcsMap() const = 0;
  // py_procs: pid → struct ehp_py_proc; null if the programs have none.
  virtual std::unique_ptr<MapWriter> PythonProcsMap() const = 0;
  // jvm_procs: pid → struct ehp_jvm_proc; null if the programs have none.
  virtual std::unique_ptr<MapWriter> JvmProcsMap() const = 0;
  // v8_procs: pid → struct ehp_v8_proc; null if the programs have none.
  virtual std::unique_ptr<MapWriter> V8ProcsMap() const = 0;
  // The procs map of an interpreter of agent/interp/ (Ruby: ruby_procs,
  // PHP: php_procs, Perl: perl_procs; pid → its bpf/ehprof_abi.h struct);
  // null if the programs have none.
  virtual std::unique_ptr<MapWriter> InterpProcsMap(ehp_interp_kind kind) const = 0;
  // The unwind-table maps the TableStore places rows in.
  virtual TableMaps UnwindTableMaps() const = 0;
  // file_tables: the kernel's index of loaded files (bpf/proc_learn.bpf.h).
  virtual std::unique_ptr<FileIndexMap> FileIndex() const = 0;
  // The events ring buffer; `handler` sees each event as Poll hands it.
  virtual absl::StatusOr<std::unique_ptr<EventSource>> OpenEvents(EventSource::Handler handler) const = 0;

  // Sums of the per-CPU counters (enum ehp_stat), EHP_STAT_COUNT of them.
  virtual std::vector<uint64_t> ReadStats() const = 0;
  virtual ProgStats SampleProgStats() const = 0;
  // Starts (on) or stops the sampling events: a session started with them
  // held (SessionOptions::hold_sampler; -D) samples from SetSampling(true);
  // a recording that has ended stops them before it resolves and writes,
  // which at -F max would otherwise crawl under the timer interrupts.
  virtual absl::Status SetSampling(bool on) = 0;
};

// Loads and attaches what `options` asks for; errors name what failed.
using SessionStarter =
    std::function<absl::StatusOr<std::unique_ptr<SamplingSession>>(const SessionOptions& options)>;

}  // namespace ehprof

#endif  // EHPROF_AGENT_SAMPLING_SAMPLING_SESSION_H_
