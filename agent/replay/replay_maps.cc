#include "agent/replay/replay_maps.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/elf_file.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {

absl::Status ReplayArrayMap::Write(uint32_t start, const void* values, uint32_t n) {
  const auto* bytes = static_cast<const uint8_t*>(values);
  for (uint32_t i = 0; i < n; ++i) {
    if (start + i >= capacity_) {
      return absl::InternalError(absl::StrCat("replay map: key ", start + i, " past its ", capacity_));
    }
    values_[start + i].assign(bytes + size_t{i} * value_size_, bytes + size_t{i + 1} * value_size_);
  }
  return absl::OkStatus();
}

void* ReplayArrayMap::Lookup(uint32_t key) {
  if (key >= capacity_) return nullptr;
  auto it = values_.find(key);
  if (it != values_.end()) return it->second.data();
  std::fill(zero_.begin(), zero_.end(), 0);  // the walk only reads; stay zero anyway
  return zero_.data();
}

ReplayMaps::ReplayMaps() {
  const MapSizes sizes;
  TableMaps m;
  auto make = [this](std::unique_ptr<MapWriter>* slot, ehp_replay_map which, size_t value_size,
                     uint32_t n) {
    auto w = std::make_unique<ReplayArrayMap>(value_size, n);
    maps_[which] = w.get();
    *slot = std::move(w);
  };
  make(&m.tables, EHP_REPLAY_MAP_TABLES, sizeof(ehp_table_info), sizes.tables);
  make(&m.pages, EHP_REPLAY_MAP_PAGES, sizeof(ehp_page), sizes.pages);
  make(&m.buckets, EHP_REPLAY_MAP_BUCKETS, sizeof(ehp_buckets), sizes.pages);
  make(&m.rows, EHP_REPLAY_MAP_ROWS, size_t{EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES, sizes.row_chunks);
  make(&m.palettes, EHP_REPLAY_MAP_PALETTES, sizeof(uint64_t), sizes.palette_words);
  make(&m.rules, EHP_REPLAY_MAP_RULES, sizeof(ehp_rule), sizes.rules);
  store_ = std::make_unique<TableStore>(std::move(m), sizes);
}

absl::StatusOr<uint32_t> ReplayMaps::LoadTable(const std::string& path) {
  EHP_ASSIGN_OR_RETURN(ElfFile elf, ElfFile::Open(path));
  EHP_ASSIGN_OR_RETURN(UnwindTable table, BuildUnwindTable(elf));
  EHP_ASSIGN_OR_RETURN(CompactTable compact, EncodeCompactTable(table.rows, path));
  return store_->Load(compact, path);
}

void ReplayMaps::SetProc(uint32_t pid, std::unique_ptr<ehp_proc> proc) {
  pid_ = pid;
  proc_ = std::move(proc);
}

void* ReplayMaps::Lookup(void* self, ehp_replay_map map, uint32_t key) {
  auto* m = static_cast<ReplayMaps*>(self);
  if (map == EHP_REPLAY_MAP_PROCS) return key == m->pid_ ? m->proc_.get() : nullptr;
  if (map < 0 || map >= EHP_REPLAY_MAP_COUNT || !m->maps_[map]) return nullptr;
  return m->maps_[map]->Lookup(key);
}

}  // namespace ehprof
