// The PHP processes of a recording: finds each process's PHP binary (its
// php, php-fpm or libphp mapping), publishes where its VM is and its
// offsets into the BPF php_procs map, and names the PHP frames of each
// sample (EHP_FRAME_INTERP words of kind PHP: zend_function, line) into
// the recording's InterpFrameTable while the process is alive.
#ifndef EHPROF_AGENT_PHP_PHP_TRACKER_H_
#define EHPROF_AGENT_PHP_PHP_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/interp/interp_tracker.h"
#include "agent/interp/interp_binaries.h"
#include "agent/interp/interp_loops.h"
#include "agent/php/php_binary.h"
#include "agent/process/look_again.h"
#include "agent/php/php_function.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

class PhpTracker : public InterpTracker {
 public:
  // php_procs: the BPF map (pid -> ehp_php_proc), from the session; null:
  // names frames and writes no map (`ehprof check`, tests of the reading
  // side alone). frames: the recording's table. Binaries refused and a full
  // map go to `warnings`, once each. frames and warnings outlive it.
  PhpTracker(std::unique_ptr<MapWriter> php_procs, InterpFrameTable* frames, Warnings* warnings)
      : frames_(frames),
        php_procs_(std::move(php_procs)),
        warnings_(warnings),
        binaries_("php", [](const ElfFile& elf, const std::string& path) { return InspectPhpBinary(elf, path); }) {}
  ehp_interp_kind kind() const override { return EHP_INTERP_PHP; }
  void Notice(uint32_t pid, uint64_t now_ns) override;
  void MapsChanged(uint32_t pid) override { MapsChangedIn(procs_, pid); }
  bool InInterpreterLoop(uint32_t pid, uint64_t pc) const override { return InLoopsOf(procs_, pid, pc, Proc::kPhp); }
  void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) override;
  void Exec(uint32_t pid) override { Exit(pid); }
  void Exit(uint32_t pid) override;
  std::optional<RuntimeCheck> CheckProcess(uint32_t pid) override;
  void ForgetFrames() override;
  // Finds the PHP binary of pid now and publishes it; whether its frames
  // are read (an error: refused, the message says why).
  absl::StatusOr<bool> Attach(uint32_t pid);

 private:
  struct Func {
    PhpFunction f;
    bool readable = false;
    uint64_t checked_ns = 0;
    absl::flat_hash_map<uint32_t, uint32_t> index_by_aux;  // aux -> frame table index
  };
  struct Proc {
    enum State { kUnknown, kNotPhp, kPhp, kRefused } state = kUnknown;
    LookAgain look;
    bool verified = false;  // its frames were seen to match the layout
    int verify_failures = 0;
    uint64_t verify_ns = 0;
    PhpLayout layout;
    PhpBinary bin;
    uint64_t bias = 0;
    std::pair<uint64_t, uint64_t> jit{0, 0};  // opcache's JIT code published
    InterpLoops loops;                         // execute_ex, its parts and the JIT code, as published
    uint64_t jit_checked_ns = 0;
    int jit_checks = 0;
    bool no_opcache = false;
    uint64_t current_execute_data = 0;
    std::string binary, version;
    absl::flat_hash_map<uint64_t, Func> funcs;
  };
  void Verify(uint32_t pid, Proc& p, uint64_t now_ns);
  void LookForJit(uint32_t pid, Proc& p, uint64_t now_ns);
  // Writes p's map value (with opcache's JIT code at jit); false when the
  // map refused it (a warning says why).
  bool Publish(uint32_t pid, Proc& p, std::pair<uint64_t, uint64_t> jit);
  uint32_t FrameIndex(uint32_t pid, Proc& p, uint64_t word, uint64_t now_ns);
  uint32_t Named(const std::string& what);
  absl::StatusOr<bool> Refuse(uint32_t pid, Proc& p, const std::string& why);

  InterpFrameTable* frames_;
  std::unique_ptr<MapWriter> php_procs_;
  Warnings* warnings_;
  std::map<uint32_t, Proc> procs_;
  InterpBinaries<PhpBinary> binaries_;
};

// Whether the frames of the process at current_execute_data look as the
// layout says: a chain of readable functions whose outermost frame began
// its VM call (call_top) and names a file. nullopt: no frame now.
std::optional<absl::Status> CheckPhpFrames(const ProcessMemory& mem, const PhpLayout& l,
                                           uint64_t current_execute_data);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PHP_PHP_TRACKER_H_
