#include "symbolizer/dwarf_symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/scoped_handle.h"
#include "base/untrusted_file.h"
#include "symbolizer/safe_debuginfo.h"

namespace ehprof {
namespace {

using DwflPtr = ScopedHandle<Dwfl, dwfl_end>;

// dwarf_getscopes / dwarf_getscopes_die return malloc'ed arrays.
using DieArray = MallocPtr<Dwarf_Die>;

// An offline session (files, not a live process), as `eu-addr2line -e`
// sets up. debuginfo_path nullptr: libdwfl's default ":.debug:/usr/lib/debug",
// of which the build-id search (all FindDebuginfoSafely lets it do) uses
// only the absolute /usr/lib/debug.
const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = FindDebuginfoSafely,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

absl::Status DwflError(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what, ": ", dwfl_errmsg(-1)));
}

// Strings from a corrupt .debug_str / .debug_line_str are arbitrary bytes;
// they must not reach the profile (an SVG with invalid UTF-8 does not
// load). Names and paths are text: no control characters, and none of the
// bytes UTF-8 never uses.
bool IsPlausibleText(const char* s) {
  if (s == nullptr || s[0] == '\0') return false;
  size_t n = 0;
  for (; s[n] != '\0'; ++n) {
    auto c = static_cast<unsigned char>(s[n]);
    if (c < 0x20 || c == 0x7f || c == 0xc0 || c == 0xc1 || c >= 0xf5) return false;
    if (n >= 65536) return false;
  }
  return true;
}

struct Position {
  std::string file;  // empty when unknown
  uint32_t line = 0;
};

// Relative names are joined to the compilation directory, as eu-addr2line
// does by default (-A): Debian's packages are built with relative names.
std::string SourcePath(const char* file, const char* comp_dir) {
  if (!IsPlausibleText(file)) return "";
  if (file[0] == '/' || !IsPlausibleText(comp_dir)) return file;
  return absl::StrCat(std::string(comp_dir), "/", std::string(file));
}

Position LineAt(Dwfl_Module* mod, Dwarf_Addr addr) {
  Dwfl_Line* line = dwfl_module_getsrc(mod, addr);
  int lineno = 0;
  const char* file =
      line ? dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr) : nullptr;
  if (file == nullptr) return {};
  return {SourcePath(file, dwfl_line_comp_dir(line)),
          lineno > 0 ? static_cast<uint32_t>(lineno) : 0};
}

// Where `inlined` (a DW_TAG_inlined_subroutine) was called from: the
// position inside the frame that contains it. Missing or out-of-range
// attributes (corrupt DWARF) leave the fields unknown.
Position CallSite(Dwarf_Die* inlined, Dwarf_Files* files, const char* comp_dir) {
  Position pos;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (files != nullptr &&
      dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0) {
    pos.file = SourcePath(dwarf_filesrc(files, value, nullptr, nullptr), comp_dir);
  }
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0 &&
      value <= UINT32_MAX) {
    pos.line = static_cast<uint32_t>(value);
  }
  return pos;
}

// The mangled name when there is one, so that demangling stays a separate,
// optional step (symbolizer/demangle.h). _integrate follows
// DW_AT_abstract_origin / DW_AT_specification: an inline expansion or an
// out-of-line copy carries its name only on the abstract definition.
const char* DieName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name}) {
    const char* name = dwarf_formstring(dwarf_attr_integrate(die, at, &attr));
    if (IsPlausibleText(name)) return name;
  }
  return nullptr;
}

// The DWARF frames at `addr` (a Dwfl address) innermost first, ending at
// the first DW_TAG_subprogram; `outer` is the position inside whatever
// contains the last frame (only meaningful when that frame is inlined and
// no subprogram was found above it).
struct Chain {
  std::vector<Symbolizer::SourceFrame> frames;
  Position outer;
};
Chain DwarfChain(Dwfl_Module* mod, Dwarf_Addr addr, bool with_lines) {
  Chain out;
  if (with_lines) out.outer = LineAt(mod, addr);
  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(mod, addr, &cu_bias);
  if (cudie == nullptr) return out;
  Dwarf_Die* raw = nullptr;
  int n = dwarf_getscopes(cudie, addr - cu_bias, &raw);
  DieArray scopes(raw);
  if (n <= 0) return out;
  // Only the innermost scope of dwarf_getscopes is used: past an inline
  // expansion it continues through the inlined function's abstract
  // definition, not through the call sites. The DIE tree's parents of the
  // innermost scope (dwarf_getscopes_die) are the concrete chain, as
  // `eu-addr2line -i` walks it.
  raw = nullptr;
  int depth = dwarf_getscopes_die(&scopes.get()[0], &raw);
  DieArray chain(raw);
  Dwarf_Files* files = nullptr;
  if (with_lines && dwarf_getsrcfiles(cudie, &files, nullptr) != 0) files = nullptr;
  Dwarf_Attribute comp_dir_attr;
  const char* comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &comp_dir_attr));
  for (int i = 0; i < depth; ++i) {
    Dwarf_Die* die = &chain.get()[i];
    int tag = dwarf_tag(die);
    // Lexical blocks and the CU are not frames.
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
    const char* name = DieName(die);
    bool inlined = tag == DW_TAG_inlined_subroutine;
    out.frames.push_back({name ? name : "", out.outer.file, out.outer.line, inlined});
    if (!inlined) break;
    if (with_lines) out.outer = CallSite(die, files, comp_dir);
  }
  return out;
}

