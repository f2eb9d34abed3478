#include "agent/python/python_offsets.h"

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

}  // namespace ehprof
