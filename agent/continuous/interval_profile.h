// One interval of continuous profiling, aggregated while it was recorded:
// each distinct stack once with its count, never a list of samples. Frames
// are located in their process by the rule `record` follows
// (agent/resolve/frame_locator.h) when the sample arrives (file, mapping,
// ELF address), those in no mapping yet again when the interval is handed
// over, so symbolizing later needs neither the process nor the tracker's
// history. Frames in anonymous memory or in no mapping keep their pid: the
// symbolizer names them from that process's perf map.
#ifndef EHPROF_AGENT_CONTINUOUS_INTERVAL_PROFILE_H_
#define EHPROF_AGENT_CONTINUOUS_INTERVAL_PROFILE_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/process/process_tracker.h"
#include "agent/record/recorder.h"
#include "agent/record/stack_counter.h"
#include "agent/resolve/frame_locator.h"

namespace ehprof {

struct LocatedMapping {
  std::string path;  // "[vdso]", "//anon" for anonymous code
  uint64_t start = 0, limit = 0, offset = 0;
  std::string build_id;
  // Read for its symbols (SymbolFileOf: path, or the fd ehprof kept on the
  // file, or "" for none), and its debug file found in the process's root, if any: both
  // chosen when the mapping is met, while the process is there.
  std::string symbol_file, debug_file;
};

struct LocatedFrame {
  static constexpr uint32_t kKernel = UINT32_MAX;
  static constexpr uint32_t kUnmapped = UINT32_MAX - 1;
  // A Python frame, named when it arrived: addr is its qualname's string id
  // << 32 | its file's, runtime its code's index << 20 | its line.
  static constexpr uint32_t kPython = UINT32_MAX - 2;
  // In anonymous memory (JIT code); kUnmapped: in no mapping known. Both:
  // addr is the pid, runtime the call site.
  static constexpr uint32_t kAnon = UINT32_MAX - 3;
  // A Java frame, named when it arrived: as kPython (its "Class.method"
  // and .java file, its method's index << 20 | its line).
  static constexpr uint32_t kJava = UINT32_MAX - 4;
  // A JavaScript frame, named when it arrived: as kPython (its function and
  // script, its function's index << 20 | its line).
  static constexpr uint32_t kV8 = UINT32_MAX - 5;
  // A Ruby, PHP or Perl frame, named when it arrived: as kPython, runtime
  // its kind << 62 | its table index << 20 | its line
  // (indexes stay far below 2^42).
  static constexpr uint32_t kInterp = UINT32_MAX - 6;
  uint32_t mapping = kUnmapped;  // index into IntervalProfile::mappings, or the above
  uint64_t addr = 0;      // kernel address, or ELF address (the call site above the leaf)
  uint64_t runtime = 0;   // the address in the process (user frames)
  bool operator==(const LocatedFrame&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const LocatedFrame& f) {
    return H::combine(std::move(h), f.mapping, f.addr, f.runtime);
  }
};

// The interval's stacks as the engine record keeps its samples with
// (agent/record/stack_counter.h): each distinct (service, comm, off-CPU or
// not, located frames, kernel then user) once with its count, each frame
// and string once.
struct IntervalProfile : Stacks<LocatedFrame> {
  using Key = StackKey;
  uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC, as the samples
  uint64_t samples = 0;
  std::vector<LocatedMapping> mappings;
  // Kept fds no process maps any more, released when the interval was
  // handed over: closed once it is symbolized (the last samples naming
  // them are in it or before it).
  std::vector<ReleasedFile> released;
  // Its heap, estimated from its contents (--metrics).
  uint64_t Bytes() const;
};

// Builds IntervalProfiles on the recording thread.
class StackAggregator {
 public:
  // At most max_stacks distinct stacks an interval; later new ones are
  // counted as dropped (a bound on memory whatever the workload).
  explicit StackAggregator(size_t max_stacks = 200000) : stacks_(max_stacks) {}
  // `python`, `jvm`, `v8`, `interp`: the tables the sample's Python, Java,
  // JavaScript and Ruby/PHP frames index (the recorder's, current as the sample
  // arrives), or null.
  void Add(const RawSample& s, const ProcessTracker& tracker, const std::string& service,
           const PythonCodeTable* python = nullptr, const JvmMethodTable* jvm = nullptr,
           const V8FunctionTable* v8 = nullptr, const InterpFrameTable* interp = nullptr);
  // The interval so far, ended at now_ns; the next one starts empty. Its
  // frames in no mapping when their sample arrived are located again in
  // `tracker` (which may know their mapping by now), if given.
  IntervalProfile Take(uint64_t now_ns, const ProcessTracker* tracker = nullptr);
  // Samples added since the last Take (those over the stack cap too).
  uint64_t pending_samples() const { return samples_; }

 private:
  uint32_t Mapping(const TrackedMapping& m);
  LocatedFrame Located(const FrameLocation& l, uint32_t pid);

  StackCounter<LocatedFrame> stacks_;
  uint64_t start_ns_ = 0, samples_ = 0;
  std::vector<LocatedMapping> mappings_;
  // (path, start, offset, kept_path)
  absl::flat_hash_map<std::tuple<std::string, uint64_t, uint64_t, std::string>, uint32_t>
      mapping_ids_;
  // The frames in no mapping (ids), each with the time it was first seen.
  absl::flat_hash_map<uint32_t, uint64_t> unmapped_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_PROFILE_H_
