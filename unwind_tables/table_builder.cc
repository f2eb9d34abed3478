#include "unwind_tables/table_builder.h"

#include <elf.h>
#include <sys/mman.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/byte_reader.h"
#include "unwind_tables/a64_plt.h"
#include "unwind_tables/entry_point_rows.h"
#include "unwind_tables/crt_rows.h"
#include "unwind_tables/init_fini_rows.h"
#include "unwind_tables/cfa_program.h"
#include "unwind_tables/cfi_records.h"
#include "unwind_tables/cfi_sections.h"
#include "elf/debug_file_finder.h"
#include "unwind_tables/go_unwind_rows.h"
#include "base/status_macros.h"

namespace ehprof {
namespace {

constexpr size_t kMaxWarnings = 20;

// Big row buffers (tens of MB for libLLVM) are filled once, front to back:
// with transparent huge pages the kernel faults them in 2 MiB at a time
// instead of 4 KiB (page faults were a third of the build time). Only a
// hint: without THP nothing changes.
void AdviseHugePages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void Warn(UnwindTable* t, std::string msg) {
  if (t->warnings.size() < kMaxWarnings) {
    t->warnings.push_back(std::move(msg));
  } else if (t->warnings.size() == kMaxWarnings) {
    t->warnings.push_back("further warnings suppressed");
  }
}

// A file's part refused as unsafe to read: a warning, and one the agent
// passes on (it does not show the others).
void Refuse(UnwindTable* t, std::string msg) {
  if (t->refused.size() < kMaxWarnings) t->refused.push_back(msg);
  Warn(t, std::move(msg));
}

void Push(std::vector<UnwindRow>* out, uint64_t addr, const UnwindRule& rule) {
  if (!out->empty() && out->back().addr == addr) {
    out->back().rule = rule;  // replaces a zero-width predecessor
    if (out->size() >= 2 && (*out)[out->size() - 2].rule == rule) out->pop_back();
    return;
  }
  if (out->empty() || !(out->back().rule == rule)) out->push_back({addr, rule});
}

// Interprets a section's FDEs (`order`: by address) into one sorted row
// list with explicit gaps. FDEs overlapping an earlier one (malformed CFI)
// are trimmed: the first by address wins, as in a binary search over
// .eh_frame_hdr.
absl::StatusOr<std::vector<UnwindRow>> InterpretFdes(const CfiSectionRef& ref, const CfiRecords& recs,
                                                     const std::vector<const Fde*>& order, size_t max_rows,
                                                     bool track_rbx, UnwindTable* table) {
  std::vector<UnwindRow> out;
  // About one row per 5 bytes of CFI; untouched capacity costs nothing.
  out.reserve(std::min(ref.data.size() / 4, max_rows) + 16);
  AdviseHugePages(out.data(), out.capacity() * sizeof(UnwindRow));
  std::vector<UnwindRow> scratch;
  CfaProgramRunner runner(recs, track_rbx);
  uint64_t covered = 0;
  size_t overlaps = 0;
  for (const Fde* f : order) {
    if (!out.empty() && f->pc_end <= covered) {
      ++overlaps;
      continue;
    }
    scratch.clear();
    absl::Status st = runner.Run(*f, &scratch, &table->cfi_rows);
    if (!st.ok()) {
      Warn(table, std::string(st.message()));
      continue;
    }
    ++table->fdes;
    uint64_t begin = f->pc_begin;
    size_t k = 0;
    if (!out.empty() && begin < covered) {
      ++overlaps;
      begin = covered;
      while (k + 1 < scratch.size() && scratch[k + 1].addr <= begin) ++k;
    }
    if (!out.empty() && begin > covered) Push(&out, covered, UnwindRule::None());
    Push(&out, begin, scratch[k].rule);
    for (++k; k < scratch.size(); ++k) Push(&out, scratch[k].addr, scratch[k].rule);
    covered = f->pc_end;
    if (out.size() > max_rows) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: %s: more than %d unwind rows; not building a table this large", ref.file,
          CfiSectionName(ref.kind), max_rows));
    }
  }
  if (!out.empty()) Push(&out, covered, UnwindRule::None());
  if (overlaps) {
    Warn(table, absl::StrFormat("%s: %s: %d overlapping FDEs trimmed", ref.file,
                                CfiSectionName(ref.kind), overlaps));
  }
  return out;
}

// Whether a walk through these rows needs the caller's rbx: a CFA based on
// it (ld.so's lazy-binding trampolines, hand-written assembly).
bool HasRbxCfa(const std::vector<UnwindRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const UnwindRow& r) {
    return (r.rule.cfa_kind == EHP_CFA_REG || r.rule.cfa_kind == EHP_CFA_DEREF) &&
           r.rule.cfa_reg == EHP_REG_RBX;
  });
}

