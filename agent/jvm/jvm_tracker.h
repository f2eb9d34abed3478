// The HotSpot JVMs of a recording: finds each process's libjvm.so, reads
// the JVM's own description of itself (gHotSpotVMStructs, gHotSpotVMTypes,
// gHotSpotVMIntConstants) from the live process, publishes its code heaps
// and the offsets the walk needs into the BPF jvm_procs map
// (bpf/hotspot.bpf.h), and turns the Java frames of each sample (Method*,
// bci) into indexes of the methods it has named, while the process is
// alive. The resolver names frames from methods().
#ifndef EHPROF_AGENT_JVM_JVM_TRACKER_H_
#define EHPROF_AGENT_JVM_JVM_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/jvm/jvm_inlining.h"
#include "agent/jvm/jvm_layout.h"
#include "agent/jvm/jvm_method.h"
#include "agent/jvm/libjvm.h"
#include "agent/process/runtime_check.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

// A named Java method frame: "java.util.HashMap.get" as class + "." +
// method, the source file as the class file names it ("HashMap.java"),
// the line of the frame's bci (-1: unknown, as for compiled frames).
struct JvmFrameName {
  std::string class_name;  // dotted: "java.util.HashMap"
  std::string method;      // "get"
  std::string file;        // "HashMap.java"; empty: unknown
  int32_t line = -1;
  bool compiled = false;   // a C1/C2 frame (else interpreted)
  bool inlined = false;    // a method the JIT inlined into the frame below it
};

// Bits of a named Java frame that only user space sets, the top two of the
// method index field (the table stops short of them): kJvmFrameInlined, a
// method inlined into the compiled frame below it; kJvmFrameScopeBci, a
// compiled frame (inlined or not) whose bci field is its scope's, so its
// line is known. NameFrames sets them when it expands a compiled frame.
inline constexpr uint64_t kJvmFrameInlined = uint64_t{1} << 43;
inline constexpr uint64_t kJvmFrameScopeBci = uint64_t{1} << 42;
inline constexpr uint64_t kJvmFrameIndexMask = kJvmFrameScopeBci - 1;

// After JvmTracker::NameFrames a Java frame of a sample keeps bit 60, the
// compiled bit and the bci field as the BPF side sent them, with the index
// of its method in methods() in bits 0-41 in place of the Method* (index
// 0: a frame of method 0, see enum ehp_jvm_blob). A Method* that does not
// read as a method becomes method 0 too: its bci field then
// EHP_JVM_BLOB_INTERPRETER (interpreted) or EHP_JVM_BLOB_UNKNOWN (compiled).
class JvmMethodTable {
 public:
  JvmMethodTable();
  // The name of a frame value NameFrames wrote (the line from its bci).
  JvmFrameName Name(uint64_t value) const;
  size_t size() const { return methods_.size(); }
  // Its index; 0 (method 0) once the table holds kJvmFrameIndexMask.
  uint32_t Add(JvmMethod method);
  const JvmMethod& method(uint32_t index) const { return methods_[index]; }

 private:
  std::vector<JvmMethod> methods_;  // [0]: method 0, never a method
};

// How ehprof sees one JVM (ehprof check, warnings).
struct JvmFound {
  std::string libjvm;   // the libjvm.so path
  std::string version;  // "17.0.15+6-Debian-1deb12u1"; empty: unknown
  std::string problem;  // empty: readable
};

// What the tracker keeps of its JVMs' metadata, in bytes (allocated
// capacity, strings past their inline buffer): the method table and its
// line tables (one for all JVMs), and each JVM's caches of Method* ->
// index and of pc -> inlining scopes.
struct JvmMemory {
  size_t jvms = 0;       // processes read as JVMs, alive or not
  size_t live_jvms = 0;  // of them, those whose caches are still kept
  size_t methods = 0;    // methods named
  uint64_t method_table = 0, line_tables = 0, method_cache = 0, scope_cache = 0;
  uint64_t total() const { return method_table + line_tables + method_cache + scope_cache; }
};

