#include "agent/python/python_binary.h"

#include <elf.h>

#include <cstring>
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/python/debug_offsets.h"
#include "agent/python/python_offsets.h"
#include "base/parse_number.h"
#include "unwind_tables/cfi_functions.h"

namespace ehprof {

namespace {

// A minor version is a byte of Py_Version.
constexpr int kMaxMinorInName = 255;

struct Sym {
  uint64_t addr = 0, size = 0;
};

// The symbols PythonBinary needs, from .symtab (unstripped builds: the
// .cold part is a local symbol) and .dynsym.
struct Symbols {
  std::optional<Sym> eval, eval_cold, runtime, code_type, py_version;
  bool has_symtab = false;
};

void ReadSymbols(const ElfFile& elf, std::string_view table, std::string_view strings, Symbols* out) {
  auto syms = elf.Section(table);
  auto strs = elf.Section(strings);
  if (!syms.ok() || !*syms || !strs.ok() || !*strs) return;
  std::span<const uint8_t> s = (*syms)->data, str = (*strs)->data;
  if (table == ".symtab") out->has_symtab = true;
  for (size_t at = 0; at + sizeof(Elf64_Sym) <= s.size(); at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, s.data() + at, sizeof(sym));
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || sym.st_name >= str.size()) continue;
    const char* p = reinterpret_cast<const char*>(str.data()) + sym.st_name;
    std::string_view name(p, strnlen(p, str.size() - sym.st_name));
    Sym v{sym.st_value, sym.st_size};
    if (name == "_PyEval_EvalFrameDefault") out->eval = v;
    else if (name == "_PyEval_EvalFrameDefault.cold") out->eval_cold = v;
    else if (name == "_PyRuntime") out->runtime = v;
    else if (name == "PyCode_Type") out->code_type = v;
    else if (name == "Py_Version") out->py_version = v;
  }
}

// A stripped build names only the exported function: its .cold part is
// the FDE most of the function's jumps out of itself land in (jcc rel32
// and jmp rel32 opcodes, counted over the bytes without decoding: stray
// matches spread over many FDEs, the real target collects them).
std::optional<AddrRange> FindColdPart(const ElfFile& elf, AddrRange hot) {
  auto fdes = CfiFunctions::FromElf(elf);
  auto code = elf.BytesAtVaddr(hot.begin, hot.end - hot.begin);
  if (!fdes.ok() || !code) return std::nullopt;
  std::map<uint64_t, std::pair<AddrRange, int>> votes;
  const std::span<const uint8_t> b = *code;
  for (size_t i = 0; i + 6 <= b.size(); ++i) {
    size_t len = 0;
    if (b[i] == 0x0f && (b[i + 1] & 0xf0) == 0x80) len = 6;
    else if (b[i] == 0xe9) len = 5;
    if (!len) continue;
    int32_t rel;
    std::memcpy(&rel, b.data() + i + len - 4, 4);
    const uint64_t target = hot.begin + i + len + static_cast<int64_t>(rel);
    if (target >= hot.begin && target < hot.end) continue;
    auto f = fdes->Find(target);
    if (!f || f->begin == hot.begin) continue;
    auto& v = votes[f->begin];
    v.first = {f->begin, f->end};
    ++v.second;
  }
  std::optional<AddrRange> best;
  int best_votes = 0, total = 0;
  for (auto& [begin, v] : votes) {
    total += v.second;
    if (v.second > best_votes) best_votes = v.second, best = v.first;
  }
  // Most out-of-function jumps of the eval loop go to its cold part; far
  // fewer are stray bytes or tail jumps.
  if (best_votes < 8 || best_votes * 2 < total) return std::nullopt;
  return best;
}

}  // namespace

int MinorFromFileName(const std::string& path) {
  // The name is the user's: "python3.99999999999" is a name too.
  std::string_view base(path);
  base.remove_prefix(base.rfind('/') + 1);
  constexpr std::string_view kPrefix = "python3.";
  for (size_t at = base.find(kPrefix); at != std::string_view::npos; at = base.find(kPrefix, at + 1)) {
    std::string_view rest = base.substr(at + kPrefix.size());
    if (rest.empty() || rest[0] < '0' || rest[0] > '9') continue;
    const std::optional<int> minor = ConsumeDecimal<int>(&rest);
    return minor && *minor <= kMaxMinorInName ? *minor : 0;
  }
  return 0;
}

absl::StatusOr<std::optional<PythonBinary>> InspectPythonBinary(const ElfFile& elf,
                                                                const std::string& path) {
  Symbols syms;
  ReadSymbols(elf, ".dynsym", ".dynstr", &syms);
  ReadSymbols(elf, ".symtab", ".strtab", &syms);
  if (!syms.eval || !syms.runtime) return std::nullopt;
  PythonBinary out;
  out.path = path;
  auto fail = [&](std::string why) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": a Python ehprof cannot read: ", why));
  };
  if (!syms.code_type) return fail("no PyCode_Type symbol");
  if (syms.py_version) {
    auto bytes = elf.BytesAtVaddr(syms.py_version->addr, 4);
    if (!bytes) return fail("Py_Version lies outside the file's segments");
    std::memcpy(&out.py_version_value, bytes->data(), 4);
    out.major = out.py_version_value >> 24;
    out.minor = (out.py_version_value >> 16) & 0xff;
    out.py_version = syms.py_version->addr;
  } else {
    // Py_Version is exported since 3.11: older ones say it by their name.
    out.major = 3;
    out.minor = MinorFromFileName(path);
    if (out.minor == 0) return fail("no Py_Version and no python3.X in its file name");
    if (out.minor >= 11) return fail("no Py_Version, which 3.11 and later have");
  }
  if (out.major != 3 || out.minor < 10 || out.minor > 14) {
    return fail(absl::StrFormat("version %d.%d (ehprof reads 3.10 to 3.14)", out.major, out.minor));
  }
  if (out.minor >= 13) {
    auto bytes = elf.BytesAtVaddr(syms.runtime->addr, kDebugOffsetsSize);
    if (!bytes) return fail("_PyRuntime's _Py_DebugOffsets are not in the file");
    auto layout = LayoutFromDebugOffsets(*bytes, out.py_version_value);
    if (!layout.ok()) return fail(std::string(layout.status().message()));
    out.layout = *layout;
  } else {
    out.layout = *MeasuredLayout(out.major, out.minor);
  }
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD) out.loads.push_back(seg);
  }
  out.ascii_header = out.minor >= 12 ? 40 : 48;
  out.runtime = syms.runtime->addr;
  out.code_type = syms.code_type->addr;
  out.layout.interp_head += out.runtime;
  if (syms.eval->size == 0) return fail("_PyEval_EvalFrameDefault has no size");
  const AddrRange hot{syms.eval->addr, syms.eval->addr + syms.eval->size};
  out.eval.push_back(hot);
  if (syms.eval_cold && syms.eval_cold->size) {
    out.eval.push_back({syms.eval_cold->addr, syms.eval_cold->addr + syms.eval_cold->size});
    out.eval_cold_found = true;
  } else if (!syms.has_symtab) {
    // Stripped: look for it. (With a symbol table, no .cold symbol means
    // the compiler made none.)
    auto cold = FindColdPart(elf, hot);
    if (!cold) return out;
    out.eval.push_back(*cold);
    out.eval_cold_found = true;
  }
  return out;
}

}  // namespace ehprof
