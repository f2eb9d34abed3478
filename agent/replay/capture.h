// A --verify capture kept on disk (`ehprof record --save-captures DIR`):
// the leaf registers and stack bytes of one sample, the process's
// executable mappings with their files' build-ids, and the frames the BPF
// walk found. Enough to replay the walk in user space (walk_replay.h) and
// to unwind the same stack with libdwfl, on any machine that has the same
// files.
//
// The format is text, version 1, one record a line (docs/ARCHITECTURE.md):
//   ehprof-capture 1
//   comm <the task's name>
//   pid <decimal>
//   exact <0|1>                   the leaf pc was interrupted (not a syscall's return)
//   regs <17 hex words>           x86-64 DWARF numbering, rax ... r15 rip
//   mapping <start> <end> <bias> <build-id hex or -> <path>   (hex; path to the line's end)
//   walk <stop reason> <frames, hex, with EHP_FRAME_* bits>   the BPF walk's, leaf first
//   stack <length>                then the bytes from regs[rsp], hex, 64 a line
//   end
// Unknown record names are errors, as are missing ones, counts past the
// ABI's bounds (EHP_MAX_MAPPINGS, EHP_MAX_USER_FRAMES, EHP_VERIFY_STACK_MAX)
// and malformed numbers; the message names the file and line.
#ifndef EHPROF_AGENT_REPLAY_CAPTURE_H_
#define EHPROF_AGENT_REPLAY_CAPTURE_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

inline constexpr int kCaptureVersion = 1;

struct CaptureMapping {
  uint64_t start = 0, end = 0;  // runtime addresses, end exclusive
  uint64_t bias = 0;            // ELF address = runtime address - bias
  std::string build_id;         // lowercase hex; empty when the file has none
  std::string path;             // "[vdso]", "//anon" for code without a file
};

struct Capture {
  std::string comm;
  uint32_t pid = 0;
  bool exact = true;
  uint64_t regs[EHP_REG_RIP + 1] = {};
  std::vector<CaptureMapping> mappings;
  uint32_t bpf_stop = 0;             // enum ehp_stop_reason
  std::vector<uint64_t> bpf_frames;  // the in-kernel walk's user frames
  std::vector<uint8_t> stack;        // from regs[EHP_REG_RSP] upwards
};

std::string FormatCapture(const Capture& c);
// `name` (a file name) is for error messages.
absl::StatusOr<Capture> ParseCapture(absl::string_view text, absl::string_view name);

absl::StatusOr<Capture> ReadCaptureFile(const std::string& path);
// Written through ExclusiveFile (a whole file or none).
absl::Status WriteCaptureFile(const Capture& c, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_REPLAY_CAPTURE_H_