std::optional<std::string> ElfSymbolName(Dwfl_Module* mod, Dwarf_Addr addr) {
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, addr, &offset, &sym, nullptr, nullptr, nullptr);
  if (!IsPlausibleText(name)) return std::nullopt;
  return std::string(name);
}

}  // namespace

struct DwarfSymbolizer::Module {
  // libdw fills its caches (CUs, abbreviations, line tables) lazily and
  // without locks: one caller at a time per Dwfl.
  Mutex mu;
  bool loaded ABSL_GUARDED_BY(mu) = false;
  DwflPtr dwfl ABSL_GUARDED_BY(mu);  // kept only when the file has DWARF
  Dwfl_Module* mod ABSL_GUARDED_BY(mu) = nullptr;
  // Dwfl address = ELF virtual address + bias (see Load).
  GElf_Addr bias ABSL_GUARDED_BY(mu) = 0;
  bool has_dwarf ABSL_GUARDED_BY(mu) = false;
  // Its compressed DWARF (and its debug file's), expanded.
  uint64_t expanded ABSL_GUARDED_BY(mu) = 0;

  // `cap`: the expanded compressed DWARF it may take (0: any); `cap_said`
  // names that limit in the messages.
  absl::Status Load(const std::string& path, uint64_t cap, const std::string& cap_said)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

absl::Status DwarfSymbolizer::Module::Load(const std::string& path, uint64_t cap,
                                           const std::string& cap_said) {
  // Opened by us (never blocking, a regular file of a sane size); libdwfl
  // then opens it through our fd's /proc/self/fd link, which reaches this
  // very inode whatever happens to `path` meanwhile.
  absl::StatusOr<UniqueFd> file = OpenUntrustedFile(path, LinkPolicy::kFollow);
  if (!file.ok()) return file.status();
  const std::string fd_path = absl::StrCat("/proc/self/fd/", file->get());
  DwflPtr session(dwfl_begin(&kOfflineCallbacks));
  if (!session) return DwflError(path, "dwfl_begin");
  dwfl_report_begin(session.get());
  Dwfl_Module* m = dwfl_report_offline(session.get(), path.c_str(), fd_path.c_str(), -1);
  if (m == nullptr) return DwflError(path, "dwfl_report_offline");
  if (dwfl_report_end(session.get(), nullptr, nullptr) != 0) {
    return DwflError(path, "dwfl_report_end");
  }
  // An offline session lays ET_DYN files (PIEs, shared libraries) out from
  // an arbitrary free address (libdwfl starts at 0x10000), not at their
  // link-time addresses; ET_EXEC files stay where they are linked.
  // `eu-addr2line -e` avoids this by resetting a private field; we use the
  // bias libdwfl reports instead.
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(m, &bias);
  if (elf == nullptr) return DwflError(path, "dwfl_module_getelf");
  if (elf_kind(elf) != ELF_K_ELF) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ELF file"));
  }
  const uint64_t own = ExpandedDwarfBytes(elf);
  if (cap != 0 && own > cap) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": DWARF not read: its compressed debug sections would expand to ", own >> 20,
        " MB, over ", cap_said, "; its symbol tables name its functions (no source lines)"));
  }
  // The debug file takes what the file's own sections leave (at least a
  // byte: 0 would mean no cap).
  DebugSearch search{path, file->get(), cap == 0 ? 0 : std::max<uint64_t>(cap - own, 1), {}};
  void** userdata = nullptr;
  dwfl_module_info(m, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (userdata != nullptr) *userdata = &search;
  // This finds the separate debug file (and asks debuginfod) when the file
  // has no DWARF of its own; nullptr means none was found or it was unusable.
  Dwarf_Addr dwarf_bias = 0;
  const bool found = dwfl_module_getdwarf(m, &dwarf_bias) != nullptr;
  if (userdata != nullptr) *userdata = nullptr;
  if (!search.skipped.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": DWARF not read: ", search.skipped, ", over ", cap_said,
        "; its symbol tables name its functions (no source lines)"));
  }
  if (!found) return absl::OkStatus();
  expanded = own + search.expanded;
  dwfl = std::move(session);
  mod = m;
  this->bias = bias;
  has_dwarf = true;
  return absl::OkStatus();
}

// The debuginfod bounds are set by main() before any thread starts
// (BoundDebuginfodTimeout): this may run on a worker thread, where setenv
// would race getenv in the others.
DwarfSymbolizer::DwarfSymbolizer(Warnings* warnings, std::shared_ptr<SymbolCache> symbols)
    : symbols_(symbols ? std::move(symbols) : std::make_shared<SymbolCache>(warnings)),
      go_(warnings),
      warnings_(warnings) {}

DwarfSymbolizer::~DwarfSymbolizer() = default;

