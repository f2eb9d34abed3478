// What ehprof needs to know of one libperl (libperl.so.5.x, or a perl
// executable with the interpreter linked in), read from the file alone:
// where the run loop (Perl_runops_standard) is, how a thread finds its
// interpreter (PL_current_context's TLS slot), and the offsets of the
// interpreter, stackinfo and context fields the walk follows, each from
// the binary's own symbols and the code of small exported functions that
// touch them (agent/perl/perl_probe.h), never from its version. x86-64
// only: the probes read its code, the walk its fsbase.
#ifndef EHPROF_AGENT_PERL_PERL_BINARY_H_
#define EHPROF_AGENT_PERL_PERL_BINARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"
#include "elf/elf_file.h"

namespace ehprof {

struct PerlBinary {
  std::string path;
  std::string version;  // "5.36.0" from PL_revision/PL_version/PL_subversion, for reports only
  uint64_t runops_begin = 0, runops_end = 0;  // ELF addresses
  // PL_current_context: the GOT slot that holds libperl's TLS module id
  // (file address; 0 for an executable, whose TLS is glibc's module 1) and
  // the variable's offset in the module's TLS block.
  uint64_t tls_modid_slot = 0;
  int64_t tls_offset = 0;
  // The layout the BPF walk takes (runops range and TLS left 0: per process).
  ehp_perl_proc layout{};
  std::vector<ElfSegment> loads;
};

// nullopt: not a libperl (no Perl_runops_standard). An error: it is one,
// but ehprof cannot read it (the message names the file and why).
absl::StatusOr<std::optional<PerlBinary>> InspectPerlBinary(const ElfFile& elf, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PERL_PERL_BINARY_H_
