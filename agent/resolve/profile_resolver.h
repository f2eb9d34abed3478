// Raw samples (runtime addresses) to resolved ones (ELF addresses, symbols,
// files). Runs after recording, off the sampling path; addresses are named
// through an AddressSymbolizer (the agent's path too), every distinct
// (file, address) once.
#ifndef EHPROF_AGENT_RESOLVE_PROFILE_RESOLVER_H_
#define EHPROF_AGENT_RESOLVE_PROFILE_RESOLVER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "agent/interp/interp_frame_table.h"
#include "agent/jvm/jvm_tracker.h"
#include "agent/process/process_tracker.h"
#include "agent/python/python_tracker.h"
#include "agent/record/raw_sample.h"
#include "agent/resolve/address_symbolizer.h"
#include "agent/resolve/resolved_sample.h"
#include "agent/v8/v8_tracker.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/symbolizer.h"

namespace ehprof {

struct ResolveOptions {
  // Which user walk to print: the primary one, or the frame-pointer walk
  // recorded alongside it (--unwinder both).
  bool use_fp_walk = false;
  // A walk that stopped short of the stack's bottom gets its stop reason as
  // one more frame, "[stop: REASON]" in dso "[stop]", outermost (--show-stops):
  // which binaries and pcs a host's incomplete stacks stop at; a walk
  // finished late (EHP_SAMPLE_FINISHED_LATE) gets "[finished late]" first.
  bool stop_frames = false;
  // Files to read symbols from instead of the path in the maps ("[vdso]").
  std::map<std::string, std::string> symbol_file_alias;
  // Where problems worth one line each go (a perf map with broken lines);
  // null: nowhere.
  Warnings* warnings = nullptr;
  // The code objects the samples' Python frames name (Recorder's); null:
  // Python frames are shown as such, unnamed.
  const PythonCodeTable* python = nullptr;
  // The methods the samples' Java frames name (Recorder's); null: Java
  // frames are shown as such, unnamed.
  const JvmMethodTable* jvm = nullptr;
  // The functions the samples' JavaScript frames name (Recorder's); null:
  // they are shown as "[v8 unknown]".
  const V8FunctionTable* v8 = nullptr;
  // The Ruby, PHP and Perl frames the samples' interpreter words name
  // (Recorder's); null: they are shown as "[ruby unknown]" etc.
  const InterpFrameTable* interp = nullptr;
  // Where JITs' perf-PID.map files are (JitSymbols::Options: empty, each
  // process's own /tmp).
  std::string perf_map_dir;
};

// A Python frame (EHP_FRAME_PYTHON, rewritten by PythonTracker) as a frame
// named qualname, its dso and source the .py file.
ResolvedFrame PythonFrame(uint64_t value, const PythonCodeTable* codes);
// The same from its name, read before (the agent names frames as they
// arrive): `code` is its index in the code table it was named from.
ResolvedFrame PythonFrame(PythonFrameName name, uint64_t code);

// A user frame value that is a Python frame, not an address.
inline bool IsPythonFrame(uint64_t value) { return EHP_IS_PY_FRAME(value); }

// A Ruby, PHP or Perl frame (EHP_FRAME_INTERP, rewritten by its
// InterpTracker) as a frame named as the interpreter names it, its dso and
// source the script ("[ruby]" etc. for a C method or internal function).
// It stands where Python's do: leaf-side of its interpreter loop's frame.
ResolvedFrame InterpFrame(uint64_t value, const InterpFrameTable* frames);
// The same from its name, read before (the agent); `id` tells frames apart
// for formats that key on an address.
ResolvedFrame InterpFrame(InterpFrameName name, uint64_t id);
inline bool IsInterpFrame(uint64_t value) { return EHP_IS_INTERP_FRAME(value); }
// A frame the walk pushes leaf-side of its interpreter loop's native
// frame (Python's, Ruby's, PHP's), which AppendUserFrames puts above it.
inline bool IsInterpreterLoopFrame(uint64_t value) { return IsPythonFrame(value) || IsInterpFrame(value); }
FrameRuntime InterpFrameRuntime(ehp_interp_kind kind);

// A Java frame (EHP_FRAME_JVM, rewritten by JvmTracker) as a frame named
// "pkg.Class.method", its source the .java file, dso "[java]". It stands
// where the JVM's code ran, in the walk's order (not as Python's).
ResolvedFrame JvmFrame(uint64_t value, const JvmMethodTable* methods);
// The same from its name, read before (the agent); `id` tells frames of
// one method and line apart for formats that key on an address.
ResolvedFrame JvmFrame(JvmFrameName name, uint64_t id);
inline bool IsJvmFrame(uint64_t value) { return EHP_IS_JVM_FRAME(value); }

// A JavaScript frame (EHP_FRAME_V8, rewritten by V8Tracker) as a frame named
// after its function, its dso and source the script. It stands after the
// native frame of the code that ran in it, in the walk's order.
ResolvedFrame V8Frame(uint64_t value, const V8FunctionTable* functions);
// The same from its name, read before (the agent names frames as they
// arrive): `function` is its index in the table it was named from.
ResolvedFrame V8Frame(V8FrameName name, uint64_t function);
inline bool IsV8Frame(uint64_t value) { return EHP_IS_V8_FRAME(value); }

// A walk's user frames in the order the outputs show them, each value
// resolved by `native` (which appends an address's frames: its inline
// expansions, then the function holding it) or `python` (one frame). A
// Python frame (bpf/python.bpf.h puts an eval call's frames leaf-side of
// the eval loop's native frame) runs inside that function, beneath the
// calls inlined into it: function, Python frames, inline callees.
template <typename Values, typename IsPython, typename Python, typename Native>
void AppendUserFrames(const Values& user, IsPython is_python, Python python, Native native,
                      std::vector<ResolvedFrame>* out) {
  std::vector<ResolvedFrame> pending;
  for (const auto& value : user) {
    if (is_python(value)) {
      pending.push_back(python(value));
      continue;
    }
    const size_t before = out->size();
    native(value, out);
    if (!pending.empty() && out->size() > before) {
      out->insert(out->end() - 1, pending.begin(), pending.end());
      pending.clear();
    }
  }
  out->insert(out->end(), pending.begin(), pending.end());
}

// A V8 frame word follows the native frame of the code it names: that
// frame, when it is code in anonymous memory no perf map names ("[anon]"),
// says nothing the word does not, and goes (a perf map's name stays: the
// fallback a user asked for).
inline void DropUnnamedCodeFrame(std::vector<ResolvedFrame>* out) {
  if (!out->empty() && out->back().dso == "[anon]" && !out->back().jit) out->pop_back();
}

// Where to read a mapping's symbols: its path while that still holds the
// file that was mapped (same device, inode and mtime: a separate debug
// file is then found next to it), else the fd ehprof kept on it (a binary
// replaced or deleted since, or a container's file, whose path is not
// ours), else "": no symbols rather than those of whatever file took the
// path. Not cached: a stat() each call.
const std::string& SymbolFileOf(const TrackedMapping& m);

// A kernel address as a frame, named from kallsyms when it is given.
ResolvedFrame KernelFrame(uint64_t addr, const Kallsyms* kernel);
// `base` (a user frame located in its file) once per source frame of its
// address, innermost inline expansion first, the function itself last
// (with symbol_start); `base` alone when nothing is known.
void AppendSourceFrames(const ResolvedFrame& base,
                        const std::vector<Symbolizer::SourceFrame>& frames, uint64_t start,
                        std::vector<ResolvedFrame>* out);

std::vector<ResolvedSample> ResolveSamples(const std::vector<RawSample>& samples,
                                           const ProcessTracker& tracker, AddressSymbolizer& symbols,
                                           const Kallsyms* kernel, const ResolveOptions& options);
// The samples `for_each` hands over (SampleList::ForEach: every sample,
// or each distinct one with its count), each resolved and handed to
// `each` at once (none kept).
using RawSamples = absl::FunctionRef<void(absl::FunctionRef<void(const RawSample&)>)>;
void ResolveEach(RawSamples for_each, const ProcessTracker& tracker, AddressSymbolizer& symbols,
                 const Kallsyms* kernel, const ResolveOptions& options,
                 absl::FunctionRef<void(ResolvedSample&&)> each);

// Off-CPU stacks are taken inside the sched_switch tracepoint: drops the
// leading kernel frames of the BPF program and the tracepoint's glue.
void DropTracingFrames(std::vector<ResolvedFrame>* frames);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_PROFILE_RESOLVER_H_
