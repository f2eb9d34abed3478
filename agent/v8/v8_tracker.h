// The V8 (node) processes of a recording: finds each process's V8 binary
// (node itself or a libnode.so mapping with v8dbg_* metadata), publishes its
// frame layout into the BPF v8_procs map, and turns the JavaScript frames of
// each sample (a SharedFunctionInfo address) into indexes of the functions
// it has named, while the process is alive: an interpreted frame with the
// line of its bytecode offset, an optimized one expanded into the functions
// TurboFan inlined at its pc (the native frame before it), each with its
// line (agent/v8/v8_code.h). The resolver names frames from functions().
#ifndef EHPROF_AGENT_V8_V8_TRACKER_H_
#define EHPROF_AGENT_V8_V8_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/process/look_again.h"
#include "agent/process/runtime_check.h"
#include "agent/tables/map_writer.h"
#include "agent/v8/v8_binary.h"
#include "agent/v8/v8_code.h"
#include "agent/v8/v8_heap.h"
#include "agent/v8/v8_layout.h"
#include "base/warnings.h"

namespace ehprof {

struct V8FrameName {
  std::string function, script;
  int32_t line = -1;     // -1: unknown
  bool inlined = false;  // a function TurboFan inlined into the frame below it
};

// A JavaScript frame after V8Tracker::NameFrames holds an index into
// V8FunctionTable in its SharedFunctionInfo field (0: unreadable), and
// kV8FrameInlined when TurboFan inlined it into the frame below (the
// table stops short of that bit).
inline constexpr uint64_t kV8FrameInlined = uint64_t{1} << 43;
inline constexpr uint64_t kV8FrameIndexMask = kV8FrameInlined - 1;

// Functions named so far, each with a line.
class V8FunctionTable {
 public:
  V8FunctionTable();
  uint32_t Add(V8FrameName name);
  V8FrameName Name(uint64_t value) const;
  const V8FrameName& At(uint32_t index) const { return names_[index]; }
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
  // while it is not V8 yet, once its maps changed: LookAgain).
  void Notice(uint32_t pid, uint64_t now_ns);
  void MapsChanged(uint32_t pid) { MapsChangedIn(procs_, pid); }
  // Notice, then rewrites the JavaScript frames of user (EHP_FRAME_V8) to
  // function indexes.
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user);
  // Finds the V8 of pid now; whether it is one ehprof reads.
  absl::StatusOr<bool> Attach(uint32_t pid);
  void Exec(uint32_t pid) { Exit(pid); }
  void Exit(uint32_t pid);
  const V8FunctionTable& functions() const { return functions_; }
  // Process pid's V8 after one look, as `ehprof check` lists it; nullopt
  // when pid runs none (v8_check.cc).
  std::optional<RuntimeCheck> CheckProcess(uint32_t pid);
  // Empties the function table and every process's index into it (the
  // agent, between intervals, once each sample's frames are named).
  void ForgetFunctions();

 private:
  struct Proc {
    enum State { kUnknown, kNotV8, kV8, kRefused } state = kUnknown;
    LookAgain look;
    V8Layout layout;
    // The V8 binary's executable mappings (its text, the embedded builtins
    // node maps again): no code objects there.
    std::vector<std::pair<uint64_t, uint64_t>> text;
    uint64_t istream_map = 0;                // V8CodeReader::Find's
    struct Function {
      std::optional<V8Function> f;  // nullopt: unreadable
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Function> functions;  // SharedFunctionInfo -> its function
    std::string binary;  // the last file Attach looked at
    struct Cached {
      uint32_t index;
      uint64_t checked_ns;
    };
    // (SharedFunctionInfo, line) -> index in functions_.
    absl::flat_hash_map<std::pair<uint64_t, int32_t>, Cached> frame_index;
    struct Lines {
      std::vector<int32_t> ends;  // empty: not computed by V8 (yet)
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Lines> scripts;  // Script -> its line ends
    struct Code {
      std::shared_ptr<const V8Code> code;
      uint64_t checked_ns;
    };
    std::map<uint64_t, Code> codes;                   // instruction start -> its code
    absl::flat_hash_map<uint64_t, uint64_t> no_code;  // pc -> when no code was found at it
    struct Positions {
      std::vector<V8PositionEntry> table;  // empty: not collected by V8 (yet)
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Positions> bytecode;  // SharedFunctionInfo -> its bytecode's positions
  };
  // The 1-based line of `position` in the script at `script`; -1 unknown.
  int32_t LineOf(uint32_t pid, Proc& p, uint64_t script, int32_t position, uint64_t now_ns);
  const V8Function* Function(uint32_t pid, Proc& p, uint64_t sfi, uint64_t now_ns);
  // The index naming `sfi` at `script_offset` (-1: its start), 0 unreadable.
  uint32_t FrameIndex(uint32_t pid, Proc& p, uint64_t sfi, int32_t script_offset, uint64_t now_ns);
  // The code holding pc (read, or cached and still the same); null none.
  const V8Code* CodeAt(uint32_t pid, Proc& p, uint64_t pc, uint64_t now_ns);
  // The script offset an interpreted frame of sfi runs at; -1 unknown.
  int32_t BytecodeScriptOffset(uint32_t pid, Proc& p, uint64_t sfi, uint32_t offset_slot, uint64_t now_ns);
  // Appends the frames of the optimized JavaScript frame v whose pc was
  // `pc_frame` (the native frame before it): the functions inlined at that
  // pc, innermost first; false (nothing appended) when its code is not read.
  bool Expand(uint32_t pid, Proc& p, uint64_t v, uint64_t pc_frame, uint64_t now_ns, std::vector<uint64_t>* out);
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
