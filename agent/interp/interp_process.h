// The steps of publishing an interpreter process to its BPF map that the
// Ruby, PHP and Perl trackers share: the TLS module id its dynamic linker
// gave the interpreter's library, the map entry written (a full map said
// once), and each look at a process guarded (its files and memory are its
// user's: whatever they make the reading throw refuses that process only).
#ifndef EHPROF_AGENT_INTERP_INTERP_PROCESS_H_
#define EHPROF_AGENT_INTERP_INTERP_PROCESS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

// Tries at reading a TLS module id of 0 before the process is refused (a
// process just exec'd has not relocated the library yet).
inline constexpr int kTlsModuleTries = 20;

// The module id at `slot` in mem's process: nullopt to look again later
// (0 read, fewer than kTlsModuleTries times: *tries counts them);
// Unavailable when the memory does not read; FailedPrecondition naming
// `path` when the id is no module's.
absl::StatusOr<std::optional<uint64_t>> ReadTlsModuleId(const ProcessMemory& mem, uint64_t slot, int* tries,
                                                        absl::string_view path);

// Writes pid's entry (`value`, one element) into `map` (null: none kept).
// False when it cannot, said once per runtime: "RUNTIME processes: the BPF
// map is full (PID)" or the writer's error.
bool WriteProcEntry(MapWriter* map, uint32_t pid, const void* value, absl::string_view runtime, Warnings* warnings);

// Runs `look` (a tracker's look at one process); false when it threw (said
// once by Guarded: the process is then to be refused).
bool LookGuarded(absl::string_view runtime, absl::FunctionRef<void()> look);

}  // namespace ehprof

#endif  // EHPROF_AGENT_INTERP_INTERP_PROCESS_H_
