/* hostilejvm/libjvm.so: what an unprivileged user can make ehprof take for
 * a HotSpot JVM (tests/hostile_runtimes_priv_test.cc). It exports
 * HotSpot's serviceability tables, laid out as vmStructs.hpp lays them out,
 * describing fake objects in its own memory: a code heap (anonymous rwx
 * memory) whose one nmethod's code is `jmp .`, a Method of class EvilClass
 * named evil (or wicked), its ConstMethod, ConstantPool, InstanceKlass and
 * Symbols. hostile_jvm_start(variant) makes them; variant 0 then changes
 * them without end from a thread (hostile_jvm_churn.c), the others
 * each leave one table hostile (hostile_jvm_tables.c). Returns the code to
 * call, which never returns. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile_jvm.h"

struct hs_field *gHotSpotVMStructs;
struct hs_type *gHotSpotVMTypes;
struct hs_int *gHotSpotVMIntConstants;
struct hs_long *gHotSpotVMLongConstants;
HS_ENTRY_LAYOUT

struct hj_world hj;

/* A Symbol (u2 length, then its bytes at 6) in the arena at *at. */
static uint64_t hj_symbol(uint8_t **at, const char *s) {
  uint8_t *p = *at;
  uint16_t len = (uint16_t)strlen(s);
  memcpy(p, &len, 2);
  memcpy(p + 6, s, len);
  *at += (6 + len + 7) & ~7u;
  return (uint64_t)(uintptr_t)p;
}

/* Method `name` of EvilClass, its ConstMethod, pool and class. */
static void hj_method(uint8_t **at, struct hj_klass *k, struct hj_method *m, struct hj_const_method *cm,
                      const char *name) {
  struct hj_pool *cp = (struct hj_pool *)*at;
  *at += sizeof(*cp) + 4 * 8;
  cp->holder = (uint64_t)(uintptr_t)k;
  cp->length = 4;
  cp->source_index = 3;
  uint64_t *slots = (uint64_t *)(cp + 1);
  slots[1] = hj_symbol(at, name);
  slots[2] = hj_symbol(at, "()V");
  slots[3] = hj_symbol(at, "Evil.java");
  k->name = hj_symbol(at, "EvilClass");
  k->constants = (uint64_t)(uintptr_t)cp;
  struct hj_array *methods = (struct hj_array *)*at;
  *at += sizeof(*methods);
  methods->length = 1;
  methods->data[0] = (uint64_t)(uintptr_t)m;
  k->methods = (uint64_t)(uintptr_t)methods;
  m->const_method = (uint64_t)(uintptr_t)cm;
  cm->constants = (uint64_t)(uintptr_t)cp;
  cm->code_size = 4;
  cm->name_index = 1;
  cm->signature_index = 2;
  cm->size_words = sizeof(*cm) / 8;
  cm->flags = 1;  /* a line table after the bytecodes: bci 0 line 7 */
  cm->lines[0] = (uint8_t)(7 & 7);
}

