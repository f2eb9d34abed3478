// The maps a replayed walk reads (walk_replay.h's lookup), in memory: the
// table maps as BPF arrays (any key below the capacity reads, zeroes until
// written) and the one process entry of the walked pid. Filled from a
// capture's stored entries (capture.h) or, while recording, by the agent's
// table store through an adapter (agent/replay/capture_tables.cc). Records
// which keys the walk looked up, so a recording can keep just those.
#ifndef EHPROF_BPF_HOST_HOST_MAPS_H_
#define EHPROF_BPF_HOST_HOST_MAPS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "bpf/host/walk_replay.h"

namespace ehprof {

// A table map's name in capture files, its value size and its capacity
// (bpf/ehprof_abi.h's defaults, as the BPF object declares it).
struct HostMapShape {
  const char* name;
  size_t value_size;
  uint32_t capacity;
};
// For every map but EHP_REPLAY_MAP_PROCS.
const HostMapShape& ShapeOf(ehp_replay_map map);
// The map named name (a table map), or nullopt.
std::optional<ehp_replay_map> HostMapNamed(absl::string_view name);

class HostArrayMap {
 public:
  explicit HostArrayMap(const HostMapShape& shape) : shape_(shape), zero_(shape.value_size) {}
  // Writes bytes at offset into key's value (the rest of a new value is
  // zero). InvalidArgument past the capacity or the value's end.
  absl::Status Write(uint32_t key, size_t offset, const uint8_t* bytes, size_t n);
  void Delete(uint32_t key) { values_.erase(key); }
  // The value at key (zeroes when never written); nullptr past the
  // capacity. Records key as looked up.
  void* Lookup(uint32_t key);
  // The value written at key, or nullptr; records nothing.
  const std::vector<uint8_t>* Value(uint32_t key) const;
  const HostMapShape& shape() const { return shape_; }
  const std::set<uint32_t>& looked_up() const { return looked_up_; }
  void ClearLookedUp() { looked_up_.clear(); }

 private:
  HostMapShape shape_;
  std::unordered_map<uint32_t, std::vector<uint8_t>> values_;
  std::vector<uint8_t> zero_;
  std::set<uint32_t> looked_up_;
};

class HostMaps {
 public:
  HostMaps();
  // A table map (not EHP_REPLAY_MAP_PROCS).
  HostArrayMap& map(ehp_replay_map which) { return *maps_[which]; }
  const HostArrayMap& map(ehp_replay_map which) const { return *maps_[which]; }
  // The process entry of pid (the procs map is a hash: others miss).
  void SetProc(uint32_t pid, std::unique_ptr<ehp_proc> proc);
  void ClearLookedUp();
  // An environment for ehp_replay_walk / ehp_replay_find_rule over these
  // maps (its stack fields unset).
  ehp_replay_env Env();
  // bpf/lookup.bpf.h's find_rule (its C build) over these maps.
  std::optional<ehp_rule> FindRule(uint32_t table_id, uint64_t addr);

 private:
  static void* Lookup(void* self, ehp_replay_map map, uint32_t key);

  std::unique_ptr<HostArrayMap> maps_[EHP_REPLAY_MAP_COUNT];
  uint32_t pid_ = 0;
  std::unique_ptr<ehp_proc> proc_;
};

}  // namespace ehprof

#endif  // EHPROF_BPF_HOST_HOST_MAPS_H_
