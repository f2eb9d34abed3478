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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
};

// After JvmTracker::NameFrames a Java frame of a sample keeps bit 60, the
// compiled bit and the bci field as the BPF side sent them, with the index
// of its method in methods() in bits 0-43 in place of the Method* (index
// 0: a frame of method 0, see enum ehp_jvm_blob).
class JvmMethodTable {
 public:
  JvmMethodTable();
  // The name of a frame value NameFrames wrote (the line from its bci).
  JvmFrameName Name(uint64_t value) const;
  size_t size() const;
  // ... (the implementation's own members)
};

// How ehprof sees one JVM (ehprof check, warnings).
struct JvmFound {
  std::string libjvm;   // the libjvm.so path
  std::string version;  // "17.0.15+6-Debian-1deb12u1"; empty: unknown
  std::string problem;  // empty: readable
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
  // frames of user (EHP_IS_JVM_FRAME) to method indexes.
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user);
  // A process whose mappings were just read: looked at as NameFrames does,
  // so its first samples already have Java frames.
  void Notice(uint32_t pid, uint64_t now_ns);
  void Exec(uint32_t pid);
  void Exit(uint32_t pid);
  const JvmMethodTable& methods() const;
  // Empties the method table (the agent, between intervals).
  void ForgetMethods();
  std::vector<JvmFound> Found() const;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_TRACKER_H_
