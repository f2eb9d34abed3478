// One profile model behind every writer (output_formats.h: svg, folded,
// perf script, pprof, text), OTLP, Pyroscope's pprof pushes and the
// agent's resolved intervals: every string once, functions, mappings and
// locations once each, samples as lists of location ids. A resolved
// frame's strings are kept once however many stacks hold it.
//
//   Mapping   a file where a process had it mapped (dso, start, limit,
//             offset); one per (dso, start, limit, offset)
//   Function  a name in a dso (and the source file debug info gives it)
//   Location  an address in a mapping, with its lines: the function at the
//             address and, innermost first, the inline expansions in it
//   Sample    leaf-first location ids, thread, labels, count, nanoseconds
//   Event     one sample as it arrived (its time and CPU), kept only when
//             the builder is asked to: the per-sample formats (perf
//             script, text) print them in order
#ifndef EHPROF_AGENT_OUTPUT_INTERNED_PROFILE_H_
#define EHPROF_AGENT_OUTPUT_INTERNED_PROFILE_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/output/stack_view.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct InternedProfile {
  // A runtime's frame (Location::runtime not kNone) is kNative.
  enum class Kind : uint8_t { kNative, kKernel, kJit };
  struct Mapping {
    uint32_t dso = 0;  // string id
    uint64_t start = 0, limit = 0, offset = 0;
    bool kernel = false;
  };
  struct Function {
    uint32_t name = 0, dso = 0;
    uint32_t file = 0;  // the source file, 0: unknown
  };
  struct Line {
    uint32_t function = 0;
    uint32_t line = 0;  // 0: unknown
    uint32_t file = 0;  // the line's source file (string id, 0: unknown)
    bool operator==(const Line&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Line& l) {
      return H::combine(std::move(h), l.function, l.line, l.file);
    }
  };
  struct Location {
    uint32_t mapping = 0;
    uint64_t address = 0;  // in the process when known, else the ELF address
    uint64_t elf_address = 0;   // in its file (kernel: the kernel address)
    uint64_t symbol_start = 0;  // the function's first address (0: unknown)
    uint32_t first_line = 0, num_lines = 0;  // into lines, innermost first
    Kind kind = Kind::kNative;
    FrameRuntime runtime = FrameRuntime::kNone;
  };
  struct Sample {
    std::vector<uint32_t> locations;  // leaf first
    uint32_t comm = 0;
    uint32_t pid = 0, tid = 0;
    std::vector<std::pair<uint32_t, uint32_t>> labels;  // key, value string ids
    uint64_t count = 0;
    uint64_t weight_ns = 0;
    bool off_cpu = false;
  };
  struct Event {
    uint32_t sample = 0;  // into samples
    uint32_t cpu = 0;
    uint64_t time_ns = 0;
    uint64_t count = 0, weight_ns = 0;  // this event's share of the sample's
  };
  std::vector<std::string> strings{""};  // strings[0] is ""
  std::vector<Mapping> mappings;
  std::vector<Function> functions;
  std::vector<Line> lines;
  std::vector<Location> locations;
  std::vector<Sample> samples;
  std::vector<Event> events;  // in arrival order; empty unless kept

  // Its heap, estimated from its contents (--metrics).
  uint64_t Bytes() const;
};

// A sample's function names, leaf first, inline expansions included.
std::vector<std::string_view> FunctionNames(const InternedProfile& p, const InternedProfile::Sample& s);

// One frame of a sample as the text writers see it: a line of a location
// (views into the profile), or a ResolvedFrame (views into it).
struct FrameView {
  FrameView() = default;
  FrameView(const ResolvedFrame& f);  // NOLINT: implicit, a frame is a frame
  std::string_view symbol, dso, src_file;
  uint64_t addr = 0;          // ELF address (kernel: kernel address)
  uint64_t symbol_start = 0;  // the function's, on its own line only
  uint32_t line = 0;
  bool kernel = false, inlined = false, jit = false;
  FrameRuntime runtime = FrameRuntime::kNone;
};
// A sample's frames, leaf first (inline expansions before the function
// holding them), as ResolvedSample::frames had them.
std::vector<FrameView> Frames(const InternedProfile& p, const InternedProfile::Sample& s);
// What a sample weighs where samples are summed (folded, SVG): its
// nanoseconds when it has them, else its count.
inline uint64_t SampleValue(const InternedProfile::Sample& s) { return s.weight_ns ? s.weight_ns : s.count; }
// The profile's events in time order (equal times in arrival order), or
// when it kept none, one per sample (time 0, CPU 0) in sample order.
std::vector<InternedProfile::Event> EventsOf(const InternedProfile& p);

// Builds an InternedProfile from resolved samples, merging equal ones.
class ProfileBuilder {
 public:
  ProfileBuilder() = default;
  // keep_events: an Event per Add, for the per-sample formats. `view`:
  // the frames of each sample kept (stack_view.h), for every output at once.
  explicit ProfileBuilder(bool keep_events, StackView view = StackView::kFull)
      : keep_events_(keep_events), view_(view) {}
  ProfileBuilder(const ProfileBuilder&) = delete;
  ProfileBuilder& operator=(const ProfileBuilder&) = delete;

  uint32_t String(std::string_view s);
  // Adds a sample (count 0: dropped, returns UINT32_MAX); `extra_labels`
  // are appended to its own. Returns the index of the sample it was
  // merged into, and whether that sample is new.
  std::pair<uint32_t, bool> Add(const ResolvedSample& s,
                                const std::vector<std::pair<uint32_t, uint32_t>>& extra_labels = {});
  // The profile; the builder is empty again.
  InternedProfile Take();

 private:
  uint32_t MappingId(const ResolvedFrame& f);
  uint32_t FunctionId(const ResolvedFrame& f);
  uint32_t LocationId(const ResolvedFrame& base, std::vector<InternedProfile::Line> lines);

  bool keep_events_ = false;
  StackView view_ = StackView::kFull;
  InternedProfile p_;  // its strings (but "") only in string_store_ until Take
  std::deque<std::string> string_store_;  // stable addresses for the index's keys
  absl::flat_hash_map<std::string_view, uint32_t> string_index_;
  absl::flat_hash_map<std::tuple<uint32_t, uint64_t, uint64_t, uint64_t>, uint32_t> mapping_index_;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> function_index_;
  absl::flat_hash_map<std::tuple<uint32_t, uint64_t, std::vector<InternedProfile::Line>>, uint32_t>
      location_index_;
  using SampleKey = std::tuple<std::vector<uint32_t>, uint32_t, uint32_t, uint32_t,
                               std::vector<std::pair<uint32_t, uint32_t>>, bool>;
  absl::flat_hash_map<SampleKey, uint32_t> sample_index_;
};

// The model of resolved samples, merged (with their events when asked).
InternedProfile BuildProfile(const std::vector<ResolvedSample>& samples, bool keep_events = false);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_INTERNED_PROFILE_H_
