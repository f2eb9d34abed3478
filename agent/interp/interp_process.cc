#include "agent/interp/interp_process.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/guarded.h"

namespace ehprof {

namespace {

// The largest module id taken from a process's GOT.
constexpr uint64_t kMaxTlsModule = 1u << 16;

}  // namespace

absl::StatusOr<std::optional<uint64_t>> ReadTlsModuleId(const ProcessMemory& mem, uint64_t slot, int* tries,
                                                        absl::string_view path) {
  uint64_t module = 0;
  if (!mem.ReadU64(slot, &module)) return absl::UnavailableError("process memory unreadable");
  if (module == 0 && ++*tries < kTlsModuleTries) return std::nullopt;
  if (module == 0 || module > kMaxTlsModule) {
    return absl::FailedPreconditionError(absl::StrFormat("%s: TLS module id %d is not one", path, module));
  }
  return module;
}

bool WriteProcEntry(MapWriter* map, uint32_t pid, const void* value, absl::string_view runtime, Warnings* warnings) {
  const absl::Status st = map ? map->Write(pid, value, 1) : absl::OkStatus();
  if (st.ok()) return true;
  warnings->AddOnce(absl::StrCat(runtime, "_procs"),
                    absl::IsResourceExhausted(st) ? absl::StrCat(runtime, " processes: the BPF map is full (", pid, ")")
                                                  : absl::StrCat(runtime, " processes: ", st.message()));
  return false;
}

bool LookGuarded(absl::string_view runtime, absl::FunctionRef<void()> look) {
  const std::string where = absl::StrCat("reading a ", runtime, " process");
  return Guarded(std::string_view(where), "its stacks are native only", [&] {
           look();
           return absl::OkStatus();
         }).ok();
}

}  // namespace ehprof
