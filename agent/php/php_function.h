// A PHP function as a frame names it, read from a live process's
// zend_function: `Class::method`, `function`, `{closure}`, the script's
// own code named by its file (as php-excimer names it), an internal (C)
// function by its name alone. Every string and length is the process's
// and bounded here.
#ifndef EHPROF_AGENT_PHP_PHP_FUNCTION_H_
#define EHPROF_AGENT_PHP_PHP_FUNCTION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agent/php/php_binary.h"
#include "agent/process/process_memory.h"

namespace ehprof {

// zend_function.type values.
inline constexpr uint8_t kPhpInternalFunction = 1;
inline constexpr uint8_t kPhpUserFunction = 2;
inline constexpr uint8_t kPhpEvalCode = 4;

// The longest function or class name, and file name, read.
inline constexpr uint64_t kPhpMaxName = 1024;
inline constexpr uint64_t kPhpMaxFile = 4096;

struct PhpFunction {
  std::string name;  // "Foo::bar", "{closure}", "strlen", or the file for top-level code
  std::string file;  // "" for an internal function
  int32_t line_start = -1, line_end = -1;
  uint64_t opcodes = 0;  // the op_array's zend_op array (0: internal)
  bool internal = false;
  // The pointers that identify it: a zend_function freed and reused for
  // another function has another name or file string.
  uint64_t name_ptr = 0, file_ptr = 0, scope = 0;
};

// The zend_string at addr: its length (at most max_len) and text.
absl::StatusOr<std::string> ReadZendString(const ProcessMemory& mem, const PhpLayout& l, uint64_t addr,
                                           uint64_t max_len);

// The identifying pointers of the zend_function at func (name_ptr,
// file_ptr, scope, internal filled; no strings read).
absl::StatusOr<PhpFunction> ReadPhpFunctionHead(const ProcessMemory& mem, const PhpLayout& l, uint64_t func);

// The line of a frame of f whose aux (bpf/ehprof_abi.h: its opline's
// index in f's opcodes, masked, offset by their address) is aux: read from
// that opline; -1 for an internal function, an unknown aux, or a line
// outside f's own (an aux no opline of f gives).
int32_t PhpFrameLine(const ProcessMemory& mem, const PhpLayout& l, const PhpFunction& f, uint32_t aux);

// The whole function at func.
absl::StatusOr<PhpFunction> ReadPhpFunction(const ProcessMemory& mem, const PhpLayout& l, uint64_t func);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PHP_PHP_FUNCTION_H_