std::shared_ptr<DwarfSymbolizer::Module> DwarfSymbolizer::Get(const std::string& path) {
  std::shared_ptr<Module> module;
  {
    MutexLock lock(mu_);
    std::shared_ptr<Module>& slot = modules_[path];
    if (!slot) slot = std::make_shared<Module>();
    module = slot;
  }
  // Loaded under the file's own mutex, not mu_: a slow file (a large debug
  // file, a debuginfod download) does not stall lookups in other files.
  MutexLock lock(module->mu);
  if (!module->loaded) {
    module->loaded = true;
    // What this file may take: the per-file cap, or what is left of the
    // total when that is less.
    uint64_t cap = max_expanded_dwarf_;
    std::string cap_said = absl::StrCat("the ", cap >> 20, " MB a file may take");
    if (max_expanded_dwarf_total_ != 0) {
      const uint64_t open = expanded_open_.load();
      const uint64_t left = open < max_expanded_dwarf_total_ ? max_expanded_dwarf_total_ - open : 0;
      if (cap == 0 || left < cap) {
        cap = left == 0 ? 1 : left;  // 0 would mean no cap
        cap_said = absl::StrCat("the ", left >> 20, " MB left of the ", max_expanded_dwarf_total_ >> 20,
                                " MB all files may take at once");
      }
    }
    if (absl::Status status = module->Load(path, cap, cap_said); !status.ok()) {
      warnings_->Add(std::string(status.message()));
    }
    if (module->has_dwarf) expanded_open_ += module->expanded;
  }
  return module;
}

std::vector<Symbolizer::SourceFrame> DwarfSymbolizer::Lookup(const std::string& path,
                                                             uint64_t elf_vaddr, bool with_lines) {
  if (std::vector<SourceFrame> go = go_.Frames(path, elf_vaddr); !go.empty()) return go;
  std::shared_ptr<Module> module = Get(path);
  Chain chain;
  std::optional<std::string> symbol;
  {
    MutexLock lock(module->mu);
    if (module->has_dwarf) {
      Dwarf_Addr addr = elf_vaddr + module->bias;
      chain = DwarfChain(module->mod, addr, with_lines);
      if (chain.frames.empty() || chain.frames.back().inlined ||
          chain.frames.back().function.empty()) {
        symbol = ElfSymbolName(module->mod, addr);
      }
    }
  }
  std::vector<SourceFrame>& frames = chain.frames;
  bool has_function = !frames.empty() && !frames.back().inlined;
  if (has_function && !frames.back().function.empty()) return std::move(frames);
  // No DWARF subprogram (no DWARF at all; code DWARF does not describe, such
  // as PLT stubs or hand-written assembly; an unnamed or corrupt DIE): the
  // symbol tables name the function. SymbolCache (outside module->mu: it has
  // its own locks) also knows MiniDebugInfo and synthesizes foo@plt names.
  if (!symbol) symbol = symbols_->Symbolize(path, elf_vaddr);
  if (has_function) frames.pop_back();  // unnamed; replaced below
  if (!symbol) {
    // Inline frames without their function are still worth showing.
    return std::move(frames);
  }
  frames.push_back({*std::move(symbol), chain.outer.file, chain.outer.line, false});
  return std::move(frames);
}

std::optional<std::string> DwarfSymbolizer::FunctionName(const std::string& path,
                                                         uint64_t elf_vaddr) {
  std::vector<SourceFrame> frames = Lookup(path, elf_vaddr, /*with_lines=*/false);
  if (frames.empty() || frames.back().inlined) return std::nullopt;
  return std::move(frames.back().function);
}

std::vector<Symbolizer::SourceFrame> DwarfSymbolizer::Frames(const std::string& path,
                                                             uint64_t elf_vaddr) {
  return Lookup(path, elf_vaddr, /*with_lines=*/true);
}

bool DwarfSymbolizer::HasDwarf(const std::string& path) {
  std::shared_ptr<Module> module = Get(path);
  MutexLock lock(module->mu);
  return module->has_dwarf;
}

void DwarfSymbolizer::CloseSession(const std::string& path) {
  std::shared_ptr<Module> module;
  {
    MutexLock lock(mu_);
    auto it = modules_.find(path);
    if (it == modules_.end()) return;
    module = it->second;
  }
  MutexLock lock(module->mu);
  if (!module->has_dwarf) return;
  expanded_open_ -= module->expanded;
  module->expanded = 0;
  module->dwfl.reset();
  module->mod = nullptr;
  module->has_dwarf = false;
  module->loaded = false;
}

void DwarfSymbolizer::Evict(const std::string& path) {
  CloseSession(path);  // its DWARF leaves the total now, not when the last user lets go
  {
    MutexLock lock(mu_);
    modules_.erase(path);
  }
  symbols_->Evict(path);
}

std::optional<uint64_t> DwarfSymbolizer::FunctionStart(const std::string& path,
                                                       uint64_t elf_vaddr) {
  if (auto start = symbols_->FunctionStart(path, elf_vaddr)) return start;
  return go_.FunctionStart(path, elf_vaddr);
}

}  // namespace ehprof
