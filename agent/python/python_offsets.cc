#include "agent/python/python_offsets.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ehprof {

std::optional<ehp_py_proc> MeasuredLayout(int major, int minor) {
  if (major != 3) return std::nullopt;
  ehp_py_proc p{};
  switch (minor) {
    case 10:  // PyFrameObject per eval call: f_back 24, f_code 32, f_lasti 96
      p.interp_head = 32;
      p.interp_next = 0;
      p.interp_threads = 8;  // tstate_head
      p.tstate_next = 8;
      p.tstate_thread_id = 176;
      p.tstate_frame = 24;  // frame
      p.cframe_frame = EHP_PY_NO_CFRAME;
      p.frame_code = 32;
      p.frame_previous = 24;
      p.frame_instr = 96;
      p.frame_entry = 0;
      p.frame_read = 104;
      p.layout = EHP_PY_FRAME_OBJECTS;
      p.tstate_datastack = EHP_PY_NO_DATASTACK;  // frame objects, no data stack
      return p;
    case 11:
      p.interp_head = 40;
      p.interp_next = 0;
      p.interp_threads = 16;
      p.tstate_next = 8;
      p.tstate_thread_id = 152;
      p.tstate_frame = 56;  // cframe
      p.cframe_frame = 8;   // current_frame
      p.frame_code = 32;
      p.frame_previous = 48;
      p.frame_instr = 56;  // prev_instr
      p.frame_entry = 68;  // is_entry
      p.frame_read = 72;
      p.layout = EHP_PY_IS_ENTRY;
      p.tstate_datastack = 296;  // datastack_chunk, _top, _limit
      return p;
    case 12:
      p.interp_head = 40;
      p.interp_next = 0;
      p.interp_threads = 72;
      p.tstate_next = 8;
      p.tstate_thread_id = 136;
      p.tstate_frame = 56;
      p.cframe_frame = 0;
      p.frame_code = 0;
      p.frame_previous = 8;
      p.frame_instr = 56;
      p.frame_entry = 70;  // owner
      p.frame_read = 72;
      p.layout = EHP_PY_CSTACK_OWNER;
      p.owner_cstack = 3;
      p.tstate_datastack = 232;
      return p;
    default:
      return std::nullopt;
  }
}

namespace {

uint64_t U64At(std::span<const uint8_t> b, size_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}

}  // namespace

absl::StatusOr<ehp_py_proc> LayoutFromDebugOffsets(std::span<const uint8_t> b,
                                                   uint32_t py_version) {
  if (b.size() < kDebugOffsetsSize || std::memcmp(b.data(), "xdebugpy", 8) != 0) {
    return absl::InvalidArgumentError("_PyRuntime does not start with _Py_DebugOffsets' cookie");
  }
  const uint64_t version = U64At(b, 8);
  if (version != py_version) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "_Py_DebugOffsets' version %#x is not Py_Version %#x", version, py_version));
  }
  if (U64At(b, 16) != 0) return absl::InvalidArgumentError("a free-threaded build");
  // 3.13's _Py_DebugOffsets: runtime_state at 24, interpreter_state at 48,
  // thread_state at 152, interpreter_frame at 224, each a size then offsets.
  const uint64_t fields[] = {
      U64At(b, 40),   // interpreters_head
      U64At(b, 64),   // interpreter next
      U64At(b, 72),   // threads_head
      U64At(b, 168),  // thread next
      U64At(b, 192),  // thread_id
      U64At(b, 184),  // current_frame
      U64At(b, 240),  // frame executable
      U64At(b, 232),  // frame previous
      U64At(b, 248),  // instr_ptr
      U64At(b, 264),  // owner
      U64At(b, 208),  // datastack_chunk
  };
  for (uint64_t f : fields) {
    if (f >= 0xffff) return absl::InvalidArgumentError(absl::StrCat("an offset of ", f, " in _Py_DebugOffsets"));
  }
  ehp_py_proc p{};
  p.interp_head = fields[0];
  p.interp_next = fields[1];
  p.interp_threads = fields[2];
  p.tstate_next = fields[3];
  p.tstate_thread_id = fields[4];
  p.tstate_frame = fields[5];
  p.cframe_frame = EHP_PY_NO_CFRAME;
  p.frame_code = fields[6];
  p.frame_previous = fields[7];
  p.frame_instr = fields[8];
  p.frame_entry = fields[9];
  uint64_t read = 0;
  for (uint64_t f : {fields[6] + 8, fields[7] + 8, fields[8] + 8, fields[9] + 1}) read = std::max(read, f);
  if (read > EHP_PY_FRAME_READ_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("interpreter frame fields end at ", read));
  }
  p.frame_read = static_cast<uint16_t>((read + 7) & ~uint64_t{7});
  p.layout = EHP_PY_CSTACK_OWNER;
  p.owner_cstack = 3;  // FRAME_OWNED_BY_CSTACK
  p.tstate_datastack = fields[10];
  return p;
}

}  // namespace ehprof