// Parses a section and interprets its FDEs in address order. x86-64
// sections with a CFA based on rbx are interpreted again, their rows then
// saying where each frame's caller's rbx is (the walk tracks it through
// them); other sections' rows stay as few as rbx's saves would multiply.
absl::StatusOr<std::vector<UnwindRow>> FlattenSection(CfiSectionRef ref, size_t max_rows,
                                                      UnwindTable* table) {
  // Each FDE that survives adds a row or more, so more FDEs than rows cannot
  // make a table (and the records would cost 3 times the section).
  ref.max_fdes = max_rows;
  EHP_ASSIGN_OR_RETURN(CfiRecords recs, ParseCfiRecords(ref));
  std::vector<const Fde*> order;
  order.reserve(recs.fdes.size());
  for (const Fde& f : recs.fdes) {
    if (f.pc_end > f.pc_begin) order.push_back(&f);
  }
  std::stable_sort(order.begin(), order.end(), [](const Fde* a, const Fde* b) {
    return a->pc_begin < b->pc_begin;
  });
  const uint64_t fdes = table->fdes, cfi_rows = table->cfi_rows;
  const size_t warnings = table->warnings.size();
  EHP_ASSIGN_OR_RETURN(std::vector<UnwindRow> rows,
                       InterpretFdes(ref, recs, order, max_rows, /*track_rbx=*/false, table));
  if (recs.arch != Arch::kX86_64 || !HasRbxCfa(rows)) return rows;
  const uint64_t plain_fdes = table->fdes, plain_cfi_rows = table->cfi_rows;
  table->fdes = fdes;
  table->cfi_rows = cfi_rows;
  std::vector<std::string> plain_warnings(table->warnings.begin() + warnings, table->warnings.end());
  table->warnings.resize(warnings);
  auto tracked = InterpretFdes(ref, recs, order, max_rows, /*track_rbx=*/true, table);
  if (tracked.ok()) return tracked;
  // Too many rows with rbx's: the plain rows, rbx lost in their frames.
  table->fdes = plain_fdes;
  table->cfi_rows = plain_cfi_rows;
  table->warnings.resize(warnings);
  table->warnings.insert(table->warnings.end(), plain_warnings.begin(), plain_warnings.end());
  return rows;
}

// Where `primary` has no CFI, `secondary`'s rows apply. Both sorted step
// functions; the result is one too.
std::vector<UnwindRow> Overlay(const std::vector<UnwindRow>& primary,
                               const std::vector<UnwindRow>& secondary, bool* used) {
  std::vector<UnwindRow> out;
  out.reserve(primary.size() + secondary.size());
  size_t i = 0, j = 0;
  UnwindRule p = UnwindRule::None(), s = UnwindRule::None();
  *used = false;
  while (i < primary.size() || j < secondary.size()) {
    uint64_t addr = std::min(i < primary.size() ? primary[i].addr : UINT64_MAX,
                             j < secondary.size() ? secondary[j].addr : UINT64_MAX);
    while (i < primary.size() && primary[i].addr == addr) p = primary[i++].rule;
    while (j < secondary.size() && secondary[j].addr == addr) s = secondary[j++].rule;
    if (p.is_none() && !s.is_none()) *used = true;
    Push(&out, addr, p.is_none() ? s : p);
  }
  return out;
}

}  // namespace

std::string UnwindTable::source() const {
  std::string s;
  if (from_eh_frame) s = "eh_frame";
  if (from_debug_frame) s += s.empty() ? "debug_frame" : "+debug_frame";
  if (plt_rows) s += s.empty() ? "plt" : "+plt";
  if (go_rows) s += s.empty() ? "gopclntab" : "+gopclntab";
  if (init_fini_rows) s += s.empty() ? "init" : "+init";
  if (crt_rows) s += s.empty() ? "crt" : "+crt";
  return s.empty() ? "none" : s;
}

