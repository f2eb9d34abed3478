// What ehprof needs to know of one PHP binary (php8.x, php-fpm8.x, or
// libphp.so for the embed and Apache SAPIs), read from the file: where the
// VM loop is, where executor_globals is, and the offsets the walk and the
// names take, probed from the machine code of small exported functions
// that read them (zend_is_executing, zend_get_executed_filename_ex,
// zend_get_executed_lineno, get_active_function_name, execute_ex's entry),
// never from a version string. x86-64 only: the probes read its code.
#ifndef EHPROF_AGENT_PHP_PHP_BINARY_H_
#define EHPROF_AGENT_PHP_PHP_BINARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"
#include "elf/elf_file.h"

namespace ehprof {

// The offsets a PHP build keeps its structures at (bytes).
struct PhpLayout {
  uint32_t current_execute_data = 0;  // in executor_globals
  uint32_t ex_opline = 0, ex_func = 0, ex_call_info = 0, ex_prev = 0;  // zend_execute_data
  uint32_t fn_type = 0, fn_name = 0, fn_scope = 0;  // zend_function (common)
  uint32_t fn_filename = 0, fn_line_start = 0;      // zend_op_array
  uint32_t fn_line_end = 0, fn_opcodes = 0;         // zend_op_array
  uint32_t ce_name = 0;                             // zend_class_entry
  uint32_t str_len = 0, str_val = 0;                // zend_string
  uint32_t op_lineno = 0;                           // zend_op
  uint32_t op_size = 0;                             // sizeof(zend_op)
  uint32_t call_top = 0;                            // ZEND_CALL_TOP
  uint8_t reg_ex = 0, reg_opline = 0;  // the VM's global registers (DWARF), 0: none
  // execute_ex's dispatch jump (a vaddr in its body), 0 when not found: JIT
  // code is unwound as execute_ex from there.
  uint64_t jit_resume = 0;
};

struct PhpBinary {
  std::string path;
  std::string version;  // "8.2.36" from the file's own text; "" when not found
  uint64_t executor_globals = 0;  // ELF virtual addresses
  uint64_t vm_begin = 0, vm_end = 0;  // execute_ex
  // execute_ex's other parts (agent/php/php_vm_parts.h), [begin, end).
  std::vector<std::pair<uint64_t, uint64_t>> vm_parts;
  int vm_kind = 0;  // zend_vm_kind(): 4 hybrid, 1 call; 0 unknown
  PhpLayout layout;
  std::vector<ElfSegment> loads;  // PT_LOAD segments: the runtime bias
};

// nullopt: not a PHP binary (no execute_ex or executor_globals); an error:
// one ehprof cannot read (a ZTS build, another machine, a probe that found
// no offset), the message naming the file and why.
absl::StatusOr<std::optional<PhpBinary>> InspectPhpBinary(const ElfFile& elf, const std::string& path);

// The BPF map value for a process with that bias; with opcache's JIT code
// at [jit_begin, jit_end) (0, 0: none, or no jit_resume to unwind it by).
ehp_php_proc PhpProcFor(const PhpBinary& b, uint64_t bias, uint64_t jit_begin = 0, uint64_t jit_end = 0);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PHP_PHP_BINARY_H_
