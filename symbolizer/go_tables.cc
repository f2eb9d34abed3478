#include "symbolizer/go_tables.h"

#include "absl/strings/str_cat.h"

namespace ehprof {

std::shared_ptr<const GoTables::Entry> GoTables::Get(const std::string& path) {
  {
    MutexLock lock(mu_);
    if (auto it = entries_.find(path); it != entries_.end()) return it->second;
  }
  // Read outside the lock; two threads may both read a new file, the first
  // one stored wins.
  auto entry = std::make_shared<Entry>();
  std::string warning;
  if (auto elf = ElfFile::Open(path); elf.ok()) {
    entry->elf.emplace(std::move(*elf));
    auto table = FindGoPclntab(*entry->elf);
    if (!table.ok()) {
      warning = std::string(table.status().message());
    } else if (*table) {
      entry->table = std::move(**table);
    }
    if (!entry->table) entry->elf.reset();
  }
  if (!warning.empty()) warnings_->Add(std::move(warning));
  MutexLock lock(mu_);
  return entries_.emplace(path, std::move(entry)).first->second;
}

void GoTables::DropResidentPages() {
  MutexLock lock(mu_);
  for (const auto& [path, entry] : entries_) {
    if (entry->elf) entry->elf->DropResidentPages();
  }
}

std::vector<Symbolizer::SourceFrame> GoTables::Frames(const std::string& path,
                                                      uint64_t elf_vaddr) {
  std::shared_ptr<const Entry> e = Get(path);
  std::vector<Symbolizer::SourceFrame> out;
  if (!e->table) return out;
  for (GoPclntab::Frame& f : e->table->Frames(elf_vaddr)) {
    out.push_back({std::move(f.function), std::move(f.file), f.line, f.inlined});
  }
  return out;
}

std::optional<uint64_t> GoTables::FunctionStart(const std::string& path, uint64_t elf_vaddr) {
  std::shared_ptr<const Entry> e = Get(path);
  return e->table ? e->table->FunctionStart(elf_vaddr) : std::nullopt;
}

}  // namespace ehprof
