// The Ruby processes of a recording: finds each process's libruby, publishes
// where its VM loop is, its TLS slot of ruby_current_ec and its control
// frame layout into the BPF ruby_procs map (bpf/ruby.bpf.h), and names the
// Ruby frames of each sample (an iseq or a Ruby method's entry and its pc,
// a block's iseq followed by its method's entry, or a C method's entry)
// into the recording's InterpFrameTable while the process is alive: the
// label qualified by its method's class as Ruby 3.4's backtraces and rbspy
// on 3.3 say it ("Foo#foo", "block in Foo#foo", "Foo.bar", "<main>") where
// the process's classes keep their path (ruby_class.h), else the bare
// label; file and line; a C method by its name ("Integer#times"), no file.
#ifndef EHPROF_AGENT_RUBY_RUBY_TRACKER_H_
#define EHPROF_AGENT_RUBY_RUBY_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/interp/interp_binaries.h"
#include "agent/interp/interp_frame_table.h"
#include "agent/interp/interp_tracker.h"
#include "agent/process/look_again.h"
#include "agent/ruby/ruby_binary.h"
#include "agent/ruby/ruby_class.h"
#include "agent/ruby/ruby_objects.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

class RubyTracker : public InterpTracker {
 public:
  // ruby_procs: the BPF map (pid -> ehp_ruby_proc) from the session; null:
  // names frames and writes no map. table: the recording's. Refused
  // binaries and a full map go to `warnings` once each. table and warnings
  // are not owned and outlive the tracker.
  RubyTracker(std::unique_ptr<MapWriter> ruby_procs, InterpFrameTable* table, Warnings* warnings)
      : ruby_procs_(std::move(ruby_procs)),
        table_(table),
        warnings_(warnings),
        binaries_("ruby", [](const ElfFile& elf, const std::string& path) { return InspectRubyBinary(elf, path); }) {}
  ehp_interp_kind kind() const override { return EHP_INTERP_RUBY; }
  void Notice(uint32_t pid, uint64_t now_ns) override;
  void MapsChanged(uint32_t pid) override { MapsChangedIn(procs_, pid); }
  bool InInterpreterLoop(uint32_t pid, uint64_t pc) const override {
    return InLoopsOf(procs_, pid, pc, InterpState::kPublished);
  }
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) override;
  void Exec(uint32_t pid) override { Exit(pid); }
  void Exit(uint32_t pid) override;
  std::optional<RuntimeCheck> CheckProcess(uint32_t pid) override;
  void ForgetFrames() override;
  // Finds pid's libruby now: whether it is a readable Ruby.
  absl::StatusOr<bool> Attach(uint32_t pid);
  // The name of one Ruby frame word of pid (what NameFrames interns);
  // method: the method entry of a block's method (the word after it), 0.
  InterpFrameName Name(uint32_t pid, uint64_t word, uint64_t method);

 private:
  struct Proc : InterpProcBase {
    std::optional<RubyObjects> objects;
    std::optional<RubyClasses> classes;
    uint64_t class_vars[3] = {0, 0, 0};  // rb_cObject, rb_cModule, rb_cString in the process
    int class_probes = 0;
    std::unique_ptr<ProcessMemory> mem;
    // ((object, aux), a block's method entry or 0) -> table index, and when it was read.
    struct Cached {
      uint32_t index;
      uint64_t read_ns;
    };
    absl::flat_hash_map<std::pair<uint64_t, uint64_t>, Cached> words;
  };
  // The class of a method entry (through an svar) when pid's classes read.
  std::optional<RubyClassName> ClassOf(Proc& proc, uint64_t me, bool cfunc);
  absl::StatusOr<bool> Publish(uint32_t pid, Proc& proc, const RubyBinary& b, uint64_t bias);

  std::unique_ptr<MapWriter> ruby_procs_;
  InterpFrameTable* table_;
  Warnings* warnings_;
  std::map<uint32_t, Proc> procs_;
  InterpBinaries<RubyBinary> binaries_;
};

// The name of a Ruby stop marker's reason (enum ehp_ruby_stop).
const char* RubyStopName(uint32_t why);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RUBY_RUBY_TRACKER_H_
