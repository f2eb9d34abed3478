// The BPF session as a SamplingSession: its maps through BpfMapWriter, the
// events map's ring buffer and the counters.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/session/bpf_map_writer.h"
#include "agent/session/bpf_session.h"
#include "agent/session/ring_buffer_source.h"

namespace ehprof {

absl::StatusOr<std::unique_ptr<SamplingSession>> BpfSession::StartSampling(const SessionOptions& options) {
  absl::StatusOr<std::unique_ptr<BpfSession>> s = Start(options);
  if (!s.ok()) return s.status();
  return std::unique_ptr<SamplingSession>(std::move(*s));
}

std::unique_ptr<MapWriter> BpfSession::TargetsMap() const {
  return std::make_unique<BpfMapWriter>(maps_.targets, sizeof(uint8_t), "targets");
}

std::unique_ptr<MapWriter> BpfSession::ProcsMap() const {
  return std::make_unique<BpfMapWriter>(maps_.procs, sizeof(ehp_proc), "procs");
}

std::unique_ptr<MapWriter> BpfSession::PythonProcsMap() const {
  if (maps_.py_procs < 0) return nullptr;
  return std::make_unique<BpfMapWriter>(maps_.py_procs, sizeof(ehp_py_proc), "py_procs");
}

std::unique_ptr<MapWriter> BpfSession::JvmProcsMap() const {
  if (maps_.jvm_procs < 0) return nullptr;
  return std::make_unique<BpfMapWriter>(maps_.jvm_procs, sizeof(ehp_jvm_proc), "jvm_procs");
}

std::unique_ptr<MapWriter> BpfSession::V8ProcsMap() const {
  if (maps_.v8_procs < 0) return nullptr;
  return std::make_unique<BpfMapWriter>(maps_.v8_procs, sizeof(ehp_v8_proc), "v8_procs");
}

std::unique_ptr<MapWriter> BpfSession::InterpProcsMap(ehp_interp_kind kind) const {
  const auto k = static_cast<size_t>(kind);
  if (k >= std::size(maps_.interp_procs) || maps_.interp_procs[k] < 0) return nullptr;
  return std::make_unique<BpfMapWriter>(maps_.interp_procs[k], maps_.interp_value_size[k], InterpProcsMapName(kind));
}

TableMaps BpfSession::UnwindTableMaps() const { return BpfTableMaps(maps_); }

std::unique_ptr<FileIndexMap> BpfSession::FileIndex() const { return BpfFileIndexMap(maps_.file_tables); }

absl::StatusOr<std::unique_ptr<EventSource>> BpfSession::OpenEvents(EventSource::Handler handler) const {
  return OpenRingBuffer(maps_.events, std::move(handler));
}

std::vector<uint64_t> BpfSession::ReadStats() const {
  std::vector<uint64_t> totals(EHP_STAT_COUNT, 0);
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return totals;
  std::vector<uint64_t> per_cpu(ncpu);
  for (uint32_t k = 0; k < EHP_STAT_COUNT; ++k) {
    if (bpf_map_lookup_elem(maps_.stats, &k, per_cpu.data()) != 0) continue;
    for (uint64_t v : per_cpu) totals[k] += v;
  }
  return totals;
}

}  // namespace ehprof