class JvmTracker {
 public:
  // jvm_procs: the BPF jvm_procs map (pid -> ehp_jvm_proc) from the
  // session; null: names frames and writes no map (tests of the reading
  // side alone). Refused JVMs and a full map go to `warnings`, each once.
  JvmTracker(std::unique_ptr<MapWriter> jvm_procs, Warnings* warnings);
  ~JvmTracker();
  // Looks at a process the first time it is sampled (again after an exec,
  // and, while its JVM is not up yet, every second); rewrites the Java
  // frames of user (EHP_IS_JVM_FRAME) to method indexes. A compiled frame
  // and the pc word after it (EHP_IS_JVM_PC) become the methods inlined at
  // that pc, innermost first, then the frame's own method, each with its
  // bci (jvm_inlining.h); when they do not read, the frame alone.
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user);
  // A process whose mappings were just read: looked at as NameFrames does,
  // so its first samples already have Java frames.
  void Notice(uint32_t pid, uint64_t now_ns);
  // pid's mappings changed: a process without libjvm is looked at again.
  void MapsChanged(uint32_t pid) {
    if (auto it = procs_.find(pid); it != procs_.end()) it->second.maps_changed = true;
  }
  void Exec(uint32_t pid);
  void Exit(uint32_t pid);
  const JvmMethodTable& methods() const;
  // Empties the method table (the agent, between intervals).
  void ForgetMethods();
  std::vector<JvmFound> Found() const;
  // Process pid's JVM after one look, as `ehprof check` lists it; nullopt
  // when pid runs none (jvm_check.cc).
  std::optional<RuntimeCheck> CheckProcess(uint32_t pid);
  JvmMemory Memory() const;  // jvm_memory.cc

 private:
  struct Proc {
    enum State { kUnknown, kNotJvm, kNotUp, kJvm, kRefused } state = kUnknown;
    uint64_t checked_ns = 0;  // the last look, or (kJvm) the last read of its heaps
    int looks = 0;            // looks while kNotJvm or kNotUp: the next comes later
    // Since the last look (kNotJvm is read from the maps alone: looked at
    // again only once they changed; kNotUp, the JVM's memory, by time).
    bool maps_changed = false;
    std::string libjvm;       // its key in libjvms_
    std::optional<JvmLayout> layout;  // once read; layout->proc as published (kJvm)
    struct Cached {
      uint32_t index;
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, Cached> method_index;  // Method* -> methods_ index
    struct CachedScopes {
      absl::StatusOr<JvmScopes> scopes;
      uint64_t checked_ns;
    };
    absl::flat_hash_map<uint64_t, CachedScopes> scopes;  // pc (bit 63: leaf) -> its scopes
  };
  struct Libjvm {
    std::string path;
    absl::StatusOr<LibjvmFile> file;
    std::string version;  // of the last process read
    std::string problem;  // why its JVMs are refused
  };
  void Look(uint32_t pid, Proc& p);
  // The process's layout (p.layout), from its libjvm.so's tables.
  absl::Status ReadLayout(uint32_t pid, Proc& p, const MapsEntry& mapping);
  void Refuse(uint32_t pid, Proc& p, const std::string& why);
  void RefreshHeaps(uint32_t pid, Proc& p, uint64_t now_ns);
  bool Publish(uint32_t pid, const ehp_jvm_proc& value);
  uint32_t MethodIndex(uint32_t pid, Proc& p, uint64_t method, uint64_t now_ns);
  // A named frame of v (a Java frame as the walk sent it).
  uint64_t NameFrame(uint32_t pid, Proc& p, uint64_t v, uint64_t now_ns);
  const JvmScopes* Scopes(uint32_t pid, Proc& p, uint64_t frame, uint64_t pc, bool leaf, uint64_t now_ns);
  // Appends the frames of compiled frame v whose pc word is pc_word;
  // false (nothing appended) when its scopes do not read or name.
  bool Expand(uint32_t pid, Proc& p, uint64_t v, uint64_t pc_word, bool leaf, uint64_t now_ns,
              std::vector<uint64_t>* out);

  std::unique_ptr<MapWriter> jvm_procs_;
  Warnings* warnings_;
  JvmMethodTable methods_;
  std::map<uint32_t, Proc> procs_;
  std::map<std::string, Libjvm> libjvms_;  // "path:inode"
  size_t jvms_read_ = 0;                   // processes ever taken as JVMs
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_TRACKER_H_