/* The objects, coherent: what churn starts each step from. */
static void hj_build(void) {
  struct hj_objects *o = hj.objects;
  uint8_t *at = o->arena;
  memset(o, 0, sizeof(*o));
  hj_method(&at, &o->klass[0], &o->method[0], &o->cm[0], "evil");
  hj_method(&at, &o->klass[1], &o->method[1], &o->cm[1], "wicked");
  memcpy(o->names, "nmethod\0Interpreter\0", 20);
  struct hj_blob *b = hj.blob;
  b->name = (uint64_t)(uintptr_t)o->names;
  /* The whole `jmp .` in the prologue, and a frame of one word: however
   * the walk takes the leaf, its return address is at sp. */
  b->frame_size = 1;
  b->frame_complete = 16;
  b->code_begin = (uint64_t)(uintptr_t)hj.code;
  b->method = (uint64_t)(uintptr_t)&o->method[0];
  b->compile_id = 7;
  /* Debug info as JDK 17 lays it out: metadata [96, 128) holding the
   * Method*, scopes data [128, 256), one PcDesc at 256 (pc offset 16,
   * scope at 1: no sender, method 1, bci 0). */
  b->metadata = 96;
  b->scopes_data_begin = (uint64_t)(uintptr_t)b + 128;
  b->scopes_pcs = 256;
  b->dependencies = 272;
  uint64_t method = (uint64_t)(uintptr_t)&o->method[0];
  memcpy(b->rest + 96 - 64, &method, 8);
  b->rest[128 - 64 + 2] = 1;
  b->rest[128 - 64 + 3] = 1;
  int32_t pc_desc[2] = {16, 1};
  memcpy(b->rest + 256 - 64, pc_desc, 8);
  /* HotSpot's segment map: each segment's distance back to its block's
   * start, at most 0xfe, hops of it until 0. */
  for (size_t i = 0; i < HJ_SEGMENTS; ++i) o->segmap[i] = (uint8_t)(i < 0xfe ? i : 0xfe);
  o->heap.memory.low_boundary = (uint64_t)(uintptr_t)hj.heap;
  o->heap.memory.high = o->heap.memory.high_boundary = (uint64_t)(uintptr_t)hj.heap + HJ_HEAP_BYTES;
  o->heap.segmap.low_boundary = (uint64_t)(uintptr_t)o->segmap;
  o->heap.segmap.high = o->heap.segmap.high_boundary = (uint64_t)(uintptr_t)o->segmap + HJ_SEGMENTS;
  o->heap.log2_segment = HJ_LOG2_SEGMENT;
  o->heaps.len = 1;
  o->heaps.data = (uint64_t)(uintptr_t)&o->heap_ptr;
  o->heap_ptr = (uint64_t)(uintptr_t)&o->heap;
  o->heaps_ptr = (uint64_t)(uintptr_t)&o->heaps;
  o->major = 17;
}

/* Each step starts from the coherent objects and spoils one thing (the
 * torn variant also swaps the tables): a reader meets every corruption and
 * the copies in between. */
static void *hj_churn_thread(void *arg) {
  (void)arg;
  sleep(HJ_COHERENT_SECONDS);
  for (unsigned step = 0;; ++step) {
    memcpy(hj.objects, hj.pristine, sizeof(struct hj_objects));
    hj_blob_restore();
    hj_corrupt(hj.variant >= HJ_ONE_CORRUPTION ? (unsigned)(hj.variant - HJ_ONE_CORRUPTION) : step % HJ_CORRUPTIONS);
    if (hj.variant == HJ_VARIANT_TORN) hj_tables_flip(step);
    usleep(200);
  }
  return NULL;
}

void *hostile_jvm_start(int variant) {
  /* The heap and the objects, each followed by a page nobody may read. */
  hj.heap = mmap(NULL, HJ_HEAP_BYTES, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  size_t span = (sizeof(struct hj_objects) + 4095) & ~(size_t)4095;
  uint8_t *objects = mmap(NULL, 2 * span + 4096, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (hj.heap == MAP_FAILED || objects == MAP_FAILED) return NULL;
  hj.pristine = (struct hj_objects *)objects;
  hj.objects = (struct hj_objects *)(objects + span);
  hj.guard = objects + 2 * span;
  mprotect(hj.guard, 4096, PROT_NONE);
  hj.blob = (struct hj_blob *)(hj.heap + sizeof(struct hj_heap_block));
  hj.code = hj.heap + HJ_CODE_SEGMENT * (1u << HJ_LOG2_SEGMENT);
  hj.code[0] = 0xeb; /* jmp . */
  hj.code[1] = 0xfe;
  hj_build();
  hj_blob_save();
  memcpy(hj.pristine, hj.objects, sizeof(struct hj_objects));
  hj.variant = variant;
  hj_tables(variant);
  if (variant == 0 || variant == HJ_VARIANT_TORN || variant >= HJ_ONE_CORRUPTION) {
    pthread_t t;
    pthread_create(&t, NULL, hj_churn_thread, NULL);
  }
  return hj.code;
}
