// The V8 (node) processes of a recording: finds each process's V8 binary
// (node itself or a libnode.so mapping with v8dbg_* metadata), publishes its
// frame layout into the BPF v8_procs map, and turns the JavaScript frames of
// each sample (a SharedFunctionInfo address) into indexes of the functions
// it has named, while the process is alive. The resolver names frames from
// functions().
#ifndef EHPROF_AGENT_V8_V8_TRACKER_H_
#define EHPROF_AGENT_V8_V8_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/tables/map_writer.h"
#include "agent/v8/v8_binary.h"
#include "agent/v8/v8_heap.h"
#include "agent/v8/v8_layout.h"
#include "base/warnings.h"

namespace ehprof {

struct V8FrameName {
  std::string function, script;
  int32_t line = -1;  // -1: unknown
};

// Functions named so far; a JavaScript frame after V8Tracker::NameFrames
// holds an index here in its SharedFunctionInfo field (0: unreadable).
class V8FunctionTable {
 public:
  V8FunctionTable();
  uint32_t Add(V8FrameName name);
  V8FrameName Name(uint64_t value) const;
  size_t size() const { return names_.size(); }

 private:
  std::vector<V8FrameName> names_;
};

class V8Tracker {
 public:
  // v8_procs: the BPF map (pid -> ehp_v8_proc) from the session; null: names
  // frames and writes no map. Binaries refused and a full map go to
  // `warnings` (not owned; it outlives the tracker), each once.
  V8Tracker(std::unique_ptr<MapWriter> v8_procs, Warnings* warnings)
      : v8_procs_(std::move(v8_procs)), warnings_(warnings) {}
  // Looks at a process the first time it is seen (again after an exec, and
  // while it is not V8 yet, every second).
  void Notice(uint32_t pid, uint64_t now_ns);
  // Notice, then rewrites the JavaScript frames of user (EHP_FRAME_V8) to
  // function indexes.
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user);
  // Finds the V8 of pid now; whether it is one ehprof reads.
  absl::StatusOr<bool> Attach(uint32_t pid);
  void Exec(uint32_t pid) { Exit(pid); }
  void Exit(uint32_t pid);
  const V8FunctionTable& functions() const { return functions_; }
  // Empties the function table and every process's index into it (the
  // agent, between intervals, once each sample's frames are named).
  void ForgetFunctions();

 private:
  struct Proc {
    enum State { kUnknown, kNotV8, kV8, kRefused } state = kUnknown;
    uint64_t checked_ns = 0;
    int not_v8_checks = 0;
    V8Layout layout;
    struct Cached {
      uint32_t index;
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Cached> function_index;  // SharedFunctionInfo -> index
    struct Lines {
      std::vector<int32_t> ends;  // empty: not computed by V8 (yet)
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Lines> scripts;  // Script -> its line ends
  };
  // The 1-based line of `position` in the script at `script`; -1 unknown.
  int32_t LineOf(uint32_t pid, Proc& p, uint64_t script, int32_t position, uint64_t now_ns);
  uint32_t FunctionIndex(uint32_t pid, Proc& p, uint64_t sfi, uint64_t now_ns);
  const absl::StatusOr<std::optional<V8Binary>>& Binary(const std::string& open_path, const std::string& path,
                                                        uint64_t inode);

  std::unique_ptr<MapWriter> v8_procs_;
  V8FunctionTable functions_;
  std::map<uint32_t, Proc> procs_;
  std::map<std::string, absl::StatusOr<std::optional<V8Binary>>> binaries_;
  Warnings* warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_TRACKER_H_
