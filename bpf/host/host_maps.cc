#include "bpf/host/host_maps.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

constexpr HostMapShape kShapes[EHP_REPLAY_MAP_COUNT] = {
    {"procs", sizeof(ehp_proc), EHP_DEFAULT_PROCS},
    {"tables", sizeof(ehp_table_info), EHP_DEFAULT_TABLES},
    {"pages", sizeof(ehp_page), EHP_DEFAULT_PAGES},
    {"buckets", sizeof(ehp_buckets), EHP_DEFAULT_PAGES},
    {"rows", size_t{EHP_ROW_CHUNK_ROWS} * EHP_ROW_BYTES, EHP_DEFAULT_ROW_CHUNKS},
    {"palettes", sizeof(uint64_t), EHP_DEFAULT_PALETTE_WORDS},
    {"rules", sizeof(ehp_rule), EHP_DEFAULT_RULES},
};

}  // namespace

const HostMapShape& ShapeOf(ehp_replay_map map) { return kShapes[map]; }

std::optional<ehp_replay_map> HostMapNamed(absl::string_view name) {
  for (int i = EHP_REPLAY_MAP_TABLES; i < EHP_REPLAY_MAP_COUNT; ++i) {
    if (name == kShapes[i].name) return static_cast<ehp_replay_map>(i);
  }
  return std::nullopt;
}

absl::Status HostArrayMap::Write(uint32_t key, size_t offset, const uint8_t* bytes, size_t n) {
  if (key >= shape_.capacity) {
    return absl::InvalidArgumentError(absl::StrCat(shape_.name, ": key ", key, " past its ", shape_.capacity));
  }
  if (offset > shape_.value_size || n > shape_.value_size - offset) {
    return absl::InvalidArgumentError(absl::StrCat(shape_.name, ": ", n, " bytes at ", offset,
                                                   " run past its ", shape_.value_size, "-byte values"));
  }
  std::vector<uint8_t>& v = values_[key];
  v.resize(shape_.value_size);
  std::copy(bytes, bytes + n, v.begin() + static_cast<ptrdiff_t>(offset));
  return absl::OkStatus();
}

void* HostArrayMap::Lookup(uint32_t key) {
  if (key >= shape_.capacity) return nullptr;
  looked_up_.insert(key);
  auto it = values_.find(key);
  if (it != values_.end()) return it->second.data();
  std::fill(zero_.begin(), zero_.end(), 0);  // the walk only reads; stay zero anyway
  return zero_.data();
}

const std::vector<uint8_t>* HostArrayMap::Value(uint32_t key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

HostMaps::HostMaps() {
  for (int i = EHP_REPLAY_MAP_TABLES; i < EHP_REPLAY_MAP_COUNT; ++i) {
    maps_[i] = std::make_unique<HostArrayMap>(kShapes[i]);
  }
}

void HostMaps::SetProc(uint32_t pid, std::unique_ptr<ehp_proc> proc) {
  pid_ = pid;
  proc_ = std::move(proc);
}

void HostMaps::ClearLookedUp() {
  for (int i = EHP_REPLAY_MAP_TABLES; i < EHP_REPLAY_MAP_COUNT; ++i) maps_[i]->ClearLookedUp();
}

ehp_replay_env HostMaps::Env() {
  ehp_replay_env env{};
  env.lookup = &HostMaps::Lookup;
  env.ctx = this;
  return env;
}

std::optional<ehp_rule> HostMaps::FindRule(uint32_t table_id, uint64_t addr) {
  ehp_replay_env env = Env();
  ehp_rule rule{};
  if (!ehp_replay_find_rule(&env, table_id, addr, &rule)) return std::nullopt;
  return rule;
}

void* HostMaps::Lookup(void* self, ehp_replay_map map, uint32_t key) {
  auto* m = static_cast<HostMaps*>(self);
  if (map == EHP_REPLAY_MAP_PROCS) return key == m->pid_ ? m->proc_.get() : nullptr;
  if (map <= EHP_REPLAY_MAP_PROCS || map >= EHP_REPLAY_MAP_COUNT) return nullptr;
  return m->maps_[map]->Lookup(key);
}

}  // namespace ehprof
