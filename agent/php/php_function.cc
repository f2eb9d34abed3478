#include "agent/php/php_function.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ehprof {

absl::StatusOr<std::string> ReadZendString(const ProcessMemory& mem, const PhpLayout& l, uint64_t addr,
                                           uint64_t max_len) {
  uint64_t len = 0;
  if (!addr || !mem.ReadU64(addr + l.str_len, &len)) {
    return absl::DataLossError(absl::StrFormat("pid %d: string at 0x%x unreadable", mem.pid(), addr));
  }
  if (len > max_len) {
    return absl::DataLossError(absl::StrFormat("pid %d: string at 0x%x of %u bytes (at most %u read)", mem.pid(),
                                               addr, len, max_len));
  }
  std::string text(len, '\0');
  if (len && !mem.Read(addr + l.str_val, text.data(), len)) {
    return absl::DataLossError(absl::StrFormat("pid %d: string text at 0x%x unreadable", mem.pid(), addr));
  }
  return text;
}

absl::StatusOr<PhpFunction> ReadPhpFunctionHead(const ProcessMemory& mem, const PhpLayout& l, uint64_t func) {
  uint8_t type = 0;
  PhpFunction f;
  if (!func || func % 8 || !mem.Read(func + l.fn_type, &type, 1) || !mem.ReadU64(func + l.fn_name, &f.name_ptr) ||
      !mem.ReadU64(func + l.fn_scope, &f.scope)) {
    return absl::DataLossError(absl::StrFormat("pid %d: function at 0x%x unreadable", mem.pid(), func));
  }
  if (type != kPhpInternalFunction && type != kPhpUserFunction && type != kPhpEvalCode) {
    return absl::DataLossError(absl::StrFormat("pid %d: function at 0x%x of type %d", mem.pid(), func, type));
  }
  f.internal = type == kPhpInternalFunction;
  if (!f.internal && !mem.ReadU64(func + l.fn_filename, &f.file_ptr)) {
    return absl::DataLossError(absl::StrFormat("pid %d: function at 0x%x: no file", mem.pid(), func));
  }
  return f;
}

int32_t PhpFrameLine(const ProcessMemory& mem, const PhpLayout& l, const PhpFunction& f, uint32_t aux) {
  if (f.internal || !f.opcodes || aux > EHP_PHP_OPLINE_MASK || l.op_size != (1u << EHP_PHP_OP_SHIFT)) return -1;
  const uint64_t index = (aux - (f.opcodes >> EHP_PHP_OP_SHIFT)) & EHP_PHP_OPLINE_MASK;
  uint32_t line = 0;
  if (!mem.Read(f.opcodes + index * l.op_size + l.op_lineno, &line, 4) || line == 0 || line >= (1u << 31)) {
    return -1;
  }
  const int32_t v = static_cast<int32_t>(line);
  if (f.line_start > 0 && v < f.line_start) return -1;
  if (f.line_end > 0 && f.line_end >= f.line_start && v > f.line_end) return -1;
  return v;
}

absl::StatusOr<PhpFunction> ReadPhpFunction(const ProcessMemory& mem, const PhpLayout& l, uint64_t func) {
  auto f = ReadPhpFunctionHead(mem, l, func);
  if (!f.ok()) return f.status();
  if (!f->internal) {
    auto file = ReadZendString(mem, l, f->file_ptr, kPhpMaxFile);
    if (!file.ok()) return file.status();
    f->file = *std::move(file);
    uint32_t lines[2] = {0, 0};  // line_start, line_end
    if (mem.Read(func + l.fn_line_start, &lines[0], 4) && lines[0] < (1u << 31)) {
      f->line_start = static_cast<int32_t>(lines[0]);
    }
    if (mem.Read(func + l.fn_line_end, &lines[1], 4) && lines[1] < (1u << 31)) {
      f->line_end = static_cast<int32_t>(lines[1]);
    }
    if (!mem.ReadU64(func + l.fn_opcodes, &f->opcodes) || f->opcodes % 8) f->opcodes = 0;
  }
  if (!f->name_ptr) {
    // Code outside any function: a script's or an included file's.
    if (f->internal) return absl::DataLossError(absl::StrFormat("pid %d: internal function 0x%x without a name",
                                                                mem.pid(), func));
    f->name = f->file;
    return f;
  }
  auto name = ReadZendString(mem, l, f->name_ptr, kPhpMaxName);
  if (!name.ok()) return name.status();
  if (absl::StartsWith(*name, "{closure")) {
    f->name = "{closure}";  // 8.4 names it "{closure:FILE:LINE}": the frame has both
    return f;
  }
  if (f->scope) {
    uint64_t class_name = 0;
    if (!mem.ReadU64(f->scope + l.ce_name, &class_name)) {
      return absl::DataLossError(absl::StrFormat("pid %d: class of function 0x%x unreadable", mem.pid(), func));
    }
    auto cls = ReadZendString(mem, l, class_name, kPhpMaxName);
    if (!cls.ok()) return cls.status();
    f->name = absl::StrCat(*cls, "::", *name);
    return f;
  }
  f->name = *std::move(name);
  return f;
}

}  // namespace ehprof
