/* A libjvm.so that exports HotSpot's serviceability tables (laid out as
 * vmStructs.hpp lays them out) but describes no JVM ehprof can walk: it
 * lacks CodeBlob::_frame_size. tests/jvm_refusal_priv_test.cc loads it and
 * expects the JVM refused with one warning naming that field. */
#include <stddef.h>
#include <stdint.h>

struct field {
  const char *type, *name, *type_string;
  int32_t is_static;
  uint64_t offset;
  void *address;
};
struct type {
  const char *name, *superclass;
  int32_t is_oop, is_integer, is_unsigned;
  uint64_t size;
};
struct int_constant {
  const char *name;
  int32_t value;
};
struct long_constant {
  const char *name;
  uint64_t value;
};

static struct field fields[] = {{"CodeBlob", "_name", "const char*", 0, 8, NULL}, {NULL, NULL, NULL, 0, 0, NULL}};
static struct type types[] = {{"HeapBlock", NULL, 0, 0, 0, 16}, {"CodeBlob", NULL, 0, 0, 0, 104},
                              {NULL, NULL, 0, 0, 0, 0}};
static struct int_constant ints[] = {{"frame::interpreter_frame_sender_sp_offset", -1}, {NULL, 0}};
static struct long_constant longs[] = {{NULL, 0}};

struct field *gHotSpotVMStructs = fields;
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct field);
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct field, type);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct field, name);
uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct field, type_string);
uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct field, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct field, offset);
uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct field, address);
struct type *gHotSpotVMTypes = types;
uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct type);
uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct type, name);
uint64_t gHotSpotVMTypeEntrySuperclassNameOffset = offsetof(struct type, superclass);
uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct type, size);
struct int_constant *gHotSpotVMIntConstants = ints;
uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(struct int_constant);
uint64_t gHotSpotVMIntConstantEntryNameOffset = offsetof(struct int_constant, name);
uint64_t gHotSpotVMIntConstantEntryValueOffset = offsetof(struct int_constant, value);
struct long_constant *gHotSpotVMLongConstants = longs;
uint64_t gHotSpotVMLongConstantEntryArrayStride = sizeof(struct long_constant);
uint64_t gHotSpotVMLongConstantEntryNameOffset = offsetof(struct long_constant, name);
uint64_t gHotSpotVMLongConstantEntryValueOffset = offsetof(struct long_constant, value);
