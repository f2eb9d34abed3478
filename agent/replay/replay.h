// A capture replayed: ehprof's BPF walk run in user space on the capture's
// registers and stack (walk_replay.h, over tables built from this machine's
// copies of the capture's files), and libdwfl's unwind of the same bytes
// (agent/verify/dwfl_unwinder.h), compared frame by frame.
#ifndef EHPROF_AGENT_REPLAY_REPLAY_H_
#define EHPROF_AGENT_REPLAY_REPLAY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/replay/capture.h"

namespace ehprof {

class ReplayMaps;

// A capture's path "@testdata/NAME" is testdata's program NAME (built in
// each checkout's build tree, so the path differs between machines).
inline constexpr char kTestdataPrefix[] = "@testdata/";

struct ReplayOptions {
  std::string testdata_dir;  // where "@testdata/" paths are
  bool libdwfl = true;       // unwind with libdwfl too
};

struct ReplayResult {
  std::vector<uint64_t> frames;  // the replayed walk, leaf first, EHP_FRAME_* bits kept
  uint32_t stop = 0;             // enum ehp_stop_reason
  uint64_t read_end = 0;         // highest stack address + 1 the walk read
  std::vector<uint64_t> libdwfl;  // libdwfl's pcs, leaf first
  std::string libdwfl_stop;       // DwflUnwinder::last_stop
  size_t agree = 0;               // positions where both have the same address
  // Mapped files this machine has in another build (or not at all) that
  // hold none of the capture's frames: replayed without their tables.
  std::vector<std::string> notes;
  // Both walks give the same addresses, the same number of them.
  bool AgreesWithLibdwfl() const;
  // The replay found what the BPF walk recorded in the capture.
  bool MatchesRecorded(const Capture& c) const;
};

// The file a capture's mapping path names here ("" for [vdso], anonymous
// code and other pseudo-paths: no table, the walk uses frame pointers).
std::string ReplayFilePath(const std::string& path, const ReplayOptions& o);

// Replays captures, keeping each file's table (and build-id check) for the
// next capture that maps it: libLLVM's million rows are built once.
class Replayer {
 public:
  explicit Replayer(ReplayOptions o);
  ~Replayer();
  // FailedPrecondition, naming the file, when a file holding one of the
  // capture's frames is not on this machine or its build-id differs from
  // the capture's: the stack's return addresses belong to that other build.
  // Such a file that holds no frame is replayed without, in notes.
  absl::StatusOr<ReplayResult> Replay(const Capture& c);

 private:
  // The table id of file, checked against m's build-id.
  absl::StatusOr<uint32_t> Table(const std::string& file, const CaptureMapping& m);

  ReplayOptions options_;
  std::unique_ptr<ReplayMaps> maps_;
  std::map<std::string, uint32_t> tables_;         // file -> table id
  std::map<std::string, std::string> build_ids_;  // file -> its build-id here
};

// One capture with a Replayer of its own.
absl::StatusOr<ReplayResult> ReplayCapture(const Capture& c, const ReplayOptions& o = {});

// The replay and libdwfl side by side, one frame a line, and the verdicts.
std::string FormatReplay(const Capture& c, const ReplayResult& r);

}  // namespace ehprof

#endif  // EHPROF_AGENT_REPLAY_REPLAY_H_
