// What `-e` names when it is a probe rather than a clock: where to attach
// ehprof's probe programs (bpf/profiler.bpf.c: ehprof_uprobe,
// ehprof_tracepoint), each hit recording the stacks, counted.
#ifndef EHPROF_AGENT_SAMPLING_PROBE_SPEC_H_
#define EHPROF_AGENT_SAMPLING_PROBE_SPEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ehprof {

struct ProbeSpec {
  enum class Kind { kUprobe, kUretprobe, kUsdt, kTracepoint, kKprobe };
  Kind kind = Kind::kUprobe;
  std::string text;  // as given, e.g. "uprobe:/usr/bin/fio:get_io_u"
  // uprobe/uretprobe/usdt: the ELF file (absolute).
  std::string path;
  // uprobe/uretprobe: a symbol (.symtab/.dynsym) plus offset, or an address
  // (symbol empty): an ELF virtual address, for stripped statics.
  std::string symbol;
  uint64_t offset = 0;
  uint64_t address = 0;
  // usdt: provider and name; tracepoint: category and name; kprobe: the
  // function in name.
  std::string group;
  std::string name;
  // "uprobe", "uretprobe", "usdt", "tracepoint" or "kprobe": the pprof
  // sample type.
  const char* type_name() const;
};

// Whether `event` is a probe spec (starts with uprobe:, uretprobe:, usdt:
// or tracepoint:), so a parse error is about a probe, not an unknown event.
bool LooksLikeProbe(const std::string& event);

// uprobe:PATH:SYMBOL[+OFF], uprobe:PATH:0xADDR, uretprobe:..., usdt:PATH:
// PROVIDER:NAME, tracepoint:CATEGORY:NAME, kprobe:FUNC. Errors say what is
// wrong.
absl::StatusOr<ProbeSpec> ParseProbeSpec(const std::string& event);

// The file offset of ELF virtual address `vaddr` in `path` (what the
// kernel's uprobe takes), from its PT_LOAD segments.
absl::StatusOr<uint64_t> FileOffsetOfAddress(const std::string& path, uint64_t vaddr);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SAMPLING_PROBE_SPEC_H_
