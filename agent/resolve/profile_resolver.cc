#include "agent/resolve/profile_resolver.h"

#include <sys/stat.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/resolve/frame_locator.h"
#include "bpf/stop_reasons.h"

namespace ehprof {
// Off-CPU stacks are taken inside the sched_switch tracepoint: their
// kernel stacks start with the BPF program and the tracepoint's glue
// (bpf_prog_..._ehprof_switch, bpf_trace_run4, __bpf_trace_sched_switch),
// which say nothing about why the task blocked.
void DropTracingFrames(std::vector<ResolvedFrame>* frames) {
  size_t n = 0;
  while (n < frames->size()) {
    const std::string& s = (*frames)[n].symbol;
    if (!absl::StartsWith(s, "bpf_prog_") && !absl::StartsWith(s, "bpf_trace_run") &&
        !absl::StartsWith(s, "__bpf_trace_") && !absl::StartsWith(s, "__traceiter_")) {
      break;
    }
    ++n;
  }
  frames->erase(frames->begin(), frames->begin() + n);
}

namespace {

constexpr char kUnknown[] = "[unknown]";

// Whether a mapping says which file was mapped: opened by ehprof (device,
// inode, mtime), or at least the inode /proc/PID/maps gave. [vdso] and
// other names that are no path are read through an alias, never stat()ed.
bool IdentityKnown(const TrackedMapping& m) {
  return !m.path.empty() && m.path[0] == '/' && (m.file || m.kernel_file.ino != 0);
}

std::string IdentityKey(const TrackedMapping& m) {
  return m.file ? absl::StrCat(m.file->dev, ":", m.file->inode, ":", m.file->mtime_ns)
                : absl::StrCat("?:", m.kernel_file.ino);
}

// The path still holds the mapped file (the kernel's device numbering
// differs from st_dev's, so a bare inode is compared alone).
bool PathHoldsMappedFile(const TrackedMapping& m) {
  struct stat st;
  if (::stat(m.path.c_str(), &st) != 0) return false;
  if (!m.file) return static_cast<uint64_t>(st.st_ino) == m.kernel_file.ino;
  return static_cast<uint64_t>(st.st_ino) == m.file->inode && static_cast<uint64_t>(st.st_dev) == m.file->dev &&
         int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec == m.file->mtime_ns;
}

// Where symbols come from when the path holds another file (a binary
// replaced or deleted since, or a container's file, whose path is not
// ours): the fd ehprof kept on the mapped file, else nowhere, since the
// symbols of whatever took the path would be wrong names, worse than none.
const std::string& ElsewhereThanPath(const TrackedMapping& m) {
  static const std::string kNone;
  return m.kept_path.empty() ? kNone : m.kept_path;
}

class Resolver {
 public:
  Resolver(const ProcessTracker& t, AddressSymbolizer& s, const Kallsyms* k, const ResolveOptions& o)
      : tracker_(t),
        symbols_(s),
        kernel_(k),
        options_(o),
        jit_({SIZE_MAX, o.perf_map_dir}, o.warnings ? o.warnings : &unheard_) {}

  ResolvedSample Resolve(const RawSample& raw) {
    ResolvedSample out;
    out.count = raw.count;
    out.off_cpu = (raw.flags & EHP_SAMPLE_OFF_CPU) != 0;
    out.weight_ns = raw.off_cpu_ns;
    out.comm = raw.comm;
    out.pid = raw.pid;
    out.tid = raw.tid;
    out.cpu = raw.cpu;
    out.time_ns = raw.time_ns;
    for (uint64_t addr : raw.kernel) out.frames.push_back(KernelFrame(addr, kernel_));
    if (out.off_cpu) DropTracingFrames(&out.frames);
    AppendUserFrames(
        options_.use_fp_walk ? raw.user_fp : raw.user, IsInterpreterLoopFrame,
        [&](uint64_t value) {
          return IsPythonFrame(value) ? PythonFrame(value, options_.python) : InterpFrame(value, options_.interp);
        },
        [&](uint64_t value, std::vector<ResolvedFrame>* frames) { AddUserFrames(raw, value, frames); },
        &out.frames);
    if (options_.stop_frames) AddStopFrame(raw, &out.frames);
    return out;
  }

 private:
  void AddStopFrame(const RawSample& raw, std::vector<ResolvedFrame>* frames) const {
    if ((raw.flags & EHP_SAMPLE_FINISHED_LATE) && !options_.use_fp_walk) {
      // Finished from its stack's copy (agent/deferred/): said, whatever
      // its end, so a reader can tell the late walks from the kernel's.
      ResolvedFrame late;
      late.symbol = "[finished late]";
      late.dso = "[finished late]";
      frames->push_back(std::move(late));
    }
    const unsigned reason = options_.use_fp_walk ? raw.fp_stop_reason : raw.stop_reason;
    if (reason == EHP_STOP_END_OF_STACK || reason == EHP_STOP_NOT_WALKED || reason == EHP_STOP_NO_USER_STACK) return;
    ResolvedFrame f;
    f.symbol = absl::StrCat("[stop: ", StopReasonName(reason), "]");
    f.dso = "[stop]";
    frames->push_back(std::move(f));
  }

