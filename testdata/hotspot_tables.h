/* HotSpot's serviceability tables as vmStructs.hpp lays out their entries,
 * and the strides and offsets libjvm.so exports to describe them: what the
 * fake libjvm.so files of the tests (fake_libjvm.c, hostile_libjvm.c)
 * share. Each defines the tables themselves (gHotSpotVMStructs, ...). */
#ifndef EHPROF_TESTDATA_HOTSPOT_TABLES_H
#define EHPROF_TESTDATA_HOTSPOT_TABLES_H

#include <stddef.h>
#include <stdint.h>

struct hs_field {
  const char *type, *name, *type_string;
  int32_t is_static;
  uint64_t offset;
  void *address;
};
struct hs_type {
  const char *name, *superclass;
  int32_t is_oop, is_integer, is_unsigned;
  uint64_t size;
};
struct hs_int {
  const char *name;
  int32_t value;
};
struct hs_long {
  const char *name;
  uint64_t value;
};

/* The exported descriptions of the entries, as a real libjvm.so has them. */
#define HS_ENTRY_LAYOUT                                                                     \
  uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct hs_field);                      \
  uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct hs_field, type);           \
  uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct hs_field, name);          \
  uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct hs_field, type_string);  \
  uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct hs_field, is_static);      \
  uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct hs_field, offset);           \
  uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct hs_field, address);         \
  uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct hs_type);                         \
  uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct hs_type, name);              \
  uint64_t gHotSpotVMTypeEntrySuperclassNameOffset = offsetof(struct hs_type, superclass);  \
  uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct hs_type, size);                  \
  uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(struct hs_int);                   \
  uint64_t gHotSpotVMIntConstantEntryNameOffset = offsetof(struct hs_int, name);            \
  uint64_t gHotSpotVMIntConstantEntryValueOffset = offsetof(struct hs_int, value);          \
  uint64_t gHotSpotVMLongConstantEntryArrayStride = sizeof(struct hs_long);                 \
  uint64_t gHotSpotVMLongConstantEntryNameOffset = offsetof(struct hs_long, name);          \
  uint64_t gHotSpotVMLongConstantEntryValueOffset = offsetof(struct hs_long, value);

#endif
