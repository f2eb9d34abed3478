#include "agent/jvm/jvm_method.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

// A ConstMethod (its bytecodes, tables and annotations) is well under this.
constexpr uint64_t kMaxConstMethodBytes = 1 << 20;
constexpr uint32_t kMaxPoolLength = 65536;

template <typename T>
T At(const std::vector<uint8_t>& b, uint32_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

absl::Status Bad(uint64_t method, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("Method* 0x", absl::Hex(method), ": ", what));
}

bool ReadBlock(const ProcessMemory& mem, uint64_t addr, uint32_t size, std::vector<uint8_t>* out) {
  out->resize(size);
  return addr && (addr & 7) == 0 && mem.Read(addr, out->data(), size);
}

// The Symbol at addr: u2 length, then its bytes (modified UTF-8; never a
// control byte in a name the JVM would have accepted).
absl::StatusOr<std::string> ReadSymbol(const ProcessMemory& mem, const MethodFields& f, uint64_t addr) {
  uint16_t len = 0;
  if (!addr || (addr & 7) != 0 || !mem.Read(addr + f.symbol_length, &len, sizeof(len))) {
    return absl::UnavailableError("Symbol unreadable");
  }
  if (len == 0 || len > kMaxJvmSymbol) return absl::InvalidArgumentError(absl::StrCat("Symbol of ", len, " bytes"));
  std::string s(len, '\0');
  if (!mem.Read(addr + f.symbol_body, s.data(), len)) return absl::UnavailableError("Symbol bytes unreadable");
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    return absl::InvalidArgumentError("Symbol with a control byte");
  }
  return s;
}

// The Symbol in constant pool slot index (a Symbol* with its low bit a tag).
absl::StatusOr<std::string> PoolSymbol(const ProcessMemory& mem, const MethodFields& f, uint64_t pool,
                                       int32_t pool_length, uint16_t index) {
  if (index == 0 || index >= pool_length) return absl::InvalidArgumentError("constant pool index out of range");
  uint64_t sym = 0;
  if (!mem.ReadU64(pool + f.cp_sizeof + 8 * uint64_t{index}, &sym)) {
    return absl::UnavailableError("constant pool slot unreadable");
  }
  return ReadSymbol(mem, f, sym & ~uint64_t{1});
}

bool PlausibleMethodName(const std::string& n) {
  if (n == "<init>" || n == "<clinit>") return true;
  return n.find_first_of(".;[/<>") == std::string::npos;
}

// Whether the class's method array (Array<Method*>) holds method.
bool ClassHolds(const ProcessMemory& mem, const MethodFields& f, uint64_t methods, uint64_t method) {
  int32_t n = 0;
  if (!methods || !mem.Read(methods + f.array_length, &n, sizeof(n)) || n <= 0 ||
      static_cast<uint32_t>(n) > kMaxClassMethods) {
    return false;
  }
  std::vector<uint64_t> all(static_cast<size_t>(n));
  return mem.Read(methods + f.array_data, all.data(), all.size() * 8) &&
         std::find(all.begin(), all.end(), method) != all.end();
}

// The line table after the bytecodes, within the ConstMethod's own size.
std::vector<JvmLine> ReadLines(const ProcessMemory& mem, const MethodFields& f, uint64_t cm, uint64_t cm_bytes,
                               uint16_t code_size) {
  const uint64_t start = f.cm_sizeof + uint64_t{code_size};
  if (cm_bytes <= start) return {};
  std::vector<uint8_t> table(static_cast<size_t>(cm_bytes - start));
  if (!mem.Read(cm + start, table.data(), table.size())) return {};
  auto lines = DecodeJvmLineTable(table, f.unsigned5_x);
  return lines.ok() ? std::move(*lines) : std::vector<JvmLine>{};
}

struct ConstMethodHeader {
  uint64_t pool = 0, bytes = 0;
  uint16_t code_size = 0, name_index = 0, signature_index = 0;
  bool has_lines = false;
};