  // One address: its inline expansions (innermost first), then the
  // function holding it, as perf and eu-addr2line -i show them.
  void AddUserFrames(const RawSample& raw, uint64_t value, std::vector<ResolvedFrame>* out) {
    if (IsJvmFrame(value)) {
      out->push_back(JvmFrame(value, options_.jvm));
      return;
    }
    if (IsV8Frame(value)) {
      DropUnnamedCodeFrame(out);
      out->push_back(V8Frame(value, options_.v8));
      return;
    }
    const FrameLocation loc = LocateUserFrame(tracker_, raw.pid, raw.time_ns, value);
    if (loc.kind != FrameLocation::Kind::kFile) {
      // JIT code: anonymous memory, named (if at all) by the JIT's perf map.
      out->push_back(jit_.Frame(raw.pid, loc.site, loc.kind == FrameLocation::Kind::kAnon));
      return;
    }
    ResolvedFrame f;
    f.addr = loc.elf_vaddr;
    f.symbol = kUnknown;
    const TrackedMapping& m = *loc.mapping;
    f.dso = m.path;
    f.map_start = m.start;
    f.map_limit = m.end;
    f.map_offset = m.offset;
    f.runtime_addr = loc.site;
    // A debug file found in a container's root names what the file's own
    // tables cannot; the file itself still names its PLT stubs, which the
    // debug file holds no code for.
    const std::string* file = &SymbolPathOf(m);
    if (!m.debug_path.empty() && !Symbolize(m.debug_path, f.addr).frames.empty()) {
      file = &m.debug_path;
    }
    const AddressSymbolizer::Symbolized& sym = Symbolize(*file, f.addr);
    AppendSourceFrames(f, sym.frames, sym.start, out);
  }

  // The frames at `vaddr` in the file a mapping path names (none when it
  // names no file).
  const AddressSymbolizer::Symbolized& Symbolize(const std::string& path, uint64_t vaddr) {
    static const AddressSymbolizer::Symbolized kNothing;
    const std::string& file = SymbolFile(path);
    return file.empty() ? kNothing : symbols_.Lookup(file, vaddr);
  }

  // SymbolFileOf, with the stat() once per file.
  const std::string& SymbolPathOf(const TrackedMapping& m) {
    if (!IdentityKnown(m)) return m.path;
    const std::string key = absl::StrCat(m.path, ":", IdentityKey(m));
    auto it = same_file_.find(key);
    if (it == same_file_.end()) it = same_file_.emplace(key, PathHoldsMappedFile(m)).first;
    return it->second ? m.path : ElsewhereThanPath(m);
  }

  // The file to read symbols from for a mapping path ("" when none).
  const std::string& SymbolFile(const std::string& path) {
    static const std::string kNone;
    auto alias = options_.symbol_file_alias.find(path);
    const std::string& file = alias == options_.symbol_file_alias.end() ? path : alias->second;
    return !file.empty() && file[0] == '/' ? file : kNone;
  }

