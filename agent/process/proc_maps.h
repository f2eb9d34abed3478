// /proc/PID/maps: which file (and file offset) backs each range of a
// process's address space, so a sampled pc can be turned into an ELF address.
#ifndef EHPROF_AGENT_PROCESS_PROC_MAPS_H_
#define EHPROF_AGENT_PROCESS_PROC_MAPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  bool read = false;
  bool write = false;
  bool exec = false;
  bool priv = false;  // 'p' (copy-on-write) rather than 's' (shared)
  uint64_t offset = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  // The text after the inode as the kernel wrote it (it escapes '\n' as
  // "\012" and nothing else, so this is not unescaped), minus a trailing
  // " (deleted)". Empty for anonymous memory; "[heap]", "[stack]", "[vdso]",
  // "[anon:NAME]" for the kernel's pseudo-names.
  std::string path;
  // The file was unlinked (or replaced, e.g. by a package upgrade) after it
  // was mapped: `path` no longer names it, /proc/PID/map_files/ still does.
  // A live file whose name really ends in " (deleted)" looks the same.
  bool deleted = false;
};

// Parses the text of a maps file. Errors name `source_name` and the 1-based
// line: "SOURCE:LINE: REASON: 'LINE TEXT'".
absl::StatusOr<std::vector<MapsEntry>> ParseProcMaps(std::string_view text,
                                                     const std::string& source_name);

// Reads and parses /proc/PID/maps. NotFound when the process does not exist
// (any more), so callers can tell "exited" from real failures;
// PermissionDenied without ptrace access. A kernel thread, or a zombie,
// has no address space and yields an empty vector. Within a SharedProcMaps
// for pid on this thread, every call after the first returns the first's
// result.
absl::StatusOr<std::vector<MapsEntry>> ReadProcMaps(int pid);

// One read of a process's maps for every reader of one look at it: the
// process tracker and each runtime's tracker (JVM, V8, Python, PHP, Ruby,
// Perl) read the maps of a process that just changed, seven reads within a
// millisecond otherwise (a ranlib with libLLVM loaded maps 300 files), and
// the event loop's latency is the cold window's length. Scopes nest; the
// innermost one for its pid applies.
class SharedProcMaps {
 public:
  explicit SharedProcMaps(int pid);
  ~SharedProcMaps();
  SharedProcMaps(const SharedProcMaps&) = delete;
  SharedProcMaps& operator=(const SharedProcMaps&) = delete;

  // How many reads this scope made (0 or 1), for tests.
  int reads() const { return reads_; }

 private:
  friend absl::StatusOr<std::vector<MapsEntry>> ReadProcMaps(int pid);
  int pid_;
  int reads_ = 0;
  SharedProcMaps* outer_;
  std::optional<absl::StatusOr<std::vector<MapsEntry>>> read_;
};

// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...); 0 when the
// process is gone.
char ProcState(uint32_t pid);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_PROC_MAPS_H_