absl::StatusOr<ConstMethodHeader> ReadConstMethod(const ProcessMemory& mem, const MethodFields& f, uint64_t method,
                                                  uint64_t cm) {
  std::vector<uint8_t> b;
  if (!ReadBlock(mem, cm, f.cm_sizeof, &b)) return Bad(method, "ConstMethod unreadable");
  if (f.cm_method >= 0 && At<uint64_t>(b, static_cast<uint32_t>(f.cm_method)) != method) {
    return Bad(method, "its ConstMethod's method is another");
  }
  ConstMethodHeader h;
  h.pool = At<uint64_t>(b, f.cm_constants);
  h.code_size = At<uint16_t>(b, f.cm_code_size);
  h.name_index = At<uint16_t>(b, f.cm_name_index);
  h.signature_index = At<uint16_t>(b, f.cm_signature_index);
  const uint64_t flags = f.cm_flags_width == 4 ? At<uint32_t>(b, f.cm_flags) : At<uint16_t>(b, f.cm_flags);
  h.has_lines = (flags & f.cm_has_line_table) != 0;
  h.bytes = uint64_t{At<uint32_t>(b, f.cm_size)} * 8;
  if (h.bytes < f.cm_sizeof + uint64_t{h.code_size} || h.bytes > kMaxConstMethodBytes) {
    return Bad(method, absl::StrCat("ConstMethod of ", h.bytes, " bytes"));
  }
  return h;
}

}  // namespace

absl::StatusOr<JvmMethod> ReadJvmMethod(const ProcessMemory& mem, const MethodFields& f, uint64_t method) {
  JvmMethod out;
  if (!method || (method & 7) != 0 || !mem.ReadU64(method + f.method_const, &out.const_method) ||
      !out.const_method || (out.const_method & 7) != 0) {
    return Bad(method, "no ConstMethod");
  }
  auto cm = ReadConstMethod(mem, f, method, out.const_method);
  if (!cm.ok()) return cm.status();
  std::vector<uint8_t> pool;
  if (!ReadBlock(mem, cm->pool, f.cp_sizeof, &pool)) return Bad(method, "ConstantPool unreadable");
  const uint64_t holder = At<uint64_t>(pool, f.cp_holder);
  const int32_t pool_length = At<int32_t>(pool, f.cp_length);
  uint64_t klass_name = 0, klass_pool = 0, methods = 0;
  if (pool_length <= 0 || static_cast<uint32_t>(pool_length) > kMaxPoolLength || !holder || (holder & 7) != 0 ||
      !mem.ReadU64(holder + f.klass_name, &klass_name) || !mem.ReadU64(holder + f.klass_constants, &klass_pool) ||
      !mem.ReadU64(holder + f.klass_methods, &methods)) {
    return Bad(method, "no class");
  }
  if (klass_pool != cm->pool || !ClassHolds(mem, f, methods, method)) return Bad(method, "not its class's method");
  auto klass = ReadSymbol(mem, f, klass_name);
  auto name = PoolSymbol(mem, f, cm->pool, pool_length, cm->name_index);
  auto signature = PoolSymbol(mem, f, cm->pool, pool_length, cm->signature_index);
  if (!klass.ok() || !name.ok() || !signature.ok() || !PlausibleMethodName(*name) || (*signature)[0] != '(') {
    return Bad(method, "names unreadable");
  }
  out.class_name = std::move(*klass);
  std::replace(out.class_name.begin(), out.class_name.end(), '/', '.');
  out.name = std::move(*name);
  out.signature = std::move(*signature);
  uint16_t file_index = At<uint16_t>(pool, f.source_file_index);
  if (f.source_file_in_klass && !mem.Read(holder + f.source_file_index, &file_index, sizeof(file_index))) {
    file_index = 0;
  }
  if (file_index) out.file = PoolSymbol(mem, f, cm->pool, pool_length, file_index).value_or("");
  if (cm->has_lines) out.lines = ReadLines(mem, f, out.const_method, cm->bytes, cm->code_size);
  return out;
}

MethodCheck CheckJvmMethod(const ProcessMemory& mem, const MethodFields& f, uint64_t method,
                           const JvmMethod& known) {
  uint64_t cm = 0;
  if (!mem.ReadU64(method + f.method_const, &cm)) return MethodCheck::kUnreadable;
  return cm == known.const_method ? MethodCheck::kSame : MethodCheck::kChanged;
}

}  // namespace ehprof
