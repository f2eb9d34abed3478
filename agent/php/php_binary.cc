#include "agent/php/php_binary.h"

#include <elf.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "agent/php/php_probe.h"
#include "agent/php/php_vm_parts.h"
#include "elf/elf_symbols.h"

namespace ehprof {

namespace {

struct Sym {
  uint64_t addr = 0, size = 0;
};

struct Symbols {
  std::optional<Sym> globals, globals_offset, execute_ex, vm_kind, is_executing, filename_ex, lineno,
      function_name;
};

void ReadSymbols(const ElfFile& elf, std::string_view table, std::string_view strings, Symbols* out) {
  ForEachDefinedSymbol(elf, table, strings, [&](const ElfSymbol& sym) {
    if (sym.value == 0) return;
    const std::string_view name = sym.name;
    const Sym v{sym.value, sym.size};
    if (name == "executor_globals") out->globals = v;
    else if (name == "executor_globals_offset") out->globals_offset = v;
    else if (name == "execute_ex") out->execute_ex = v;
    else if (name == "zend_vm_kind") out->vm_kind = v;
    else if (name == "zend_is_executing") out->is_executing = v;
    else if (name == "zend_get_executed_filename_ex") out->filename_ex = v;
    else if (name == "zend_get_executed_lineno") out->lineno = v;
    else if (name == "get_active_function_name") out->function_name = v;
  });
}

// A function's first bytes (at most 256: the probes read short functions).
std::span<const uint8_t> Code(const ElfFile& elf, const std::optional<Sym>& s) {
  if (!s) return {};
  const uint64_t size = s->size && s->size < 256 ? s->size : 256;
  auto bytes = elf.BytesAtVaddr(s->addr, size);
  return bytes ? *bytes : std::span<const uint8_t>{};
}

// "8.2.36" after the "X-Powered-By: PHP/" every SAPI sends: for messages
// only, nothing is read by it.
std::string VersionText(const ElfFile& elf) {
  auto rodata = elf.Section(".rodata");
  if (!rodata.ok() || !*rodata) return "";
  const std::string_view text(reinterpret_cast<const char*>((*rodata)->data.data()), (*rodata)->data.size());
  constexpr std::string_view kKey = "X-Powered-By: PHP/";
  const size_t at = text.find(kKey);
  if (at == std::string_view::npos) return "";
  std::string v;
  for (size_t i = at + kKey.size(); i < text.size() && v.size() < 16; ++i) {
    const char c = text[i];
    if ((c < '0' || c > '9') && c != '.') break;
    v += c;
  }
  return v;
}

// zend_vm_kind(): `mov $K, %eax; ret`, after an endbr64 in CET builds.
int VmKind(std::span<const uint8_t> code) {
  static constexpr uint8_t kEndbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  if (code.size() >= 4 && std::memcmp(code.data(), kEndbr64, 4) == 0) code = code.subspan(4);
  return code.size() >= 6 && code[0] == 0xb8 && code[5] == 0xc3 ? code[1] : 0;
}

}  // namespace

absl::StatusOr<std::optional<PhpBinary>> InspectPhpBinary(const ElfFile& elf, const std::string& path) {
  Symbols syms;
  ReadSymbols(elf, ".dynsym", ".dynstr", &syms);
  if (!syms.execute_ex || (!syms.globals && !syms.globals_offset)) return std::nullopt;
  auto fail = [&](std::string why) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": a PHP ehprof cannot read: ", why));
  };
  if (!syms.globals) return fail("a thread-safe (ZTS) build, whose executor globals are per thread");
  if (elf.machine() != EM_X86_64) return fail("PHP frames are read on x86-64 only");
  PhpBinary out;
  out.path = path;
  out.version = VersionText(elf);
  out.executor_globals = syms.globals->addr;
  if (!syms.execute_ex->size) return fail("execute_ex has no size");
  out.vm_begin = syms.execute_ex->addr;
  out.vm_end = syms.execute_ex->addr + syms.execute_ex->size;
  out.vm_parts = FindVmPartsInFile(elf, out.vm_begin, out.vm_end, EHP_PHP_VM_RANGES - 2);
  out.vm_kind = VmKind(Code(elf, syms.vm_kind));
  PhpLayout& l = out.layout;
  if (!syms.is_executing || !syms.filename_ex || !syms.lineno || !syms.function_name) {
    return fail("no zend_is_executing, zend_get_executed_filename_ex, zend_get_executed_lineno or "
                "get_active_function_name to read offsets from");
  }
  auto cur = ProbeCurrentExecuteData(Code(elf, syms.is_executing), syms.is_executing->addr, out.executor_globals);
  if (!cur || *cur % 8) return fail("no current_execute_data offset in zend_is_executing");
  l.current_execute_data = *cur;
  auto loop = ProbeFilenameLoop(Code(elf, syms.filename_ex), *cur);
  if (!loop || loop->func % 8 || loop->prev % 8 || loop->func >= 64 || loop->prev >= 64 ||
      loop->filename % 8 || loop->filename < 64 || loop->filename > 512) {
    return fail("no frame offsets in zend_get_executed_filename_ex");
  }
  l.ex_func = loop->func;
  l.ex_prev = loop->prev;
  l.fn_filename = loop->filename;
  auto lineno = ProbeLineno(Code(elf, syms.lineno), l.ex_func);
  if (!lineno || *lineno % 4 || *lineno > 64) return fail("no opline line offset in zend_get_executed_lineno");
  l.op_lineno = *lineno;
  auto opcodes = ProbeOpcodes(Code(elf, syms.lineno), l.ex_func, l.op_lineno);
  if (!opcodes || *opcodes % 8 || *opcodes < 64 || *opcodes > 512) {
    return fail("no op_array opcodes offset in zend_get_executed_lineno");
  }
  l.fn_opcodes = *opcodes;
  auto val = ProbeStringVal(Code(elf, syms.function_name));
  if (!val || *val < 16) return fail("no zend_string text offset in get_active_function_name");
  l.str_val = *val;
  l.str_len = *val - 8;  // len is the word before val (refcount, hash, len)
  // zend_execute_data: opline first (zend_get_executed_lineno's load at 0),
  // This (a zval) between func and prev, its type_info after its value;
  // zend_function's type, name and scope head every member of the union;
  // line_start follows filename; the class name follows the class type.
  // The process is checked against these before its frames are read
  // (PhpTracker: its outermost frame must carry call_top and a file name).
  l.ex_opline = 0;
  l.ex_call_info = l.ex_prev - 8;
  l.fn_type = 0;
  l.fn_name = 8;
  l.fn_scope = 16;
  l.fn_line_start = l.fn_filename + 8;
  l.fn_line_end = l.fn_line_start + 4;
  l.op_size = 32;  // handler, op1, op2, result, extended_value, lineno, the four type bytes
  if (l.op_lineno + 4 > l.op_size) return fail("a zend_op line past its 32 bytes");
  l.ce_name = 8;
  l.call_top = 1u << 17;
  if (l.ex_func + 24 != l.ex_prev) return fail("frame offsets with no room for This between func and prev");
  if (ProbeVmRegisters(Code(elf, syms.execute_ex))) {
    l.reg_ex = 14;
    l.reg_opline = 15;
  }
  if (auto jump = ProbeDispatchJump(Code(elf, syms.execute_ex))) l.jit_resume = out.vm_begin + *jump;
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD) out.loads.push_back(seg);
  }
  return out;
}

