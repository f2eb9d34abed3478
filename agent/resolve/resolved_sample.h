// A sample as the output writers see it: every frame already resolved to
// an address, a symbol and the file it came from.
#ifndef EHPROF_AGENT_RESOLVE_RESOLVED_SAMPLE_H_
#define EHPROF_AGENT_RESOLVE_RESOLVED_SAMPLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ehprof {

// The runtime whose function a frame is, when it was named from that
// runtime's own memory rather than from native code's symbols: the
// outputs give each its colour (SVG) and frame type (OTLP).
enum class FrameRuntime : uint8_t {
  kNone,
  // A Python function (symbol: its qualname; dso and src_file: its .py
  // file; line: the line running, 0 when unknown).
  kPython,
  // A Java method (symbol: "pkg.Class.method"; src_file: its .java file as
  // the class names it; line: from the bci, 0 when unknown, as in a
  // compiled frame; dso "[java]").
  kJava,
  // A JavaScript function of V8 (symbol: its name; dso and src_file: its
  // script, "[v8]" when it has none; line: 0 when unknown).
  kJavaScript,
  // A Ruby method or block, a PHP function, a Perl sub (agent/interp/;
  // symbol: the interpreter's own label, "Class#method", "Class::method";
  // dso and src_file: the script, "[ruby]"/"[php]"/"[perl]" for a C method
  // or internal function; line: 0 when unknown).
  kRuby,
  kPhp,
  kPerl,
};

struct ResolvedFrame {
  // Kernel frames: the kernel address. User frames: the ELF virtual address
  // inside `dso` — the sampled pc for the leaf, the call site (return
  // address - 1) above it, the interrupted pc above a signal frame.
  uint64_t addr = 0;
  std::string symbol;  // "[unknown]" when there is none
  std::string dso;     // file path, "[kernel.kallsyms]", "[vdso]", "[unknown]"
  bool kernel = false;
  bool inlined = false;  // an inline expansion of the frame below it
  bool jit = false;      // named from /tmp/perf-PID.map
  FrameRuntime runtime = FrameRuntime::kNone;
  uint64_t symbol_start = 0;  // the symbol's first address (0: unknown)
  std::string src_file;       // source position, when debug info has one
  uint32_t line = 0;
  // User frames in a file mapping: where the process had it mapped
  // [map_start, map_limit) from file offset map_offset, and the frame's
  // address in the process (pprof's Location.address), so a consumer can
  // symbolize the frame again from the file (by build-id). 0 when unknown.
  uint64_t map_start = 0, map_limit = 0, map_offset = 0;
  uint64_t runtime_addr = 0;
};

struct ResolvedSample {
  std::string comm;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint64_t time_ns = 0;
  // Leaf first: kernel frames, then user frames.
  std::vector<ResolvedFrame> frames;
  uint64_t count = 1;
  // An off-CPU sample: count blocks, weight_ns nanoseconds in all.
  bool off_cpu = false;
  // > 0: the sample weighs this many nanoseconds in a profile that sums
  // them (off-CPU time; on-CPU samples as count x period in --wall).
  uint64_t weight_ns = 0;
  // Further labels (pprof: string labels of the sample), e.g. service_name.
  std::vector<std::pair<std::string, std::string>> labels;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_RESOLVED_SAMPLE_H_
