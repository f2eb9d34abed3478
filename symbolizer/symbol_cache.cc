#include "symbolizer/symbol_cache.h"

#include <utility>

namespace ehprof {

std::shared_ptr<const ElfSymbols> SymbolCache::Get(const std::string& path) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Slot>& s = slots_[path];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard<std::mutex> lock(slot->mu);
  if (!slot->loaded) {
    slot->loaded = true;
    absl::StatusOr<std::shared_ptr<const ElfSymbols>> table = ElfSymbols::Load(path);
    if (table.ok()) {
      slot->table = *std::move(table);
    } else {
      std::lock_guard<std::mutex> warnings_lock(warnings_mu_);
      warnings_.push_back(std::string(table.status().message()));
    }
  }
  return slot->table;
}

std::optional<std::string> SymbolCache::Symbolize(const std::string& path, uint64_t vaddr) {
  std::shared_ptr<const ElfSymbols> table = Get(path);
  if (!table) return std::nullopt;
  std::optional<ElfSymbol> sym = table->Find(vaddr);
  if (!sym) return std::nullopt;
  return std::move(sym->name);
}

std::vector<std::string> SymbolCache::TakeWarnings() {
  std::lock_guard<std::mutex> lock(warnings_mu_);
  return std::exchange(warnings_, {});
}

}  // namespace ehprof
