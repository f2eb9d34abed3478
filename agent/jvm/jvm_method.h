// A Java method read from a live JVM by its Method*: Method ->
// ConstMethod -> ConstantPool -> InstanceKlass, the names as Symbols in
// the constant pool, the source file, and the compressed line table after
// the bytecodes. A Method* the BPF walk read from a stack may be stale or
// not a method at all: it names a method only when every link checks out
// (the class's own method array holds it, the class's constant pool is
// the method's, names are sane Symbols), never with a wrong name.
#ifndef EHPROF_AGENT_JVM_JVM_METHOD_H_
#define EHPROF_AGENT_JVM_JVM_METHOD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/jvm/jvm_layout.h"
#include "agent/jvm/jvm_line_table.h"
#include "agent/process/process_memory.h"

namespace ehprof {

struct JvmMethod {
  std::string class_name;  // dotted: "java.util.HashMap"
  std::string name;        // "get"
  std::string signature;   // "(Ljava/lang/Object;)Ljava/lang/Object;"
  std::string file;        // "HashMap.java"; empty: unknown
  std::vector<JvmLine> lines;
  uint64_t const_method = 0;  // what the Method pointed to when read
};

// Bounds on what a method's reading accepts.
inline constexpr uint32_t kMaxJvmSymbol = 4096;
inline constexpr uint32_t kMaxClassMethods = 65535;

absl::StatusOr<JvmMethod> ReadJvmMethod(const ProcessMemory& mem, const MethodFields& f, uint64_t method);

enum class MethodCheck { kSame, kChanged, kUnreadable };
// One read: whether method still points at known.const_method (a freed
// and reused Method points elsewhere, or is not readable as one).
MethodCheck CheckJvmMethod(const ProcessMemory& mem, const MethodFields& f, uint64_t method,
                           const JvmMethod& known);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_METHOD_H_
