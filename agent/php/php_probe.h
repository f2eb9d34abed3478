// Offsets read from x86-64 machine code: the loads and compares small PHP
// functions make (agent/php/php_binary.cc says which). Byte patterns over
// a function's first bytes, not a decoder: each probe looks for a short
// sequence whose registers must chain, so a stray match is refused rather
// than taken.
#ifndef EHPROF_AGENT_PHP_PHP_PROBE_H_
#define EHPROF_AGENT_PHP_PHP_PROBE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ehprof {

// A 64-bit load `mov disp(%base), %dst` (REX.W 8B, mod 00/01/10, no SIB).
struct X86Load {
  size_t at = 0;  // its offset in the code
  int dst = 0, base = 0;
  int32_t disp = 0;
  bool wide = true;  // false: a 32-bit load (no REX.W)
};

// Every such load found at a byte position of code (both widths).
std::vector<X86Load> FindLoads(std::span<const uint8_t> code);

// zend_is_executing: `cmpq $0, disp(%reg)` after `lea globals(%rip), %reg`,
// or `cmpq $0, globals+disp(%rip)`: disp, the offset of
// current_execute_data in executor_globals (code at vaddr `addr`).
std::optional<uint32_t> ProbeCurrentExecuteData(std::span<const uint8_t> code, uint64_t addr,
                                                uint64_t executor_globals);

// zend_get_executed_filename_ex's loop from current_execute_data: func =
// ex->func, ex = ex->prev, and after it func->op_array.filename.
struct FilenameLoads {
  uint32_t func = 0, prev = 0, filename = 0;
};
std::optional<FilenameLoads> ProbeFilenameLoop(std::span<const uint8_t> code, uint32_t current_execute_data);

// zend_get_executed_lineno: the 32-bit load of opline->lineno, from the
// register that took `mov (%ex), %opline` (opline at 0).
std::optional<uint32_t> ProbeLineno(std::span<const uint8_t> code, uint32_t func);

// zend_get_executed_lineno's fallback, func->op_array.opcodes[0].lineno:
// a 64-bit load from the register that took ex->func, then the 32-bit load
// at lineno from the register it wrote: the offset of op_array.opcodes.
std::optional<uint32_t> ProbeOpcodes(std::span<const uint8_t> code, uint32_t func, uint32_t lineno);

// get_active_function_name: `lea disp8(%name), %rax` returns the name's
// text: the offset of zend_string.val.
std::optional<uint32_t> ProbeStringVal(std::span<const uint8_t> code);

// execute_ex's entry under GCC's global registers: `mov %rdi, %r14` and
// `mov (%rdi), %r15` (execute_data and opline). Whether both are there.
bool ProbeVmRegisters(std::span<const uint8_t> code);

// execute_ex's first dispatch, `jmp *(%r15)` (the opline's handler): its
// offset in code.
std::optional<size_t> ProbeDispatchJump(std::span<const uint8_t> code);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PHP_PHP_PROBE_H_
