#include "agent/deferred/map_reader_env.h"

namespace ehprof {

const MapWriter* MapReaderEnv::Reader(ehp_replay_map map) const {
  switch (map) {
    case EHP_REPLAY_MAP_TABLES:
      return tables_->tables.get();
    case EHP_REPLAY_MAP_PAGES:
      return tables_->pages.get();
    case EHP_REPLAY_MAP_BUCKETS:
      return tables_->buckets.get();
    case EHP_REPLAY_MAP_ROWS:
      return tables_->rows.get();
    case EHP_REPLAY_MAP_PALETTES:
      return tables_->palettes.get();
    case EHP_REPLAY_MAP_RULES:
      return tables_->rules.get();
    default:
      return nullptr;
  }
}

void* MapReaderEnv::Lookup(void* self, ehp_replay_map map, uint32_t key) {
  auto* env = static_cast<MapReaderEnv*>(self);
  if (map == EHP_REPLAY_MAP_PROCS) {
    return key == env->pid_ ? const_cast<ehp_proc*>(env->proc_) : nullptr;
  }
  const MapWriter* reader = env->Reader(map);
  if (!reader) return nullptr;
  const uint64_t id = (uint64_t{static_cast<uint32_t>(map)} << 32) | key;
  auto it = env->cache_.find(id);
  if (it == env->cache_.end()) {
    std::vector<uint8_t> value(reader->value_size(), 0);
    // A key past an array map's end is absent (empty), as in the kernel.
    if (!reader->Read(key, value.data())) value.clear();
    it = env->cache_.emplace(id, std::move(value)).first;
  }
  return it->second.empty() ? nullptr : it->second.data();
}

ehp_replay_env MapReaderEnv::Env(const uint8_t* stack, uint64_t stack_lo, uint64_t len) {
  ehp_replay_env env{};
  env.lookup = &MapReaderEnv::Lookup;
  env.ctx = this;
  env.stack = stack;
  env.stack_lo = stack_lo;
  env.stack_len = len;
  return env;
}

}  // namespace ehprof
