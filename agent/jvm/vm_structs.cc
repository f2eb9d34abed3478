#include "agent/jvm/vm_structs.h"

#include <cstring>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "agent/jvm/paged_memory.h"

namespace ehprof {

namespace {

// HotSpot's entries are 6 words at most; a stride past this is not one.
constexpr uint64_t kMaxStride = 256;

// The value of one exported variable (a stride, an offset, a table's
// address): data, read from the process.
absl::StatusOr<uint64_t> SymbolValue(PagedMemory& mem, const VmSymbols& symbols, const std::string& name) {
  auto it = symbols.find(name);
  if (it == symbols.end()) return absl::NotFoundError(absl::StrCat("libjvm.so exports no ", name));
  uint64_t v = 0;
  if (!mem.ReadU64(it->second, &v)) return absl::UnavailableError(absl::StrCat(name, " unreadable"));
  return v;
}

// One table: its first entry, its stride and where in an entry each of the
// fields asked for lies (the first is the name that a null ends the table).
struct Table {
  std::string name;
  uint64_t base = 0, stride = 0;
  std::vector<uint64_t> at;
};

struct EntryField {
  const char* symbol;  // after the entry prefix: "TypeNameOffset"
  uint64_t width;      // 8: a pointer or u64; 4: an int32
};

absl::StatusOr<Table> OpenTable(PagedMemory& mem, const VmSymbols& symbols, const std::string& table,
                                const std::string& prefix, std::span<const EntryField> fields) {
  Table t;
  t.name = table;
  auto base = SymbolValue(mem, symbols, table);
  if (!base.ok()) return base.status();
  if (*base == 0) return absl::UnavailableError(absl::StrCat(table, " is null"));
  auto stride = SymbolValue(mem, symbols, prefix + "ArrayStride");
  if (!stride.ok()) return stride.status();
  if (*stride < 8 || *stride > kMaxStride) {
    return absl::InvalidArgumentError(absl::StrCat(table, ": entry stride ", *stride, " out of [8, ", kMaxStride, "]"));
  }
  t.base = *base;
  t.stride = *stride;
  for (const EntryField& f : fields) {
    auto off = SymbolValue(mem, symbols, prefix + f.symbol);
    if (!off.ok()) return off.status();
    if (*off > t.stride - f.width) {
      return absl::InvalidArgumentError(
          absl::StrCat(table, ": ", prefix, f.symbol, " ", *off, " past the entry's ", t.stride, " bytes"));
    }
    t.at.push_back(*off);
  }
  return t;
}

uint64_t U64At(std::span<const uint8_t> e, uint64_t at) {
  uint64_t v = 0;
  std::memcpy(&v, e.data() + at, 8);
  return v;
}

int32_t I32At(std::span<const uint8_t> e, uint64_t at) {
  int32_t v = 0;
  std::memcpy(&v, e.data() + at, 4);
  return v;
}

// Calls each(entry) for the entries before the one whose name (t.at[0])
// is null; an error past kMaxVmEntries or where an entry is unreadable.
absl::Status ForEachEntry(PagedMemory& mem, const Table& t,
                          absl::FunctionRef<absl::Status(std::span<const uint8_t>)> each) {
  std::vector<uint8_t> entry(t.stride);
  for (size_t i = 0;; ++i) {
    if (i >= kMaxVmEntries) {
      return absl::InvalidArgumentError(absl::StrCat(t.name, ": no end within ", kMaxVmEntries, " entries"));
    }
    if (!mem.Read(t.base + i * t.stride, entry.data(), entry.size())) {
      return absl::UnavailableError(absl::StrCat(t.name, ": entry ", i, " unreadable"));
    }
    if (U64At(entry, t.at[0]) == 0) return absl::OkStatus();
    if (absl::Status st = each(entry); !st.ok()) {
      return absl::Status(st.code(), absl::StrCat(t.name, ": entry ", i, ": ", st.message()));
    }
  }
}

// A NUL-terminated string of at most kMaxVmString bytes, read a page at a
// time (a string that ends just before an unmapped page reads).
absl::StatusOr<std::string> ReadString(PagedMemory& mem, uint64_t addr) {
  std::string out;
  char buf[kMaxVmString];
  while (out.size() < kMaxVmString) {
    const uint64_t at = addr + out.size();
    if (at < addr) return absl::InvalidArgumentError("string wraps around the address space");
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kMaxVmString - out.size(), PagedMemory::kPage - at % PagedMemory::kPage));
    if (!mem.Read(at, buf, n)) return absl::UnavailableError(absl::StrCat("string at 0x", absl::Hex(at), " unreadable"));
    const size_t len = strnlen(buf, n);
    out.append(buf, len);
    if (len < n) return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("string at 0x", absl::Hex(addr), " longer than ", kMaxVmString, " bytes"));
}

