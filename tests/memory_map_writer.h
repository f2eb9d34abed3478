// An in-memory stand-in for a BPF map behind the MapWriter seam: what the
// table store and the process tracker wrote, readable by tests. It is not
// presented as a BPF map: tests that need the kernel's maps are *_priv_test.
// Like an array map it refuses keys past its capacity; like a hash map it
// can be made to refuse new keys once it holds `capacity` entries.
#ifndef EHPROF_TESTS_MEMORY_MAP_WRITER_H_
#define EHPROF_TESTS_MEMORY_MAP_WRITER_H_

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/tables/map_sizes.h"
#include "agent/tables/map_writer.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

class MemoryMapWriter : public MapWriter {
 public:
  enum class Kind { kArray, kHash };
  MemoryMapWriter(size_t value_size, uint32_t capacity, Kind kind = Kind::kArray)
      : value_size_(value_size), capacity_(capacity), kind_(kind) {}

  absl::Status Write(uint32_t start, const void* values, uint32_t n) override {
    const auto* bytes = static_cast<const uint8_t*>(values);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t key = start + i;
      if (fail_after_ >= 0 && writes_ >= static_cast<uint64_t>(fail_after_)) {
        return absl::InternalError(absl::StrCat("injected failure writing key ", key));
      }
      if (kind_ == Kind::kArray && key >= capacity_) {
        return absl::InternalError(absl::StrCat("key ", key, " past the array's end"));
      }
      if (kind_ == Kind::kHash && !values_.count(key) && values_.size() >= capacity_) {
        return absl::ResourceExhaustedError(absl::StrCat("hash map full at key ", key));
      }
      ++writes_;
      values_[key].assign(bytes + size_t{i} * value_size_, bytes + size_t{i + 1} * value_size_);
    }
    return absl::OkStatus();
  }
  void Delete(uint32_t key) override { values_.erase(key); }
  bool Read(uint32_t key, void* value) const override {
    auto it = values_.find(key);
    if (it == values_.end()) return false;
    std::memcpy(value, it->second.data(), value_size_);
    return true;
  }
  size_t value_size() const override { return value_size_; }

  // The value at key as T (zeroes when never written, as in an array map).
  template <typename T>
  T Get(uint32_t key) const {
    T out{};
    auto it = values_.find(key);
    if (it != values_.end()) std::memcpy(&out, it->second.data(), sizeof(T));
    return out;
  }
  const std::vector<uint8_t>* Bytes(uint32_t key) const {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
  }
  bool Has(uint32_t key) const { return values_.count(key) > 0; }
  size_t size() const { return values_.size(); }
  uint64_t writes() const { return writes_; }
  // Every write from the n-th on (counting all writes so far) fails.
  void FailAfter(int64_t n) { fail_after_ = n; }

 private:
  size_t value_size_;
  uint32_t capacity_;
  Kind kind_;
  std::map<uint32_t, std::vector<uint8_t>> values_;
  uint64_t writes_ = 0;
  int64_t fail_after_ = -1;
};

// The maps a TableStore fills, in memory and sized as `sizes` says (what
// BpfTableMaps gives for the real ones); `views` points at them afterwards.
struct MemoryTableMaps {
  MemoryMapWriter *tables, *pages, *buckets, *rows, *palettes, *rules;
};
inline TableMaps MakeMemoryTableMaps(const MapSizes& sizes, MemoryTableMaps* views) {
  TableMaps m;
  auto make = [](std::unique_ptr<MapWriter>* slot, size_t value_size, uint32_t n) {
    auto w = std::make_unique<MemoryMapWriter>(value_size, n);
    MemoryMapWriter* raw = w.get();
    *slot = std::move(w);
    return raw;
  };
  views->tables = make(&m.tables, sizeof(ehp_table_info), sizes.tables);
  views->pages = make(&m.pages, sizeof(ehp_page), sizes.pages);
  views->buckets = make(&m.buckets, sizeof(ehp_buckets), sizes.pages);
  views->rows = make(&m.rows, size_t{EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES, sizes.row_chunks);
  views->palettes = make(&m.palettes, sizeof(uint64_t), sizes.palette_words);
  views->rules = make(&m.rules, sizeof(ehp_rule), sizes.rules);
  return m;
}

}  // namespace ehprof

#endif  // EHPROF_TESTS_MEMORY_MAP_WRITER_H_
