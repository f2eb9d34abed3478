// Go binaries' pclntabs by path, found and parsed on first use and kept:
// names, file:line and inline frames for Go code, the stripped build's
// included (go build -ldflags='-s -w' keeps .gopclntab). Files that are not
// Go cost one look for the section (or, without section headers, a scan of
// the read-only segments for the pcHeader) once.
#ifndef EHPROF_SYMBOLIZER_GO_TABLES_H_
#define EHPROF_SYMBOLIZER_GO_TABLES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "base/warnings.h"
#include "elf/elf_file.h"
#include "elf/go_pclntab_finder.h"
#include "symbolizer/symbolizer.h"

namespace ehprof {

class GoTables {
 public:
  // Errors of Go tables that do not parse go to `warnings` (not owned; it
  // outlives the tables), each naming its file.
  explicit GoTables(Warnings* warnings) : warnings_(warnings) {}
  // Empty when `path` is not a Go binary (or cannot be read).
  std::vector<Symbolizer::SourceFrame> Frames(const std::string& path, uint64_t elf_vaddr);
  std::optional<uint64_t> FunctionStart(const std::string& path, uint64_t elf_vaddr);
  // Every kept binary's pages read so far leave this process's RSS (the
  // tables read them again from the page cache).
  void DropResidentPages();

 private:
  struct Entry {
    std::optional<ElfFile> elf;  // owns the bytes `table` reads
    std::optional<GoPclntab> table;
  };
  std::shared_ptr<const Entry> Get(const std::string& path);

  Mutex mu_;  // base/mutex.h's: see SymbolCache
  absl::flat_hash_map<std::string, std::shared_ptr<const Entry>> entries_ ABSL_GUARDED_BY(mu_);
  Warnings* warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_GO_TABLES_H_
