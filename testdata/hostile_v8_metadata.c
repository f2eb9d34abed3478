/* The v8dbg_* values the hostile V8 variants spoil (hostile_v8.h). */
#include "hostile_v8.h"

void hv_metadata_spoil(int v) {
  switch (v) {
    case 1: v8dbg_off_fp_function = 1 << 30; break;      /* a frame slot a gigabyte away */
    case 2: v8dbg_SmiShiftSize = -7; break;
    case 3: v8dbg_class_FixedArray__data__uintptr_t = -0x7fffffff - 1; break;
    default: break;
  }
}

/* Every step a different value out of bounds, or none: a reader that
 * looks twice sees two layouts. */
void hv_metadata_flip(unsigned step) {
  v8dbg_off_fp_function = (step & 1) ? 1 << 30 : -16;
  v8dbg_HeapObjectTagMask = (step & 2) ? 0 : 3;
  v8dbg_class_String__length__int32_t = (step & 4) ? 0x7fffffff : 12;
}
