// The maps a replayed walk reads (walk_replay.h's lookup), filled the way
// the agent fills the kernel's: TableStore loads each file's compact table
// through MapWriter, the process entry lists the capture's mappings.
#ifndef EHPROF_AGENT_REPLAY_REPLAY_MAPS_H_
#define EHPROF_AGENT_REPLAY_REPLAY_MAPS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/replay/walk_replay.h"
#include "agent/session/map_writer.h"
#include "agent/session/table_store.h"

namespace ehprof {

// An array map in memory: any key below its capacity reads (zeroes until
// written), as a BPF array does; values are kept sparsely.
class ReplayArrayMap : public MapWriter {
 public:
  ReplayArrayMap(size_t value_size, uint32_t capacity)
      : value_size_(value_size), capacity_(capacity), zero_(value_size) {}
  absl::Status Write(uint32_t start, const void* values, uint32_t n) override;
  void Delete(uint32_t key) override { values_.erase(key); }
  size_t value_size() const override { return value_size_; }
  void* Lookup(uint32_t key);

 private:
  size_t value_size_;
  uint32_t capacity_;
  std::unordered_map<uint32_t, std::vector<uint8_t>> values_;
  std::vector<uint8_t> zero_;
};

class ReplayMaps {
 public:
  ReplayMaps();
  // Builds path's table (as the agent does: ElfFile::Open, BuildUnwindTable,
  // EncodeCompactTable) and loads it; its table id.
  absl::StatusOr<uint32_t> LoadTable(const std::string& path);
  // The process entry of pid (the procs map is a hash: others miss).
  void SetProc(uint32_t pid, std::unique_ptr<ehp_proc> proc);

  // For struct ehp_replay_env.
  static void* Lookup(void* self, ehp_replay_map map, uint32_t key);

 private:
  ReplayArrayMap* maps_[EHP_REPLAY_MAP_COUNT] = {};
  std::unique_ptr<TableStore> store_;
  uint32_t pid_ = 0;
  std::unique_ptr<ehp_proc> proc_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_REPLAY_REPLAY_MAPS_H_
