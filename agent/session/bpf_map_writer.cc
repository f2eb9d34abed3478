#include "agent/session/bpf_map_writer.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {
namespace {

class BpfIndexMap : public FileIndexMap {
 public:
  explicit BpfIndexMap(int fd) : fd_(fd) {}
  absl::Status Put(const ehp_file_key& key, const ehp_file_info& info) override {
    if (bpf_map_update_elem(fd_, &key, &info, BPF_ANY) != 0) {
      const int err = errno;
      auto make = err == E2BIG || err == ENOMEM ? absl::ResourceExhaustedError
                                                : absl::InternalError;
      return make(absl::StrCat("BPF map file_tables: writing ", key.dev, ":", key.ino, ": ",
                               std::strerror(err)));
    }
    return absl::OkStatus();
  }
  void Remove(const ehp_file_key& key) override { bpf_map_delete_elem(fd_, &key); }

 private:
  int fd_;  // not owned: the session keeps the map
};

}  // namespace

absl::Status BpfMapWriter::WriteOne(uint32_t key, const void* value) {
  if (bpf_map_update_elem(fd_, &key, value, BPF_ANY) == 0) return absl::OkStatus();
  const int err = errno;
  std::string msg =
      absl::StrCat("writing BPF map ", name_, "[", key, "]: ", std::strerror(err));
  // A full hash map says E2BIG; a failed allocation ENOMEM.
  if (err == E2BIG || err == ENOMEM || err == ENOSPC) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::Status BpfMapWriter::Write(uint32_t start, const void* values, uint32_t n) {
  if (n == 0) return absl::OkStatus();
  if (n == 1) return WriteOne(start, values);
  std::vector<uint32_t> keys(n);
  for (uint32_t i = 0; i < n; ++i) keys[i] = start + i;
  uint32_t count = n;
  if (bpf_map_update_batch(fd_, keys.data(), values, &count, nullptr) == 0 && count == n) {
    return absl::OkStatus();
  }
  const auto* bytes = static_cast<const uint8_t*>(values);
  for (uint32_t i = 0; i < n; ++i) {
    if (absl::Status st = WriteOne(start + i, bytes + i * value_size_); !st.ok()) return st;
  }
  return absl::OkStatus();
}

void BpfMapWriter::Delete(uint32_t key) { bpf_map_delete_elem(fd_, &key); }

bool BpfMapWriter::Read(uint32_t key, void* value) const {
  return bpf_map_lookup_elem(fd_, &key, value) == 0;
}

TableMaps BpfTableMaps(const MapFds& fds) {
  TableMaps m;
  m.tables = std::make_unique<BpfMapWriter>(fds.tables, sizeof(ehp_table_info), "tables");
  m.pages = std::make_unique<BpfMapWriter>(fds.pages, sizeof(ehp_page), "pages");
  m.buckets = std::make_unique<BpfMapWriter>(fds.buckets, sizeof(ehp_buckets), "buckets");
  m.rows = std::make_unique<BpfMapWriter>(
      fds.rows, size_t{EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES, "rows");
  m.palettes = std::make_unique<BpfMapWriter>(fds.palettes, sizeof(uint64_t), "palettes");
  m.rules = std::make_unique<BpfMapWriter>(fds.rules, sizeof(ehp_rule), "rules");
  return m;
}

std::unique_ptr<FileIndexMap> BpfFileIndexMap(int fd) { return std::make_unique<BpfIndexMap>(fd); }

}  // namespace ehprof
