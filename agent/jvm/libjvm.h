// Where a process's libjvm.so is: the mapping (any path ending in
// /libjvm.so, a container's too: the file is opened through
// /proc/PID/map_files, as the process maps it), its load bias, and the
// runtime addresses of the gHotSpotVM* symbols it exports.
#ifndef EHPROF_AGENT_JVM_LIBJVM_H_
#define EHPROF_AGENT_JVM_LIBJVM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/jvm/vm_structs.h"
#include "agent/process/proc_maps.h"
#include "elf/elf_file.h"

namespace ehprof {

// What the file says, the same for every process mapping it.
struct LibjvmFile {
  VmSymbols symbols;              // ELF virtual addresses
  std::vector<ElfSegment> loads;  // PT_LOAD: the bias from a mapping
};

// The gHotSpotVM* symbols of .dynsym; an error when it has none (a
// libjvm.so that is no HotSpot, or one without its serviceability tables).
absl::StatusOr<LibjvmFile> InspectLibjvm(const ElfFile& elf);

// The first executable mapping of maps whose path ends in /libjvm.so.
std::optional<MapsEntry> FindLibjvmMapping(const std::vector<MapsEntry>& maps);

// The runtime address of ELF address 0 for mapping e of the file.
std::optional<uint64_t> LoadBias(const std::vector<ElfSegment>& loads, const MapsEntry& e);

// file's symbols at their runtime addresses.
VmSymbols RuntimeSymbols(const LibjvmFile& file, uint64_t bias);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_LIBJVM_H_
