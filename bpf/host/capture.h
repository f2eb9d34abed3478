// A --verify capture kept on disk (`ehprof record --save-captures DIR`):
// the leaf registers and stack bytes of one sample, the process's
// executable mappings, the table map entries the BPF walk reads for them,
// and the frames expected: the kernel's walk and libdwfl's unwind of the
// same bytes, both from the recording. Enough to replay the walk in user
// space (replay.h) on any machine, without the captured files.
//
// The format is text, version 2, one record a line (docs/ARCHITECTURE.md):
//   ehprof-capture 2
//   comm <the task's name>
//   pid <decimal>
//   exact <0|1>                   the leaf pc was interrupted (not a syscall's return)
//   regs <17 hex words>           x86-64 DWARF numbering, rax ... r15 rip
//   mapping <start> <end> <bias> <table id or -> <build-id hex or -> <path>
//                                 (hex; path to the line's end)
//   walk <stop reason> <frames, hex, with EHP_FRAME_* bits>   the kernel's walk, leaf first
//   libdwfl <frames, hex>         libdwfl's pcs on the recording machine, leaf first
//   libdwfl-stop <why libdwfl stopped; empty at the end of the stack>
//   entry <map> <key> <offset> <bytes, hex, at most 64>   a table map's value, in part
//   stack <length>                then the bytes from regs[rsp], hex, 64 a line
//   end
// Entries name a map of host_maps.h (tables, pages, buckets, rows,
// palettes, rules); parts not written are zero. Unknown record names are
// errors, as are missing ones, counts past the ABI's bounds
// (EHP_MAX_MAPPINGS, EHP_MAX_USER_FRAMES, EHP_VERIFY_STACK_MAX, a map's
// capacity and value size) and malformed numbers; the message names the
// file and line. Version 1 (no entries) is refused by name.
#ifndef EHPROF_BPF_HOST_CAPTURE_H_
#define EHPROF_BPF_HOST_CAPTURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"
#include "bpf/host/walk_replay.h"

namespace ehprof {

inline constexpr int kCaptureVersion = 2;

struct CaptureMapping {
  uint64_t start = 0, end = 0;  // runtime addresses, end exclusive
  uint64_t bias = 0;            // ELF address = runtime address - bias
  std::string build_id;         // lowercase hex; empty when the file has none
  std::string path;             // "[vdso]", "//anon" for code without a file
  std::optional<uint32_t> table_id;  // its table in the entries, if it has one
};

// Bytes of one table map value (at offset; the rest of the value is zero
// unless another entry writes it).
struct CaptureEntry {
  ehp_replay_map map = EHP_REPLAY_MAP_TABLES;
  uint32_t key = 0;
  uint32_t offset = 0;
  std::vector<uint8_t> bytes;
};

struct Capture {
  std::string comm;
  uint32_t pid = 0;
  bool exact = true;
  uint64_t regs[EHP_REG_RIP + 1] = {};
  std::vector<CaptureMapping> mappings;
  uint32_t bpf_stop = 0;             // enum ehp_stop_reason
  std::vector<uint64_t> bpf_frames;  // the in-kernel walk's user frames
  std::vector<uint64_t> libdwfl_frames;  // libdwfl's pcs when recorded
  std::string libdwfl_stop;              // DwflUnwinder::last_stop then
  std::vector<CaptureEntry> entries;     // what the walk reads of the table maps
  std::vector<uint8_t> stack;        // from regs[EHP_REG_RSP] upwards
};

std::string FormatCapture(const Capture& c);
// `name` (a file name) is for error messages.
absl::StatusOr<Capture> ParseCapture(absl::string_view text, absl::string_view name);

absl::StatusOr<Capture> ReadCaptureFile(const std::string& path);
// Written through ExclusiveFile (a whole file or none).
absl::Status WriteCaptureFile(const Capture& c, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_BPF_HOST_CAPTURE_H_
