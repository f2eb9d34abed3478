// The Python processes of a recording: finds each process's interpreter
// (its python3.X or libpython3.X.so mapping), publishes where its eval loop
// is and its offsets into the BPF py_procs map, and turns the Python frames
// of each sample (code object address, instruction position) into indexes
// of the code objects it has read, while the process is alive. The resolver
// names frames from codes().
#ifndef EHPROF_AGENT_PYTHON_PYTHON_TRACKER_H_
#define EHPROF_AGENT_PYTHON_PYTHON_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/interp/interp_binaries.h"
#include "agent/interp/interp_loops.h"
#include "agent/process/look_again.h"
#include "agent/process/runtime_check.h"
#include "agent/python/python_binary.h"
#include "agent/python/python_code.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

// A Python frame of a sample after PythonTracker::NameFrames: bit 61, the
// instruction position in bits 44-60 as the BPF side sent it, and the index
// of its code in codes() in bits 0-43 (0: a stop marker, its position
// field the enum ehp_py_stop).
struct PythonFrameName {
  std::string qualname, file;
  int32_t line = -1;  // -1: unknown
};

class PythonCodeTable {
 public:
  PythonCodeTable();
  uint32_t Add(PythonCode code, CodeFields fields);
  // The name of a frame value NameFrames wrote.
  PythonFrameName Name(uint64_t value) const;
  size_t size() const { return codes_.size(); }
  const PythonCode& code(uint32_t index) const { return codes_[index].code; }

 private:
  struct Entry {
    PythonCode code;
    CodeFields fields;
  };
  std::vector<Entry> codes_;
};

// How ehprof sees one interpreter binary (ehprof check, warnings).
struct PythonFound {
  std::string path;
  std::string version;  // "3.11"
  std::string problem;  // empty: readable
};

class PythonTracker {
 public:
  // py_procs: the BPF py_procs map (pid -> ehp_py_proc), from the session;
  // null: names frames and writes no map (tests of the reading side alone).
  // Interpreters refused and a full map go to `warnings` (not owned; it
  // outlives the tracker), each once.
  PythonTracker(std::unique_ptr<MapWriter> py_procs, Warnings* warnings)
      : py_procs_(std::move(py_procs)),
        binaries_("python",
                  [](const ElfFile& elf, const std::string& path) { return InspectPythonBinary(elf, path); }),
        warnings_(warnings) {}
  // Looks at a process the first time it is sampled (again after an exec,
  // and while it is not Python yet, once its maps changed); rewrites the
  // Python frames of user (EHP_FRAME_PYTHON) to code indexes.
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user);
  // A process whose mappings were just read: looked at as NameFrames does,
  // so its first samples already have Python frames.
  void Notice(uint32_t pid, uint64_t now_ns);
  // pid's mappings changed: a process not Python is looked at again.
  void MapsChanged(uint32_t pid) { MapsChangedIn(procs_, pid); }
  // Whether pc lies in the eval loop pid's entry was published with
  // (agent/interp/interp_loops.h).
  bool InInterpreterLoop(uint32_t pid, uint64_t pc) const { return InLoopsOf(procs_, pid, pc, Proc::kPython); }
  // Finds the interpreter of pid now; whether it is a readable Python.
  absl::StatusOr<bool> Attach(uint32_t pid);
  void Exec(uint32_t pid);
  void Exit(uint32_t pid);
  const PythonCodeTable& codes() const { return codes_; }
  // Empties the code table and every process's index into it (the agent,
  // between intervals, once each sample's frames are named): the table then
  // holds what one interval named, not every code object ever seen.
  void ForgetCodes();
  // Interpreter binaries seen so far (by path).
  std::vector<PythonFound> Found() const;
  // Process pid's interpreter after one look, as `ehprof check` lists it;
  // nullopt when pid runs none (python_check.cc).
  std::optional<RuntimeCheck> CheckProcess(uint32_t pid);

 private:
  struct Proc {
    enum State { kUnknown, kNotPython, kPython, kRefused } state = kUnknown;
    LookAgain look;
    // Checks that found no code object or no readable PyCode_Type: refused
    // at kFrameCheckTries (a frame read while the process pushes it can
    // fail once; a libpython met at its dlopen's first mmap is not yet
    // relocated), counted at
    // most one per kFrameCheckSpacingNs (CLOCK_MONOTONIC of the last one
    // counted): samples milliseconds apart while the interpreter starts
    // all meet its frames in flux.
    int frame_check_failures = 0;
    uint64_t frame_check_failed_ns = 0;
    CodeFields fields;
    InterpLoops loops;  // the eval loop, as published
    std::string binary, version;  // the interpreter Attach last read ("3.11")
    // code address -> index in codes_, and when it was last checked.
    struct Cached {
      uint32_t index;
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Cached> code_index;
  };
  uint32_t CodeIndex(uint32_t pid, Proc& p, uint64_t addr, uint64_t now_ns);
  std::unique_ptr<MapWriter> py_procs_;
  PythonCodeTable codes_;
  std::map<uint32_t, Proc> procs_;
  // "path:inode" -> the binary (nullopt: no Python), or why it is refused.
  InterpBinaries<PythonBinary> binaries_;
  Warnings* warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_PYTHON_TRACKER_H_
