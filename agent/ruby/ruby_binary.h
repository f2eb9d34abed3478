// What ehprof needs to know of one Ruby binary (libruby-X.Y.so, or a ruby
// executable with the VM linked in), read from the file alone: where the VM
// loop (vm_exec_core) is, how a thread finds its execution context
// (ruby_current_ec's TLS slot), where the symbol table (global_symbols)
// is, and the control frame layout, each from the binary's own symbols and
// its code (the instructions of small exported functions that touch these
// structures), not from its version.
#ifndef EHPROF_AGENT_RUBY_RUBY_BINARY_H_
#define EHPROF_AGENT_RUBY_RUBY_BINARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"
#include "elf/elf_file.h"

namespace ehprof {

struct RubyBinary {
  std::string path;
  std::string version;  // ruby_api_version, for reports only ("3.1")
  uint64_t vm_begin = 0, vm_end = 0;  // vm_exec_core (ELF addresses)
  // ruby_current_ec: the GOT slot that holds libruby's TLS module id (file
  // address) and the variable's offset in the module's TLS block.
  uint64_t tls_modid_slot = 0;
  int64_t tls_offset = 0;
  // global_symbols: its last_id (u32) and ids (an Array of Arrays).
  uint64_t symbols_last_id = 0, symbols_ids = 0;
  // The VALUE variables rb_cObject, rb_cModule, rb_cString (0: not
  // exported), for probing where a class keeps its path.
  uint64_t class_vars[3] = {0, 0, 0};
  // The layout the BPF walk takes (vm range and TLS left 0: per process).
  ehp_ruby_proc layout{};
  std::vector<ElfSegment> loads;
};

// nullopt: not a Ruby VM (no rb_vm_exec or ruby_current_ec). An error: it
// is one, but ehprof cannot read it (the message names the file and why).
absl::StatusOr<std::optional<RubyBinary>> InspectRubyBinary(const ElfFile& elf, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RUBY_RUBY_BINARY_H_
