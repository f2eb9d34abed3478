// JvmTracker::Memory: the bytes the tracker holds for its JVMs (bench/
// jvm_node_cost.py reports them per JVM, from record's summary).
#include <string>

#include "agent/jvm/jvm_tracker.h"

namespace ehprof {

namespace {

// A string's own allocation: none while it fits the inline buffer.
uint64_t Heap(const std::string& s) { return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0; }

// A flat_hash_map's slots and their control bytes.
template <typename Map>
uint64_t Slots(const Map& m) {
  return m.capacity() * (sizeof(typename Map::value_type) + 1);
}

}  // namespace

JvmMemory JvmTracker::Memory() const {
  JvmMemory m;
  m.jvms = jvms_read_;
  m.methods = methods_.size() - 1;  // [0] is method 0
  m.method_table = methods_.size() * sizeof(JvmMethod);
  for (uint32_t i = 0; i < methods_.size(); ++i) {
    const JvmMethod& jm = methods_.method(i);
    m.method_table += Heap(jm.class_name) + Heap(jm.name) + Heap(jm.signature) + Heap(jm.file);
    m.line_tables += jm.lines.capacity() * sizeof(JvmLine);
  }
  for (const auto& [pid, p] : procs_) {
    if (p.state == Proc::kJvm) ++m.live_jvms;
    m.method_cache += Slots(p.method_index);
    m.scope_cache += Slots(p.scopes);
    for (const auto& [pc, cached] : p.scopes) {
      if (cached.scopes.ok()) m.scope_cache += cached.scopes->scopes.capacity() * sizeof(JvmScope);
    }
  }
  return m;
}

}  // namespace ehprof
