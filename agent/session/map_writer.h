// What the table store and the process tracker need of a BPF map: writes of
// fixed-size values by u32 key. BpfMapWriter is the real map (by fd); tests
// give an in-memory map (tests/memory_map_writer.h), so range allocation,
// packing, rollback, eviction and a full map get unit tests without root.
#ifndef EHPROF_AGENT_SESSION_MAP_WRITER_H_
#define EHPROF_AGENT_SESSION_MAP_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace ehprof {

struct MapFds;

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

// A BPF map by fd (not owned: the session keeps the map). Ranges go in one
// bpf_map_update_batch where the kernel supports it, else one by one.
class BpfMapWriter : public MapWriter {
 public:
  BpfMapWriter(int fd, size_t value_size, std::string name)
      : fd_(fd), value_size_(value_size), name_(std::move(name)) {}
  absl::Status Write(uint32_t start, const void* values, uint32_t n) override;
  void Delete(uint32_t key) override;
  bool Read(uint32_t key, void* value) const override;
  size_t value_size() const override { return value_size_; }

 private:
  absl::Status WriteOne(uint32_t key, const void* value);
  int fd_;
  size_t value_size_;
  std::string name_;
};

// The maps a TableStore fills.
struct TableMaps {
  std::unique_ptr<MapWriter> tables, pages, buckets, rows, palettes, rules;
};
TableMaps BpfTableMaps(const MapFds& fds);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_MAP_WRITER_H_
