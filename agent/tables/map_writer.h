// What the table store, the process and Python trackers and the recorder's
// targets need of a BPF map: writes of fixed-size values by u32 key. The
// session gives the real map (agent/session/bpf_map_writer.h), tests an
// in-memory one (tests/memory_map_writer.h), so range allocation, packing,
// rollback, eviction and a full map get unit tests without root, and
// nothing but the session calls libbpf.
#ifndef EHPROF_AGENT_TABLES_MAP_WRITER_H_
#define EHPROF_AGENT_TABLES_MAP_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"

namespace ehprof {

class MapWriter {
 public:
  virtual ~MapWriter() = default;
  // Writes n values (value_size() bytes each, contiguous) at keys start,
  // start + 1, ... ResourceExhausted when the map has no room (a full hash
  // map), Internal for anything else; the message names the map and key.
  virtual absl::Status Write(uint32_t start, const void* values, uint32_t n) = 0;
  // Removes key; a key that is not there is not an error.
  virtual void Delete(uint32_t key) = 0;
  // Copies key's value (value_size() bytes) into value; false when the key
  // is not there or the map cannot be read back.
  virtual bool Read(uint32_t key, void* value) const { return false; }
  virtual size_t value_size() const = 0;
};

// The maps a TableStore fills.
struct TableMaps {
  std::unique_ptr<MapWriter> tables, pages, buckets, rows, palettes, rules;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_TABLES_MAP_WRITER_H_