// The rows of code the CFI does not cover, over the CFI's rows: aarch64's
// PLT, .init/.fini, the entry point, crtbegin's functions, Go's functions.
static absl::Status AddSynthesizedRows(const ElfFile& elf, const TableBuildOptions& options, UnwindTable* table) {
  EHP_ASSIGN_OR_RETURN(std::vector<UnwindRow> plt_rows, Aarch64PltRows(elf));
  if (!plt_rows.empty()) table->rows = Overlay(table->rows, plt_rows, &table->plt_rows);
  // A file without CFI is walked by frame pointers instead: even a
  // data-only library's (libicudata, whose .text is crtbegin's alone). A
  // table for it is one more to load, and under a full table memory a
  // late file's load evicts a parked one (libc's, prefetched for a
  // command: RecordLimits.FullTableMapsDegradePerFileAndSaySo).
  if (options.init_fini_rows && !table->rows.empty()) {
    EHP_ASSIGN_OR_RETURN(std::vector<UnwindRow> init_rows, InitFiniRows(elf));
    if (!init_rows.empty()) table->rows = Overlay(table->rows, init_rows, &table->init_fini_rows);
  }
  if (options.entry_point_rows) {
    std::vector<UnwindRow> entry_rows = EntryPointRows(elf, table->rows);
    if (!entry_rows.empty()) table->rows = Overlay(table->rows, entry_rows, &table->entry_point_rows);
  }
  // After the entry point's rows: a program's entry point without CFI
  // (ld.so's _start) stays the bottom of the stack.
  if (options.crt_rows && !table->rows.empty()) {
    std::vector<UnwindRow> crt_rows = CrtRows(elf, table->rows);
    if (!crt_rows.empty()) table->rows = Overlay(table->rows, crt_rows, &table->crt_rows);
  }
  if (options.go_rows) {
    EHP_ASSIGN_OR_RETURN(std::vector<UnwindRow> go, GoUnwindRows(elf, options.max_rows));
    if (!go.empty()) table->rows = Overlay(table->rows, go, &table->go_rows);
    if (table->rows.size() > options.max_rows) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: more than %d unwind rows; not building a table this large", elf.path(), options.max_rows));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<UnwindTable> BuildUnwindTable(const ElfFile& elf,
                                             const TableBuildOptions& options) {
  UnwindTable table;
  table.arch = elf.arch();
  if (!options.any_arch && elf.arch() != NativeArch()) {
    return absl::FailedPreconditionError(absl::StrCat(
        elf.path(), ": an ", ArchName(elf.arch()), " ELF file; this ehprof unwinds ",
        ArchName(NativeArch()), " programs"));
  }
  std::vector<UnwindRow> eh_rows, dbg_rows;
  EHP_ASSIGN_OR_RETURN(auto eh, LocateEhFrame(elf));
  if (eh) {
    EHP_ASSIGN_OR_RETURN(eh_rows, FlattenSection(*eh, options.max_rows, &table));
    table.from_eh_frame = !eh_rows.empty();
  }
  // .debug_frame only fills gaps: one that cannot be read (corrupt, or
  // compressed past what a section may expand to) is said, not fatal.
  std::optional<CfiSectionRef> dbg;
  if (absl::StatusOr<std::optional<CfiSectionRef>> d = LocateDebugFrame(elf); d.ok()) {
    dbg = *d;
  } else if (absl::IsResourceExhausted(d.status())) {
    Refuse(&table, std::string(d.status().message()));
  } else {
    Warn(&table, std::string(d.status().message()));
  }
  // Owns the bytes `dbg` points into until its rows are built.
  std::optional<ElfFile> debug_elf;
  if (!dbg && options.find_debug_file) {
    std::vector<std::string> refused;
    std::optional<DebugFile> found = FindSeparateDebugFile(elf, options.debug_root, &refused);
    for (std::string& r : refused) Refuse(&table, std::move(r));
    if (found) {
      const std::string path = found->path;
      auto f = ElfFile::FromFd(std::move(found->fd), path);
      if (f.ok()) {
        debug_elf.emplace(std::move(*f));
        auto d = LocateDebugFrame(*debug_elf);
        if (d.ok()) {
          dbg = *d;
          table.debug_file = path;
        } else if (absl::IsResourceExhausted(d.status())) {
          Refuse(&table, std::string(d.status().message()));
        } else {
          Warn(&table, std::string(d.status().message()));
        }
      } else {
        Warn(&table, std::string(f.status().message()));
      }
    }
  }
  if (dbg) {
    auto rows = FlattenSection(*dbg, options.max_rows, &table);
    if (rows.ok()) {
      dbg_rows = std::move(*rows);
    } else if (!eh) {
      return rows.status();
    } else {
      // .debug_frame only fills gaps: a broken one costs those, not the table.
      Warn(&table, std::string(rows.status().message()));
    }
  }
  table.rows = dbg_rows.empty() ? std::move(eh_rows) : Overlay(eh_rows, dbg_rows, &table.from_debug_frame);
  EHP_RETURN_IF_ERROR(AddSynthesizedRows(elf, options, &table));
  return table;
}

absl::StatusOr<UnwindTable> BuildUnwindTableFromPath(const std::string& path,
                                                     const TableBuildOptions& options) {
  EHP_ASSIGN_OR_RETURN(ElfFile elf, ElfFile::Open(path));
  return BuildUnwindTable(elf, options);
}

UnwindRule LookupPlainRow(const std::vector<UnwindRow>& rows, uint64_t addr) {
  auto it = std::upper_bound(rows.begin(), rows.end(), addr,
                             [](uint64_t a, const UnwindRow& r) { return a < r.addr; });
  if (it == rows.begin()) return UnwindRule::None();
  return std::prev(it)->rule;
}

}  // namespace ehprof
