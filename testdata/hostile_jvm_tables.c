/* The tables hostilejvm/libjvm.so exports (gHotSpotVM*): variant 0
 * describes its fake objects truly (hostile_jvm.h); each other variant
 * spoils one thing a reader of HotSpot's tables must bound. */
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "hostile_jvm.h"

extern struct hs_field *gHotSpotVMStructs;
extern struct hs_type *gHotSpotVMTypes;
extern struct hs_int *gHotSpotVMIntConstants;
extern struct hs_long *gHotSpotVMLongConstants;
extern uint64_t gHotSpotVMStructEntryArrayStride, gHotSpotVMStructEntryAddressOffset;

#define F(t, n, ts, off) {t, n, ts, 0, off, NULL}
#define BLOB(f) offsetof(struct hj_blob, f)
#define CM(f) offsetof(struct hj_const_method, f)
static struct hs_field fields[] = {
    F("CodeBlob", "_name", "const char*", BLOB(name)),
    F("CodeBlob", "_frame_size", "int", BLOB(frame_size)),
    F("CodeBlob", "_frame_complete_offset", "int", BLOB(frame_complete)),
    F("CodeBlob", "_code_begin", "address", BLOB(code_begin)),
    F("nmethod", "_method", "Method*", BLOB(method)),
    F("nmethod", "_compile_id", "int", BLOB(compile_id)),
    F("nmethod", "_scopes_pcs_offset", "int", BLOB(scopes_pcs)),
    F("nmethod", "_metadata_offset", "int", BLOB(metadata)),
    F("nmethod", "_dependencies_offset", "int", BLOB(dependencies)),
    F("nmethod", "_scopes_data_begin", "address", BLOB(scopes_data_begin)),
    F("PcDesc", "_pc_offset", "int", 0),
    F("PcDesc", "_scope_decode_offset", "int", 4),
    F("Method", "_constMethod", "ConstMethod*", offsetof(struct hj_method, const_method)),
    F("ConstMethod", "_constants", "ConstantPool*", CM(constants)),
    F("ConstMethod", "_code_size", "u2", CM(code_size)),
    F("ConstMethod", "_name_index", "u2", CM(name_index)),
    F("ConstMethod", "_signature_index", "u2", CM(signature_index)),
    F("ConstMethod", "_constMethod_size", "int", CM(size_words)),
    F("ConstMethod", "_flags", "u2", CM(flags)),
    F("ConstantPool", "_pool_holder", "InstanceKlass*", offsetof(struct hj_pool, holder)),
    F("ConstantPool", "_length", "int", offsetof(struct hj_pool, length)),
    F("ConstantPool", "_source_file_name_index", "u2", offsetof(struct hj_pool, source_index)),
    F("InstanceKlass", "_name", "Symbol*", offsetof(struct hj_klass, name)),
    F("InstanceKlass", "_constants", "ConstantPool*", offsetof(struct hj_klass, constants)),
    F("InstanceKlass", "_methods", "Array<Method*>*", offsetof(struct hj_klass, methods)),
    F("Array<int>", "_length", "int", 0),
    F("Array<Method*>", "_data", "Method*", 8),
    F("Symbol", "_length", "u2", 0),
    F("Symbol", "_body", "u1", 6),
    F("GrowableArrayBase", "_len", "int", 0),
    F("GrowableArray<int>", "_data", "int*", 8),
    F("CodeHeap", "_memory", "VirtualSpace", offsetof(struct hj_code_heap, memory)),
    F("CodeHeap", "_segmap", "VirtualSpace", offsetof(struct hj_code_heap, segmap)),
    F("CodeHeap", "_log2_segment_size", "int", offsetof(struct hj_code_heap, log2_segment)),
    F("VirtualSpace", "_low_boundary", "char*", 0),
    F("VirtualSpace", "_high", "char*", offsetof(struct hj_space, high)),
    F("VirtualSpace", "_high_boundary", "char*", offsetof(struct hj_space, high_boundary)),
    {"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, NULL},          /* address set below */
    {"Abstract_VM_Version", "_vm_major_version", "int", 1, 0, NULL},            /* address set below */
    {NULL, NULL, NULL, 0, 0, NULL}};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))
static struct hs_type types[] = {{"HeapBlock", NULL, 0, 0, 0, sizeof(struct hj_heap_block)},
                                 {"ConstMethod", NULL, 0, 0, 0, HJ_CONST_METHOD_HEADER},
                                 {"ConstantPool", NULL, 0, 0, 0, sizeof(struct hj_pool)},
                                 {"PcDesc", NULL, 0, 0, 0, 16},
                                 {"nmethod", "CodeBlob", 0, 0, 0, sizeof(struct hj_blob)},
                                 {"CodeBlob", NULL, 0, 0, 0, 64},
                                 {NULL, NULL, 0, 0, 0, 0}};
static struct hs_int ints[] = {{"frame::interpreter_frame_sender_sp_offset", -1},
                               {"frame::interpreter_frame_last_sp_offset", -2},
                               {"ConstMethod::_has_linenumber_table", 1},
                               {NULL, 0}};
static struct hs_long longs[] = {{NULL, 0}};
static struct hs_field *endless;  /* entries without the null that ends a table */

/* A string of n bytes of 'A' ending at the unreadable page (no NUL). */
static const char *unterminated(size_t n) {
  char *s = (char *)hj.guard - n;
  memset(s, 'A', n);
  return s;
}

void hj_tables(int v) {
  fields[N_FIELDS - 3].address = &hj.objects->heaps_ptr;
  fields[N_FIELDS - 2].address = &hj.objects->major;
  gHotSpotVMStructs = fields;
  gHotSpotVMTypes = types;
  gHotSpotVMIntConstants = ints;
  gHotSpotVMLongConstants = longs;
  const size_t endless_bytes = 1 << 20;
  endless = mmap(NULL, endless_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (size_t i = 0; endless != MAP_FAILED && i < endless_bytes / sizeof(*endless); ++i) endless[i] = fields[i % 4];
  static char long_name[1000];
  memset(long_name, 'A', sizeof(long_name) - 1);
  switch (v) {
    case 1: gHotSpotVMStructs = endless; break;
    case 2: fields[3].type = unterminated(100); break;
    case 3: fields[3].name = long_name; break;
    case 4: gHotSpotVMStructs = (struct hs_field *)hj.guard; break;
    case 5: gHotSpotVMStructEntryArrayStride = (uint64_t)1 << 40; break;
    case 6: gHotSpotVMStructEntryAddressOffset = (uint64_t)1 << 62; break;
    case 7: hj.objects->heaps.len = -5; hj.pristine->heaps.len = -5; break;
    case 9: /* nmethod::_method gone: looking it up climbs a superclass loop */
      fields[4].type = "Loop";
      types[5].superclass = "nmethod";
      break;
    case 10: hj.objects->major = 0x7fffffff; break;
    default: break;
  }
}

/* The torn variant: the structs table swapped under a reader. */
void hj_tables_flip(unsigned step) { gHotSpotVMStructs = (step & 1) && endless != MAP_FAILED ? endless : fields; }
