// Owns the loaded BPF program and everything attached to it: the skeleton,
// one perf event per CPU, the tracepoint links. Destruction detaches and
// releases all of it, so no program or map outlives ehprof.
#ifndef EHPROF_AGENT_SESSION_BPF_SESSION_H_
#define EHPROF_AGENT_SESSION_BPF_SESSION_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/sampling/sampling_session.h"
#include "agent/sampling/session_options.h"
#include "base/scoped_handle.h"
#include "bpf/ehprof_abi.h"

struct ehprof_bpf;
struct bpf_link;

namespace ehprof {

// bpf_link__destroy and the skeleton's destroy, with libbpf's headers kept
// out of includers.
void DestroyLink(bpf_link* l);
void DestroySkeleton(ehprof_bpf* s);
using BpfLinkPtr = ScopedHandle<bpf_link, DestroyLink>;

// The loaded maps' fds, filled by name (designated initializers): the
// skeleton owns them.
struct MapFds {
  int procs = -1, targets = -1, tables = -1, pages = -1, buckets = -1, rows = -1,
      palettes = -1, rules = -1, events = -1, stats = -1, file_tables = -1;
  int py_procs = -1;   // Python processes (bpf/python.bpf.h)
  int jvm_procs = -1;  // HotSpot JVMs (bpf/hotspot.bpf.h)
  int v8_procs = -1;   // V8 processes (bpf/v8.bpf.h)
  // By enum ehp_interp_kind: a runtime's procs map (bpf/ruby.bpf.h,
  // bpf/php.bpf.h), found by name, and its value size; -1 none.
  int interp_procs[3] = {-1, -1, -1};
  uint32_t interp_value_size[3] = {0, 0, 0};
};

// "ruby_procs", "php_procs", "perl_procs": the BPF map of each.
inline const char* InterpProcsMapName(ehp_interp_kind kind) {
  return kind == EHP_INTERP_RUBY ? "ruby_procs" : kind == EHP_INTERP_PHP ? "php_procs" : "perl_procs";
}

// Whether the syscalls:sys_exit_mmap tracepoint can be attached by this
// process: its id is read from tracefs (mounted here if nobody has), which
// only root may read.
bool MmapTracepointReachable();

class BpfSession : public SamplingSession {
 public:
  // Opens, sizes and loads the programs; attaches the tracepoints, then one
  // sampling event per online CPU. Errors name what failed and why (missing
  // privileges, no PMU for -e cycles, a verifier rejection).
  static absl::StatusOr<std::unique_ptr<BpfSession>> Start(const SessionOptions& options);
  // Start as a SessionStarter (the command line hands it to the recorder).
  static absl::StatusOr<std::unique_ptr<SamplingSession>> StartSampling(const SessionOptions& options);
  ~BpfSession() override;

  const MapFds& maps() const { return maps_; }

  // SamplingSession: the maps through BpfMapWriter, the events map's ring
  // buffer through RingBufferSource.
  std::unique_ptr<MapWriter> TargetsMap() const override;
  std::unique_ptr<MapWriter> ProcsMap() const override;
  std::unique_ptr<MapWriter> PythonProcsMap() const override;
  std::unique_ptr<MapWriter> JvmProcsMap() const override;
  std::unique_ptr<MapWriter> V8ProcsMap() const override;
  std::unique_ptr<MapWriter> InterpProcsMap(ehp_interp_kind kind) const override;
  TableMaps UnwindTableMaps() const override;
  std::unique_ptr<FileIndexMap> FileIndex() const override;
  absl::StatusOr<std::unique_ptr<EventSource>> OpenEvents(EventSource::Handler handler) const override;
  std::vector<uint64_t> ReadStats() const override;
  ProgStats SampleProgStats() const override;
  absl::Status SetSampling(bool on) override;
  int num_cpus() const { return num_cpus_; }

  // What the verifier and the JIT made of each program (`ehprof check`).
  struct ProgramInfo {
    std::string name;
    uint64_t processed_insns = 0;  // the verifier's count; the limit is 1,000,000
    uint64_t total_states = 0, peak_states = 0;
    uint64_t verification_us = 0;
    uint32_t xlated_bytes = 0, jited_bytes = 0;
  };
  std::vector<ProgramInfo> Programs() const;

 private:
  BpfSession() = default;
  // The steps of Start, in order.
  // tail_calls: the kernel needs the tail-call build (tail_walk.h).
  absl::Status Open(const SessionOptions& o, bool tail_calls);
  absl::Status SizeMaps(const SessionOptions& o);
  void KeepVerifierLogs();  // before loading
  void ReadVerifierLogs();  // after
  void PrintVerifierLogTails() const;  // after a failed load
  absl::Status AttachLifecycle();
  // Best effort: without it only exec is learned in the kernel, and /proc
  // the rest.
  void AttachMmapLearning();
  absl::Status AttachSampler(const SessionOptions& o);
  absl::Status AttachOffCpu();
  absl::Status AttachProbe(const ProbeSpec& p);
  // The bytes of SessionOptions::bpf_object_path; outlive the skeleton.
  std::string object_bytes_;
  // Declared before links_, so destroyed after them: links (which own and
  // close their perf event fds) go before the programs they attach.
  ScopedHandle<ehprof_bpf, DestroySkeleton> skel_;
  std::vector<BpfLinkPtr> links_;
  // The sampling events' fds, owned by their links_ (SetSampling).
  std::vector<int> sampler_fds_;
  int num_cpus_ = 0;
  MapFds maps_;
  std::vector<ProgramInfo> verifier_;  // from the load logs
  std::vector<std::unique_ptr<char[]>> log_bufs_;
};

// Online CPUs from /sys/devices/system/cpu/online.
std::vector<int> OnlineCpus();

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_BPF_SESSION_H_
