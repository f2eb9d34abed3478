#include "agent/python/python_code.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

namespace {

constexpr size_t kMaxString = 4096;
constexpr size_t kMaxLineTable = 1 << 20;
constexpr uint32_t kTypeMembers = 240;   // PyTypeObject.tp_members (3.8-3.13)
constexpr uint32_t kTypeBasicSize = 32;  // PyTypeObject.tp_basicsize
constexpr size_t kMemberDefSize = 40;    // PyMemberDef: name, type, offset, flags, doc
constexpr size_t kMaxMembers = 64;

uint64_t U64(const std::vector<uint8_t>& b, size_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}

bool ReadCString(const ProcessMemory& mem, uint64_t addr, std::string* out) {
  char buf[64];
  if (!mem.Read(addr, buf, sizeof(buf))) {
    // Near the end of a mapping: byte by byte.
    out->clear();
    for (size_t i = 0; i < sizeof(buf); ++i) {
      char c;
      if (!mem.Read(addr + i, &c, 1)) return false;
      if (!c) return true;
      out->push_back(c);
    }
    return true;
  }
  out->assign(buf, strnlen(buf, sizeof(buf)));
  return true;
}

// A str object: compact (its characters follow the header), of kind 1, 2
// or 4 bytes a character.
absl::StatusOr<std::string> ReadUnicode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr) {
  uint8_t h[48];
  if (!addr || !mem.Read(addr, h, sizeof(h))) return absl::UnavailableError("str object unreadable");
  int64_t length;
  uint32_t state;
  std::memcpy(&length, h + 16, 8);
  std::memcpy(&state, h + 32, 4);
  const uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || length < 0 ||
      static_cast<size_t>(length) > kMaxString) {
    return absl::InvalidArgumentError("not a compact str");
  }
  // PyCompactUnicodeObject adds utf8_length and utf8 (and wstr_length
  // before 3.12) to PyASCIIObject.
  const uint64_t data =
      addr + f.ascii_header + (ascii ? 0 : (f.minor >= 12 ? 16 : 24));
  std::vector<uint8_t> chars(static_cast<size_t>(length) * kind);
  if (!chars.empty() && !mem.Read(data, chars.data(), chars.size())) {
    return absl::UnavailableError("str characters unreadable");
  }
  std::string out;
  for (size_t i = 0; i < static_cast<size_t>(length); ++i) {
    uint32_t c = 0;
    std::memcpy(&c, chars.data() + i * kind, kind);
    AppendUtf8(c, &out);
  }
  return out;
}

// A bytes object's contents (ob_size at 16, ob_sval at 32).
absl::StatusOr<std::vector<uint8_t>> ReadBytes(const ProcessMemory& mem, uint64_t addr) {
  int64_t size;
  if (!addr || !mem.Read(addr + 16, &size, 8)) return absl::UnavailableError("bytes unreadable");
  if (size < 0 || static_cast<size_t>(size) > kMaxLineTable) {
    return absl::InvalidArgumentError("bytes object of a bad size");
  }
  std::vector<uint8_t> out(static_cast<size_t>(size));
  if (!out.empty() && !mem.Read(addr + 32, out.data(), out.size())) {
    return absl::UnavailableError("bytes contents unreadable");
  }
  return out;
}

}  // namespace

uint32_t CodeFields::header_size() const {
  return std::max({filename, name, qualname, linetable, firstlineno}) + 8;
}