// A string pointer of an entry; null reads as "" (a field's type string
// may be null: "Symbol::_body").
absl::StatusOr<std::string> OptionalString(PagedMemory& mem, uint64_t addr) {
  if (addr == 0) return std::string();
  return ReadString(mem, addr);
}

}  // namespace

absl::StatusOr<std::string> ReadVmString(const ProcessMemory& mem, uint64_t addr) {
  PagedMemory paged(mem);
  return ReadString(paged, addr);
}

absl::Status VmStructs::ReadFields(PagedMemory& mem, const VmSymbols& symbols) {
  static constexpr EntryField kFields[] = {{"TypeNameOffset", 8},   {"FieldNameOffset", 8},
                                           {"TypeStringOffset", 8}, {"IsStaticOffset", 4},
                                           {"OffsetOffset", 8},     {"AddressOffset", 8}};
  auto t = OpenTable(mem, symbols, "gHotSpotVMStructs", "gHotSpotVMStructEntry", kFields);
  if (!t.ok()) return t.status();
  return ForEachEntry(mem, *t, [&](std::span<const uint8_t> e) -> absl::Status {
    auto type = ReadString(mem, U64At(e, t->at[0]));
    auto name = ReadString(mem, U64At(e, t->at[1]));
    auto type_string = OptionalString(mem, U64At(e, t->at[2]));
    for (const auto* s : {&type, &name, &type_string}) {
      if (!s->ok()) return s->status();
    }
    VmField f{std::move(*type_string), U64At(e, t->at[4]), U64At(e, t->at[5]), I32At(e, t->at[3]) != 0};
    fields_.insert_or_assign(absl::StrCat(*type, "::", *name), std::move(f));
    return absl::OkStatus();
  });
}

absl::Status VmStructs::ReadTypes(PagedMemory& mem, const VmSymbols& symbols) {
  static constexpr EntryField kFields[] = {{"TypeNameOffset", 8}, {"SuperclassNameOffset", 8}, {"SizeOffset", 8}};
  auto t = OpenTable(mem, symbols, "gHotSpotVMTypes", "gHotSpotVMTypeEntry", kFields);
  if (!t.ok()) return t.status();
  return ForEachEntry(mem, *t, [&](std::span<const uint8_t> e) -> absl::Status {
    auto name = ReadString(mem, U64At(e, t->at[0]));
    if (!name.ok()) return name.status();
    auto super = OptionalString(mem, U64At(e, t->at[1]));
    if (!super.ok()) return super.status();
    types_.insert_or_assign(*name, Type{std::move(*super), U64At(e, t->at[2])});
    return absl::OkStatus();
  });
}

absl::Status VmStructs::ReadConstants(PagedMemory& mem, const VmSymbols& symbols, absl::string_view kind) {
  const bool is_long = kind == "Long";
  const EntryField fields[] = {{"NameOffset", 8}, {"ValueOffset", is_long ? 8u : 4u}};
  auto t = OpenTable(mem, symbols, absl::StrCat("gHotSpotVM", kind, "Constants"),
                     absl::StrCat("gHotSpotVM", kind, "ConstantEntry"), fields);
  if (!t.ok()) return t.status();
  return ForEachEntry(mem, *t, [&](std::span<const uint8_t> e) -> absl::Status {
    auto name = ReadString(mem, U64At(e, t->at[0]));
    if (!name.ok()) return name.status();
    const int64_t v = is_long ? static_cast<int64_t>(U64At(e, t->at[1])) : I32At(e, t->at[1]);
    constants_.insert_or_assign(*name, v);
    return absl::OkStatus();
  });
}

absl::StatusOr<VmStructs> VmStructs::Read(const ProcessMemory& process, const VmSymbols& symbols) {
  PagedMemory mem(process);
  VmStructs vm;
  if (absl::Status st = vm.ReadFields(mem, symbols); !st.ok()) return st;
  if (absl::Status st = vm.ReadTypes(mem, symbols); !st.ok()) return st;
  if (absl::Status st = vm.ReadConstants(mem, symbols, "Int"); !st.ok()) return st;
  if (absl::Status st = vm.ReadConstants(mem, symbols, "Long"); !st.ok()) return st;
  return vm;
}

const VmField* VmStructs::Field(absl::string_view type, absl::string_view field) const {
  std::string t(type);
  // The superclass chain is the JVM's: bounded, in case it loops.
  for (int depth = 0; depth < 16 && !t.empty(); ++depth) {
    auto it = fields_.find(absl::StrCat(t, "::", field));
    if (it != fields_.end()) return &it->second;
    auto ty = types_.find(t);
    if (ty == types_.end()) return nullptr;
    t = ty->second.superclass;
  }
  return nullptr;
}

std::optional<uint64_t> VmStructs::Size(absl::string_view type) const {
  auto it = types_.find(std::string(type));
  if (it == types_.end()) return std::nullopt;
  return it->second.size;
}

std::optional<int64_t> VmStructs::Constant(absl::string_view name) const {
  auto it = constants_.find(std::string(name));
  if (it == constants_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ehprof
