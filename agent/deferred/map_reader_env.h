// The maps a deferred walk reads (bpf/host/walk_replay.h's lookup), served
// from the session's own table maps through their MapWriters (each value
// read once per round: a row chunk is 12 KiB) and one process entry made
// by the caller from the tracker's mappings.
#ifndef EHPROF_AGENT_DEFERRED_MAP_READER_ENV_H_
#define EHPROF_AGENT_DEFERRED_MAP_READER_ENV_H_

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "agent/tables/map_writer.h"
#include "bpf/ehprof_abi.h"
#include "bpf/host/walk_replay.h"

namespace ehprof {

class MapReaderEnv {
 public:
  // tables: readers of the table maps (not owned; they outlive this).
  explicit MapReaderEnv(const TableMaps* tables) : tables_(tables) {}
  // Forgets the values read: the maps may have changed since.
  void NewRound() { cache_.clear(); }
  // The process entry lookups of pid see (the others miss).
  void SetProc(uint32_t pid, const ehp_proc* proc) {
    pid_ = pid;
    proc_ = proc;
  }
  // An environment over these maps and the stack copy [stack_lo, + len).
  ehp_replay_env Env(const uint8_t* stack, uint64_t stack_lo, uint64_t len);

 private:
  static void* Lookup(void* self, ehp_replay_map map, uint32_t key);
  const MapWriter* Reader(ehp_replay_map map) const;

  const TableMaps* tables_;
  uint32_t pid_ = 0;
  const ehp_proc* proc_ = nullptr;
  // (map << 32 | key) -> its value as read (empty: absent).
  std::unordered_map<uint64_t, std::vector<uint8_t>> cache_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_DEFERRED_MAP_READER_ENV_H_