absl::StatusOr<CodeFields> ReadCodeFields(const ProcessMemory& mem, uint64_t code_type, int minor,
                                          uint32_t ascii_header) {
  CodeFields f;
  f.code_type = code_type;
  f.minor = minor;
  f.ascii_header = ascii_header;
  uint64_t members = 0, basic = 0;
  if (!mem.ReadU64(code_type + kTypeMembers, &members) ||
      !mem.ReadU64(code_type + kTypeBasicSize, &basic) || !members) {
    return absl::UnavailableError("PyCode_Type unreadable");
  }
  std::vector<uint8_t> defs(kMemberDefSize * kMaxMembers);
  if (!mem.Read(members, defs.data(), defs.size())) return absl::UnavailableError("tp_members unreadable");
  int found = 0;
  for (size_t i = 0; i < kMaxMembers; ++i) {
    const uint64_t name_ptr = U64(defs, i * kMemberDefSize);
    if (!name_ptr) break;
    const uint64_t offset = U64(defs, i * kMemberDefSize + 16);
    std::string name;
    if (!ReadCString(mem, name_ptr, &name) || offset > 4096) continue;
    const auto off = static_cast<uint32_t>(offset);
    if (name == "co_filename") f.filename = off, found |= 1;
    else if (name == "co_name") f.name = off, found |= 2;
    else if (name == "co_qualname") f.qualname = off, found |= 4;
    else if (name == "co_firstlineno") f.firstlineno = off, found |= 8;
    else if (name == "co_linetable") f.linetable = off, found |= 16;
  }
  if (minor < 11) f.qualname = f.name, found |= 4;  // 3.10 has no co_qualname
  if (found != 31) {
    return absl::NotFoundError(absl::StrCat("PyCode_Type.tp_members lacks code fields (found mask ", found, ")"));
  }
  if (basic > 4096) return absl::InvalidArgumentError("PyCode_Type.tp_basicsize too large");
  f.code_start = static_cast<uint32_t>(basic);
  return f;
}

namespace {

struct Header {
  uint64_t type = 0, filename = 0, name = 0, linetable = 0;
  int32_t first_line = 0;
};

bool ReadHeader(const ProcessMemory& mem, const CodeFields& f, uint64_t addr, Header* h) {
  std::vector<uint8_t> b(f.header_size());
  if (!addr || !mem.Read(addr, b.data(), b.size())) return false;
  h->type = U64(b, 8);
  h->filename = U64(b, f.filename);
  h->name = U64(b, f.qualname);
  h->linetable = U64(b, f.linetable);
  std::memcpy(&h->first_line, b.data() + f.firstlineno, 4);
  return h->type == f.code_type;
}

}  // namespace

absl::StatusOr<PythonCode> ReadCode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr) {
  Header h;
  if (!ReadHeader(mem, f, addr, &h)) return absl::UnavailableError("not a code object");
  PythonCode c;
  c.filename_ptr = h.filename;
  c.name_ptr = h.name;
  c.linetable_ptr = h.linetable;
  c.first_line = h.first_line;
  auto name = ReadUnicode(mem, f, h.name);
  if (!name.ok()) return name.status();
  auto file = ReadUnicode(mem, f, h.filename);
  if (!file.ok()) return file.status();
  c.qualname = std::move(*name);
  c.file = std::move(*file);
  auto table = ReadBytes(mem, h.linetable);
  if (table.ok()) {
    c.lines = f.minor >= 11 ? DecodePep657(*table, h.first_line) : DecodePep626(*table, h.first_line);
  }
  // The object must not have changed while it was read.
  if (!SameCode(mem, f, addr, c)) return absl::UnavailableError("code object changed while read");
  return c;
}

bool SameCode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr, const PythonCode& known) {
  return CheckCode(mem, f, addr, known) == CodeCheck::kSame;
}

CodeCheck CheckCode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr, const PythonCode& known) {
  std::vector<uint8_t> b(f.header_size());
  if (!mem.Read(addr, b.data(), b.size())) return CodeCheck::kUnreadable;
  Header h;
  return ReadHeader(mem, f, addr, &h) && h.filename == known.filename_ptr && h.name == known.name_ptr &&
                 h.linetable == known.linetable_ptr && h.first_line == known.first_line
             ? CodeCheck::kSame
             : CodeCheck::kChanged;
}

int64_t InstructionIndex(const CodeFields& f, uint32_t offset) {
  if (offset == EHP_PY_OFFSET_UNKNOWN) return -1;
  if (f.minor < 11) return offset;
  if (offset < f.code_start) return -1;
  return (offset - f.code_start) / 2;
}

}  // namespace ehprof
