// What the trackers of interpreters read from processes (Python, Ruby,
// PHP, Perl) share when they look at one: which of its mappings is the
// interpreter's binary, that binary inspected once per file (by path and
// inode: a file replaced at the same path is inspected again), and where
// the mapping puts the binary's addresses. The binary's own reader
// (InspectRubyBinary, ...) says whether a file is one; the name only
// narrows which files are opened.
#ifndef EHPROF_AGENT_INTERP_INTERP_BINARIES_H_
#define EHPROF_AGENT_INTERP_INTERP_BINARIES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/interp/interp_loops.h"
#include "agent/process/look_again.h"
#include "agent/process/proc_maps.h"
#include "base/warnings.h"
#include "elf/elf_file.h"

namespace ehprof {

// Binary has `std::vector<ElfSegment> loads` (its PT_LOAD segments).
template <typename Binary>
class InterpBinaries {
 public:
  // nullopt: the file is no such interpreter; an error: it is one that
  // cannot be read (the message names the file and why).
  using Inspect = std::function<absl::StatusOr<std::optional<Binary>>(const ElfFile&, const std::string& path)>;
  // The interpreter found in a process: its mapping, its binary (owned by
  // the cache) and the load bias; or `refused`, naming the file, when a
  // file that is one cannot be read or its mapping lies in no segment.
  struct Found {
    MapsEntry entry;
    const Binary* binary = nullptr;
    uint64_t bias = 0;
    absl::Status refused;
  };

  // Files whose base name contains `name_part` are inspected.
  InterpBinaries(std::string name_part, Inspect inspect)
      : name_part_(std::move(name_part)), inspect_(std::move(inspect)) {}

  // The first executable file mapping of `maps` (process pid's) that
  // inspects as the interpreter; nullopt when none does.
  std::optional<Found> Find(uint32_t pid, const std::vector<MapsEntry>& maps) {
    for (const MapsEntry& e : maps) {
      if (!e.exec || e.path.empty() || e.path[0] != '/') continue;
      if (e.path.substr(e.path.rfind('/') + 1).find(name_part_) == std::string::npos) continue;
      // Through map_files: the very file mapped, wherever its path now leads.
      const std::string open = absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end);
      const absl::StatusOr<std::optional<Binary>>& bin = Get(open, e.path, e.inode);
      Found found{e, nullptr, 0, absl::OkStatus()};
      if (!bin.ok()) {
        found.refused = bin.status();
        return found;
      }
      if (!*bin) continue;
      found.binary = &**bin;
      if (auto bias = LoadBias(found.binary->loads, e)) {
        found.bias = *bias;
      } else {
        found.refused = absl::FailedPreconditionError(absl::StrCat(e.path, ": its mapping lies in no segment"));
      }
      return found;
    }
    return std::nullopt;
  }

  // fn(path, result) for every file inspected so far.
  template <typename Fn>
  void ForEachInspected(Fn fn) const {
    for (const auto& [key, result] : cache_) fn(std::string_view(key).substr(0, key.rfind(':')), result);
  }

 private:
  const absl::StatusOr<std::optional<Binary>>& Get(const std::string& open_path, const std::string& path,
                                                   uint64_t inode) {
    const std::string key = absl::StrCat(path, ":", inode);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    absl::StatusOr<std::optional<Binary>> result = std::nullopt;
    if (auto elf = ElfFile::Open(open_path); elf.ok()) result = inspect_(*elf, path);
    return cache_.emplace(key, std::move(result)).first->second;
  }

  std::string name_part_;
  Inspect inspect_;
  std::map<std::string, absl::StatusOr<std::optional<Binary>>> cache_;
};

// Where a tracker stands with one process.
enum class InterpState {
  kUnknown,    // not looked at, or to look again at the next sample
  kAbsent,     // runs no such interpreter (yet): looked at again now and then
  kPublished,  // its entry is in the BPF map
  kRefused,    // an interpreter ehprof cannot read: native stacks only
};

// What the Ruby and Perl trackers keep of every process, beside their own.
struct InterpProcBase {
  InterpState state = InterpState::kUnknown;
  LookAgain look;
  int probe_failures = 0;  // TLS module id or symbols not readable yet
  std::string binary, version;
  InterpLoops loops;  // as published
};

// A tracker's look at process pid (a Proc derived from InterpProcBase):
// finds its interpreter through `binaries` and calls publish(binary, bias),
// which returns whether the process's entry was written (false: look again
// at the next sample) or an error (FailedPrecondition: refused, said once
// in `warnings` against the file; others: the process could not be read).
template <typename Binary, typename Proc, typename Publish>
absl::StatusOr<bool> AttachInterp(uint32_t pid, Proc& proc, InterpBinaries<Binary>& binaries, Warnings* warnings,
                                  Publish publish) {
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  auto found = binaries.Find(pid, *maps);
  if (!found) {
    proc.state = InterpState::kAbsent;
    return false;
  }
  auto refuse = [&](const absl::Status& why) -> absl::StatusOr<bool> {
    warnings->AddOnce(found->entry.path, absl::StrCat(why.message(), "; its stacks are native only"));
    proc.state = InterpState::kRefused;
    return absl::FailedPreconditionError(why.message());
  };
  if (!found->refused.ok()) return refuse(found->refused);
  proc.binary = found->entry.path;
  proc.version = found->binary->version;
  absl::StatusOr<bool> published = publish(*found->binary, found->bias);
  if (!published.ok() && absl::IsFailedPrecondition(published.status())) return refuse(published.status());
  if (published.ok()) proc.state = *published ? InterpState::kPublished : InterpState::kUnknown;
  return published;
}

}  // namespace ehprof

#endif  // EHPROF_AGENT_INTERP_INTERP_BINARIES_H_
