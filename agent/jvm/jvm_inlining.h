// The methods a JIT inlined into a compiled frame, from its nmethod's
// debug info: the PcDesc of the frame's pc (scopes_pcs) and the chain of
// ScopeDescs it starts (scopes_data, HotSpot's DebugInfoReadStream), each
// scope a Method* (an index into the nmethod's metadata) and a bci. Every
// number read is bounded; anything unexpected is an error, never a guess.
#ifndef EHPROF_AGENT_JVM_JVM_INLINING_H_
#define EHPROF_AGENT_JVM_JVM_INLINING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/jvm/jvm_layout.h"
#include "agent/process/process_memory.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// One scope: a method and the bci it runs at (-1: not known, as
// HotSpot's InvocationEntryBci).
struct JvmScope {
  uint64_t method = 0;
  int32_t bci = -1;
};

// The scopes at one pc, and which nmethod they are of (a cache of them
// holds while that nmethod is still there: SameJvmNmethod).
struct JvmScopes {
  uint64_t nmethod = 0;
  uint64_t method = 0;  // nmethod::_method
  int32_t compile_id = 0;
  std::vector<JvmScope> scopes;  // innermost first, the nmethod's method last
};

// A scope chain is at most this deep (C2's MaxInlineLevel is 15; JVMCI's
// deeper ones are cut off as unreadable).
inline constexpr int kMaxJvmScopes = 64;

// The scopes at pc of the nmethod whose code holds it. `method` is the Method* the walk saw for
// the frame (EHP_JVM_FRAME_METHOD): an nmethod of another method (the JIT
// freed the code and reused it) is an error. `leaf`: pc was interrupted
// there (the first PcDesc past it: PcDescs mark where their code ends), else
// it is a return address (its call's PcDesc, at that address). A JIT records PcDescs at calls and
// safepoints only, unless -XX:+DebugNonSafepoints (or a JVMTI agent such
// as async-profiler) asks for more: a leaf pc in a loop of inlined code
// then gets the scopes of the next safepoint, often its caller's alone.
// `unsigned5_x` as MethodFields'.
absl::StatusOr<JvmScopes> ReadJvmScopes(const ProcessMemory& mem, const ehp_jvm_proc& proc,
                                         const InlineFields& f, uint64_t pc, bool leaf, uint64_t method,
                                         int unsigned5_x);

// Whether the nmethod s was read from still holds that method and compile
// id (the JIT frees nmethods and reuses their memory).
bool SameJvmNmethod(const ProcessMemory& mem, const ehp_jvm_proc& proc, const InlineFields& f,
                    const JvmScopes& s);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_INLINING_H_