ehp_php_proc PhpProcFor(const PhpBinary& b, uint64_t bias, uint64_t jit_begin, uint64_t jit_end) {
  ehp_php_proc p{};
  if (b.layout.jit_resume && jit_begin < jit_end) {
    p.vm_begin[1] = jit_begin;
    p.vm_end[1] = jit_end;
    p.jit_resume = b.layout.jit_resume + bias;
  }
  p.vm_begin[0] = b.vm_begin + bias;
  p.vm_end[0] = b.vm_end + bias;
  for (size_t i = 0; i < b.vm_parts.size() && i + 2 < EHP_PHP_VM_RANGES; ++i) {
    p.vm_begin[i + 2] = b.vm_parts[i].first + bias;
    p.vm_end[i + 2] = b.vm_parts[i].second + bias;
  }
  p.current_execute_data = b.executor_globals + bias + b.layout.current_execute_data;
  p.ex_opline = static_cast<uint16_t>(b.layout.ex_opline);
  p.ex_func = static_cast<uint16_t>(b.layout.ex_func);
  p.ex_call_info = static_cast<uint16_t>(b.layout.ex_call_info);
  p.ex_prev = static_cast<uint16_t>(b.layout.ex_prev);
  p.reg_ex = b.layout.reg_ex;
  p.reg_opline = b.layout.reg_opline;
  p.call_top = b.layout.call_top;
  return p;
}

}  // namespace ehprof
