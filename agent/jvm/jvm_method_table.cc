#include "agent/jvm/jvm_tracker.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

namespace {

// A frame of method 0: JVM code that runs no Java method the tracker
// could name (its bci field says which, enum ehp_jvm_blob). A compiled
// frame of no known blob is one whose Method* did not read as a method
// (JvmTracker::NameFrames).
std::string BlobName(uint32_t blob, bool compiled) {
  switch (blob) {
    case EHP_JVM_BLOB_STUB: return "[jvm: stub]";
    case EHP_JVM_BLOB_INTERPRETER: return "[jvm: interpreter]";
    case EHP_JVM_BLOB_UNKNOWN: return compiled ? "[jvm: compiled code, method unreadable]" : "[jvm: unknown code]";
    default: return "[jvm]";
  }
}

}  // namespace

JvmMethodTable::JvmMethodTable() { methods_.emplace_back(); }

uint32_t JvmMethodTable::Add(JvmMethod method) {
  if (methods_.size() >= kJvmFrameIndexMask) return 0;
  methods_.push_back(std::move(method));
  return static_cast<uint32_t>(methods_.size() - 1);
}

JvmFrameName JvmMethodTable::Name(uint64_t value) const {
  const uint64_t index = value & kJvmFrameIndexMask;
  const uint32_t bci = EHP_JVM_FRAME_BCI(value);
  JvmFrameName n;
  n.compiled = EHP_JVM_FRAME_COMPILED(value);
  n.inlined = (value & kJvmFrameInlined) != 0;
  if (index == 0 || index >= methods_.size()) {
    n.method = BlobName(index == 0 ? bci : uint32_t{EHP_JVM_BLOB_UNKNOWN}, n.compiled);
    return n;
  }
  const JvmMethod& m = methods_[index];
  n.class_name = m.class_name;
  n.method = m.name;
  n.file = m.file;
  const bool bci_known = !n.compiled || (value & kJvmFrameScopeBci) != 0;
  if (bci_known && bci != EHP_JVM_BCI_UNKNOWN) n.line = JvmLineAt(m.lines, bci);
  return n;
}

}  // namespace ehprof
