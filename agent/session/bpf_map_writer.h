// The BPF maps behind the tables' seams (agent/tables/map_writer.h,
// agent/tables/kernel_file_index.h): each a map by fd, not owned, as the
// session keeps its maps. The only implementations that call libbpf.
#ifndef EHPROF_AGENT_SESSION_BPF_MAP_WRITER_H_
#define EHPROF_AGENT_SESSION_BPF_MAP_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "agent/session/bpf_session.h"
#include "agent/tables/kernel_file_index.h"
#include "agent/tables/map_writer.h"

namespace ehprof {

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

TableMaps BpfTableMaps(const MapFds& fds);

// The file_tables map (bpf/maps.bpf.h) by fd.
std::unique_ptr<FileIndexMap> BpfFileIndexMap(int fd);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_BPF_MAP_WRITER_H_
