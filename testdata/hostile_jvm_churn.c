/* The corruptions of the fake HotSpot's objects (hostile_jvm.h), one a
 * step: each is something a hostile or dying process's memory may hold
 * while ehprof reads it. Corruption 0 leaves the objects coherent. */
#include <string.h>

#include "hostile_jvm.h"

static struct hj_blob saved_blob;

void hj_blob_save(void) { memcpy(&saved_blob, hj.blob, sizeof(saved_blob)); }
void hj_blob_restore(void) { memcpy(hj.blob, &saved_blob, sizeof(saved_blob)); }

static uint64_t addr(const void *p) { return (uint64_t)(uintptr_t)p; }

/* A Symbol of `len` bytes whose body runs into the unreadable page. */
static uint64_t symbol_at_guard(uint16_t len) {
  uint8_t *s = hj.guard - 8;
  memcpy(s, &len, 2);
  memset(s + 6, 'E', 2);
  return addr(s);
}

void hj_corrupt(unsigned k) {
  struct hj_objects *o = hj.objects;
  struct hj_blob *b = hj.blob;
  struct hj_array *methods = (struct hj_array *)(uintptr_t)o->klass[0].methods;
  uint16_t *class_name_length = (uint16_t *)(uintptr_t)o->klass[0].name;
  uint64_t *pool_slots = (uint64_t *)(uintptr_t)(o->cm[0].constants + sizeof(struct hj_pool));
  switch (k) {
    case 1: b->method = addr(&o->method[1]); break;  /* the code freed and reused by another method */
    case 2: o->method[0].const_method = addr(hj.guard); break;
    case 3: *class_name_length = 0xffff; break;
    case 4: o->klass[0].name = symbol_at_guard(0x100); break;
    case 5: o->cm[0].name_index = 0xffff; break;
    case 6: methods->length = 0x7fffffff; break;
    case 7: memset(o->segmap + 1, 1, HJ_SEGMENTS - 1); break;  /* more hops than any walk takes */
    case 8: memset(o->segmap, 0xff, HJ_SEGMENTS); break;       /* all free */
    case 9: b->name = addr(o->names + 8); break;               /* "Interpreter": slots of garbage */
    case 10: b->frame_complete = 0; b->frame_size = 0x7fffffff; break;
    case 11: o->heaps.len = 200; break;
    case 12: o->heaps.data = addr(hj.guard); break;
    case 13: memset(o->cm[0].lines, 0xff, sizeof(o->cm[0].lines)); break;  /* a line table without end */
    case 14: o->cm[0].constants = o->cm[1].constants; break;  /* another class's pool */
    case 15: b->scopes_pcs = 0x7fffff00; b->dependencies = 0x7fffffff; break;
    case 16: b->method = addr(hj.guard); break;
    case 17: o->heap.memory.high_boundary = o->heap.memory.low_boundary + ((uint64_t)1 << 40); break;
    case 18: o->klass[0].methods = addr(hj.guard - 8); methods = 0; break;
    case 19: memcpy((uint8_t *)(uintptr_t)pool_slots[1] + 6, "e\x01il", 4); break;  /* a control byte */
    default: break;
  }
  if (k == 18) {
    int32_t n = 2; /* its Method* array runs into the unreadable page */
    memcpy(hj.guard - 8, &n, 4);
  }
}