  const ProcessTracker& tracker_;
  AddressSymbolizer& symbols_;
  const Kallsyms* kernel_;
  const ResolveOptions& options_;
  Warnings unheard_;  // options_.warnings when that is null
  JitSymbols jit_;
  // "path:dev:inode:mtime" -> the path still holds that file.
  absl::flat_hash_map<std::string, bool> same_file_;
};

}  // namespace

const std::string& SymbolFileOf(const TrackedMapping& m) {
  if (!IdentityKnown(m)) return m.path;
  return PathHoldsMappedFile(m) ? m.path : ElsewhereThanPath(m);
}

// A runtime's frame (Python, Java, JavaScript): its line (0: unknown) and
// a stable address per (its code, line) for formats that key on one; the
// agent's intervals take both apart again (interval_symbolizer.cc).
namespace {
void SetRuntimeLine(ResolvedFrame* f, int32_t line, uint64_t code) {
  f->line = line > 0 ? static_cast<uint32_t>(line) : 0;
  f->addr = code << 20 | (f->line & 0xfffff);
}
}  // namespace

ResolvedFrame PythonFrame(uint64_t value, const PythonCodeTable* codes) {
  return PythonFrame(codes ? codes->Name(value) : PythonFrameName{"[python]", "", -1}, value & EHP_PY_CODE_MASK);
}

ResolvedFrame PythonFrame(PythonFrameName n, uint64_t code) {
  ResolvedFrame f;
  f.runtime = FrameRuntime::kPython;
  f.symbol = std::move(n.qualname);
  f.dso = n.file.empty() ? "[python]" : n.file;
  f.src_file = std::move(n.file);
  SetRuntimeLine(&f, n.line, code & EHP_PY_CODE_MASK);
  return f;
}

FrameRuntime InterpFrameRuntime(ehp_interp_kind kind) {
  switch (kind) {
    case EHP_INTERP_RUBY:
      return FrameRuntime::kRuby;
    case EHP_INTERP_PHP:
      return FrameRuntime::kPhp;
    case EHP_INTERP_PERL:
      return FrameRuntime::kPerl;
  }
  return FrameRuntime::kNone;
}

ResolvedFrame InterpFrame(uint64_t value, const InterpFrameTable* frames) {
  InterpFrameName n;
  if (frames != nullptr) {
    n = frames->Name(value);
  } else {
    n.kind = static_cast<ehp_interp_kind>(EHP_INTERP_FRAME_KIND(value));
    n.function = absl::StrCat("[", InterpKindName(n.kind), " unknown]");
  }
  return InterpFrame(std::move(n), value & EHP_INTERP_INDEX_MASK);
}

ResolvedFrame InterpFrame(InterpFrameName n, uint64_t id) {
  ResolvedFrame f;
  f.runtime = InterpFrameRuntime(n.kind);
  f.symbol = std::move(n.function);
  f.dso = n.file.empty() ? absl::StrCat("[", InterpKindName(n.kind), "]") : n.file;
  f.src_file = std::move(n.file);
  SetRuntimeLine(&f, n.line, id & EHP_INTERP_INDEX_MASK);
  return f;
}

ResolvedFrame JvmFrame(uint64_t value, const JvmMethodTable* methods) {
  JvmFrameName n;
  if (methods != nullptr) {
    n = methods->Name(value);
  } else {
    n.method = "[java]";
  }
  return JvmFrame(std::move(n), value & EHP_JVM_METHOD_MASK);
}

ResolvedFrame JvmFrame(JvmFrameName n, uint64_t id) {
  ResolvedFrame f;
  f.runtime = FrameRuntime::kJava;
  // A method the JIT inlined: an inline expansion of the frame below, as
  // a native function's inlined callees are.
  f.inlined = n.inlined;
  f.symbol = n.class_name.empty() ? std::move(n.method) : absl::StrCat(n.class_name, ".", n.method);
  f.dso = "[java]";
  f.src_file = std::move(n.file);
  SetRuntimeLine(&f, n.line, id & EHP_JVM_METHOD_MASK);
  return f;
}

ResolvedFrame V8Frame(uint64_t value, const V8FunctionTable* functions) {
  return V8Frame(functions ? functions->Name(value) : V8FrameName{"[v8 unknown]", "", -1}, value & EHP_V8_SFI_MASK);
}

ResolvedFrame V8Frame(V8FrameName n, uint64_t function) {
  ResolvedFrame f;
  f.runtime = FrameRuntime::kJavaScript;
  // A function TurboFan inlined: an inline expansion of the frame below.
  f.inlined = n.inlined;
  f.symbol = std::move(n.function);
  f.dso = n.script.empty() ? "[v8]" : n.script;
  f.src_file = std::move(n.script);
  SetRuntimeLine(&f, n.line, function & EHP_V8_SFI_MASK);
  return f;
}

ResolvedFrame KernelFrame(uint64_t addr, const Kallsyms* kernel) {
  ResolvedFrame f;
  f.addr = addr;
  f.kernel = true;
  f.dso = "[kernel.kallsyms]";
  f.symbol = kUnknown;
  if (kernel) {
    if (auto sym = kernel->Find(addr)) {
      f.symbol = sym->name;
      f.symbol_start = sym->start;
      if (!sym->module.empty()) f.dso = absl::StrCat("[", sym->module, "]");
    }
  }
  return f;
}

void AppendSourceFrames(const ResolvedFrame& base,
                        const std::vector<Symbolizer::SourceFrame>& frames, uint64_t start,
                        std::vector<ResolvedFrame>* out) {
  if (frames.empty()) {
    out->push_back(base);
    return;
  }
  for (const Symbolizer::SourceFrame& sf : frames) {
    ResolvedFrame g = base;
    g.symbol = sf.function;
    g.src_file = sf.file;
    g.line = sf.line;
    g.inlined = sf.inlined;
    if (!sf.inlined) g.symbol_start = start;
    out->push_back(std::move(g));
  }
}

std::vector<ResolvedSample> ResolveSamples(const std::vector<RawSample>& samples,
                                           const ProcessTracker& tracker, AddressSymbolizer& symbols,
                                           const Kallsyms* kernel, const ResolveOptions& options) {
  Resolver r(tracker, symbols, kernel, options);
  std::vector<ResolvedSample> out;
  out.reserve(samples.size());
  for (const RawSample& s : samples) out.push_back(r.Resolve(s));
  return out;
}

void ResolveEach(RawSamples for_each, const ProcessTracker& tracker, AddressSymbolizer& symbols,
                 const Kallsyms* kernel, const ResolveOptions& options,
                 absl::FunctionRef<void(ResolvedSample&&)> each) {
  Resolver r(tracker, symbols, kernel, options);
  for_each([&](const RawSample& s) { each(r.Resolve(s)); });
}

}  // namespace ehprof
