// What ehprof needs of one V8 binary (node, or a libnode.so): the
// addresses of its v8dbg_* postmortem metadata (tools/gen-postmortem-
// metadata.py: int32 data symbols naming frame slots, object field offsets,
// instance types and tags). The values are read from the live process (some
// are set by static initializers), not from the file.
#ifndef EHPROF_AGENT_V8_V8_BINARY_H_
#define EHPROF_AGENT_V8_V8_BINARY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"

namespace ehprof {

struct V8Binary {
  std::string path;
  // "off_fp_function" (the name without "v8dbg_") -> ELF address.
  std::map<std::string, uint64_t> metadata;
  std::vector<ElfSegment> loads;  // PT_LOAD segments: runtime bias from a mapping
};

// nullopt: not a V8 binary (no v8dbg_off_fp_function). An error: its
// symbols could not be read (the message names the file).
absl::StatusOr<std::optional<V8Binary>> InspectV8Binary(const ElfFile& elf, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_BINARY_H_
