#include "agent/resolve/address_symbolizer.h"

#include <algorithm>

#include "symbolizer/demangle.h"

namespace ehprof {
namespace {

uint64_t StringBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// The heap a cached entry holds beyond its slot in the table.
uint64_t FramesBytes(const std::vector<Symbolizer::SourceFrame>& frames) {
  uint64_t n = frames.capacity() * sizeof(Symbolizer::SourceFrame);
  for (const auto& f : frames) n += StringBytes(f.function) + StringBytes(f.file);
  return n;
}

}  // namespace

AddressSymbolizer::AddressSymbolizer(Options options, Warnings* warnings) : options_(std::move(options)) {
  names_ = std::make_shared<SymbolCache>(warnings);
  dwarf_ = std::make_unique<DwarfSymbolizer>(warnings, names_);
  dwarf_->SetMaxExpandedDwarf(options_.max_expanded_dwarf);
  dwarf_->SetMaxExpandedDwarfTotal(options_.max_expanded_dwarf_total);
}

uint32_t AddressSymbolizer::FileId(const std::string& path) {
  auto [it, inserted] = file_ids_.try_emplace(path, next_file_id_);
  if (inserted) {
    // Beyond max_files, the least recently used file's data goes.
    while (files_.size() >= options_.max_files) {
      uint32_t oldest = UINT32_MAX;
      for (const auto& [id, f] : files_) {
        if (oldest == UINT32_MAX || f.last_used < files_[oldest].last_used) oldest = id;
      }
      Evict(oldest);
    }
    files_[next_file_id_++].path = path;
  }
  return it->second;
}

void AddressSymbolizer::Evict(uint32_t id, bool counted) {
  auto it = files_.find(id);
  if (it == files_.end()) return;
  if (counted) {
    bytes_evicted_ += names_->FileBytes(it->second.path);
    ++files_evicted_;
  }
  dwarf_->Evict(it->second.path);
  file_ids_.erase(it->second.path);
  files_.erase(it);
}

void AddressSymbolizer::Forget(const std::string& file) {
  if (auto it = file_ids_.find(file); it != file_ids_.end()) {
    Evict(it->second, /*counted=*/false);
  } else {
    // Looked up only by the debug-file search, or never: the caches may
    // still have tried it.
    dwarf_->Evict(file);
  }
}

std::pair<size_t, uint64_t> AddressSymbolizer::EvictFor(uint64_t bytes) {
  std::vector<std::pair<uint64_t, uint32_t>> by_age;  // (last used, id)
  for (const auto& [id, f] : files_) {
    if (f.last_used < round_) by_age.emplace_back(f.last_used, id);
  }
  std::sort(by_age.begin(), by_age.end());
  const uint64_t evicted_before = bytes_evicted_;
  size_t n = 0;
  for (const auto& [used, id] : by_age) {
    if (bytes_evicted_ - evicted_before >= bytes) break;
    Evict(id);
    ++n;
  }
  return {n, bytes_evicted_ - evicted_before};
}

AddressSymbolizer::Usage AddressSymbolizer::usage() const {
  Usage u;
  u.files = files_.size();
  for (const auto& [id, f] : files_) {
    const uint64_t bytes = names_->FileBytes(f.path);
    u.symbol_bytes += bytes;
    u.largest.emplace_back(f.path, bytes);
  }
  std::sort(u.largest.begin(), u.largest.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (u.largest.size() > 3) u.largest.resize(3);
  u.addresses = current_.size() + previous_.size();
  u.address_bytes = current_bytes_ + previous_bytes_;
  u.files_evicted = files_evicted_;
  u.bytes_evicted = bytes_evicted_;
  return u;
}

const AddressSymbolizer::Symbolized& AddressSymbolizer::Lookup(const std::string& file, uint64_t vaddr) {
  const uint32_t id = FileId(file);
  files_[id].last_used = round_;
  auto key = std::make_pair(id, vaddr);
  if (auto it = current_.find(key); it != current_.end()) return it->second;
  if (auto it = previous_.find(key); it != previous_.end()) {
    current_bytes_ += sizeof(Cache::value_type) + FramesBytes(it->second.frames);
    return current_.emplace(key, std::move(it->second)).first->second;
  }
  Symbolized s;
  s.frames = dwarf_->Frames(file, vaddr);
  s.start = dwarf_->FunctionStart(file, vaddr).value_or(0);
  // The function itself named as the symbol tables name it (as perf does);
  // its inline expansions keep DWARF's names.
  if (!s.frames.empty() && !s.frames.back().inlined) {
    if (auto name = names_->FunctionName(file, vaddr)) s.frames.back().function = *name;
  }
  if (options_.demangle) {
    for (auto& fr : s.frames) fr.function = Demangle(fr.function);
  }
  current_bytes_ += sizeof(Cache::value_type) + FramesBytes(s.frames);
  return current_.emplace(std::move(key), std::move(s)).first->second;
}

void AddressSymbolizer::NextRound() {
  ++round_;
  // Retired between rounds only, so that what a round looked up stays.
  if (current_bytes_ >= options_.address_cache_bytes) {
    previous_ = std::move(current_);
    previous_bytes_ = current_bytes_;
    current_ = Cache();
    current_bytes_ = 0;
  }
}

void AddressSymbolizer::CloseSessions() {
  for (const auto& [id, f] : files_) dwarf_->CloseSession(f.path);
  dwarf_->DropResidentPages();
}

}  // namespace ehprof
