// The Perl processes of a recording: finds each process's libperl,
// publishes where its run loop is, its TLS slot of PL_current_context and
// its context layout into the BPF perl_procs map (bpf/perl.bpf.h), and
// names the Perl frames of each sample into the recording's
// InterpFrameTable while the process is alive: a sub as `Package::sub`
// with its file and the line of its current statement; the code of an
// eval as "(eval)" and code outside any sub (the main program, a sort
// block) as the sub it is written in, "<main>" for the main program, at
// its statement's file and line.
#ifndef EHPROF_AGENT_PERL_PERL_TRACKER_H_
#define EHPROF_AGENT_PERL_PERL_TRACKER_H_

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
#include "agent/perl/perl_binary.h"
#include "agent/perl/perl_objects.h"
#include "agent/process/look_again.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

class PerlTracker : public InterpTracker {
 public:
  // perl_procs: the BPF map (pid -> ehp_perl_proc) from the session; null:
  // names frames and writes no map. table: the recording's. Refused
  // binaries and a full map go to `warnings` once each. table and warnings
  // are not owned and outlive the tracker.
  PerlTracker(std::unique_ptr<MapWriter> perl_procs, InterpFrameTable* table, Warnings* warnings)
      : perl_procs_(std::move(perl_procs)),
        table_(table),
        warnings_(warnings),
        binaries_("perl", [](const ElfFile& elf, const std::string& path) { return InspectPerlBinary(elf, path); }) {}
  ehp_interp_kind kind() const override { return EHP_INTERP_PERL; }
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
  // Finds pid's libperl now: whether it is a readable Perl.
  absl::StatusOr<bool> Attach(uint32_t pid);
  // The name of one Perl frame word of pid, a code block's function left
  // "" (NameFrames gives it the sub around it).
  InterpFrameName Name(uint32_t pid, uint64_t word);

 private:
  struct Proc : InterpProcBase {
    std::unique_ptr<ProcessMemory> mem;
    std::optional<PerlObjects> objects;
    struct Cached {
      InterpFrameName name;
      uint64_t read_ns;
    };
    absl::flat_hash_map<uint64_t, Cached> words;  // object and aux -> name
  };
  absl::StatusOr<bool> Publish(uint32_t pid, Proc& proc, const PerlBinary& b, uint64_t bias);
  InterpFrameName Cached(uint32_t pid, Proc& p, uint64_t word, uint64_t now_ns);

  std::unique_ptr<MapWriter> perl_procs_;
  InterpFrameTable* table_;
  Warnings* warnings_;
  std::map<uint32_t, Proc> procs_;
  InterpBinaries<PerlBinary> binaries_;
};

// The name of a Perl stop marker's reason (enum ehp_perl_stop).
const char* PerlStopName(uint32_t why);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PERL_PERL_TRACKER_H_
