#include "symbolizer/symbol_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "elf/debug_file_finder.h"
#include "elf/elf_file.h"

namespace ehprof {

CfiFunctions UncoveredRanges(const CfiFunctions& cfi,
                             std::initializer_list<std::shared_ptr<const ElfSymbols>> tables) {
  std::vector<FunctionRange> kept;
  for (const FunctionRange& r : cfi.ranges()) {
    bool covered = false;
    for (const auto& t : tables) covered = covered || (t && t->Covers(r.begin, r.end));
    if (!covered) kept.push_back(r);
  }
  return CfiFunctions::FromRanges(std::move(kept));
}

std::shared_ptr<const ElfSymbols> SymbolCache::Get(const std::string& path) {
  std::shared_ptr<Slot> slot;
  {
    MutexLock lock(mu_);
    std::shared_ptr<Slot>& s = slots_[path];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  MutexLock lock(slot->mu);
  if (!slot->loaded) {
    slot->loaded = true;
    Load(path, slot.get());
  }
  return slot->table;
}

void SymbolCache::Load(const std::string& path, Slot* slot) {
  absl::StatusOr<ElfFile> elf = ElfFile::Open(path);
  absl::StatusOr<std::shared_ptr<const ElfSymbols>> table =
      elf.ok() ? ElfSymbols::FromElf(*elf) : elf.status();
  if (table.ok()) {
    slot->table = *std::move(table);
  } else {
    warnings_->Add(std::string(table.status().message()));
    return;
  }
  if (std::optional<DebugFile> debug = FindSeparateDebugFile(*elf)) {
    auto debug_table = ElfSymbols::FromFd(std::move(debug->fd), debug->path);
    if (debug_table.ok() && (*debug_table)->size() > 0) slot->debug_table = *std::move(debug_table);
  }
}

std::optional<std::string> SymbolCache::Symbolize(const std::string& path, uint64_t vaddr) {
  auto sym = Lookup(path, vaddr);
  if (!sym) return std::nullopt;
  return std::move(sym->name);
}

std::optional<ElfSymbol> SymbolCache::Lookup(const std::string& path, uint64_t vaddr) {
  Get(path);
  std::shared_ptr<Slot> slot;
  {
    MutexLock lock(mu_);
    slot = slots_[path];
  }
  std::shared_ptr<const ElfSymbols> debug, table;
  {
    MutexLock lock(slot->mu);
    debug = slot->debug_table;
    table = slot->table;
  }
  for (const auto& t : {debug, table}) {
    if (!t) continue;
    if (std::optional<ElfSymbol> sym = t->Find(vaddr)) return sym;
  }
  return FromCfi(path, slot.get(), vaddr);
}

std::optional<ElfSymbol> SymbolCache::FromCfi(const std::string& path, Slot* slot, uint64_t vaddr) {
  std::shared_ptr<const CfiFunctions> cfi;
  {
    MutexLock lock(slot->mu);
    if (!slot->cfi_loaded) {
      slot->cfi_loaded = true;
      // Errors are the table build's to report; here they only mean no names.
      if (auto elf = ElfFile::Open(path); elf.ok()) {
        if (auto f = CfiFunctions::FromElf(*elf); f.ok()) {
          slot->cfi = std::make_shared<const CfiFunctions>(UncoveredRanges(*f, {slot->debug_table, slot->table}));
        }
      }
    }
    cfi = slot->cfi;
  }
  if (!cfi) return std::nullopt;
  std::optional<FunctionRange> r = cfi->Find(vaddr);
  if (!r) return std::nullopt;
  const size_t slash = path.rfind('/');
  ElfSymbol sym;
  sym.name = absl::StrCat(slash == std::string::npos ? path : path.substr(slash + 1), "+0x",
                          absl::Hex(r->begin));
  sym.start = r->begin;
  sym.size = r->end - r->begin;
  return sym;
}


uint64_t SymbolCache::FileBytes(const std::string& path) {
  std::shared_ptr<Slot> slot;
  {
    MutexLock lock(mu_);
    auto it = slots_.find(path);
    if (it == slots_.end()) return 0;
    slot = it->second;
  }
  MutexLock lock(slot->mu);
  uint64_t n = sizeof(Slot) + path.size();
  for (const auto& t : {slot->table, slot->debug_table}) {
    if (t) n += sizeof(ElfSymbols) + t->heap_bytes();
  }
  if (slot->cfi) n += sizeof(CfiFunctions) + slot->cfi->size() * sizeof(FunctionRange);
  return n;
}

void SymbolCache::DropResidentPages() {
  std::vector<std::shared_ptr<Slot>> slots;
  {
    MutexLock lock(mu_);
    for (const auto& [path, slot] : slots_) slots.push_back(slot);
  }
  for (const auto& slot : slots) {
    MutexLock lock(slot->mu);
    for (const auto& t : {slot->table, slot->debug_table}) {
      if (t) t->DropResidentNames();
    }
  }
}

void SymbolCache::Evict(const std::string& path) {
  MutexLock lock(mu_);
  slots_.erase(path);
}

}  // namespace ehprof
