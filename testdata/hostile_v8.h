/* The v8dbg_* values of hostile_runtime's fake V8 (hostile_v8.c), as
 * node 20's: X(name, value) for each. */
#ifndef EHPROF_TESTDATA_HOSTILE_V8_H
#define EHPROF_TESTDATA_HOSTILE_V8_H

#include <stdint.h>

#define HV_TYPE_SFI 200
#define HV_TYPE_BYTECODE_ARRAY 201
#define HV_TYPE_SCRIPT 202
#define HV_TYPE_SCOPE_INFO 203
#define HV_TYPE_FIXED_ARRAY 204
#define HV_TYPE_CODE 205
#define HV_TYPE_INSTRUCTION_STREAM 206
#define HV_TYPE_BYTE_ARRAY 207
/* An InstructionStream's instructions start this far in (the `jmp .`). */
#define HV_ISTREAM_HEADER 64

#define HV_METADATA(X)                                          \
  X(off_fp_context_or_frame_type, -8)                           \
  X(off_fp_function, -16)                                       \
  X(off_fp_bytecode_array, -32)                                 \
  X(off_fp_bytecode_offset, -40)                                \
  X(class_HeapObject__map__Map, 0)                              \
  X(class_Map__instance_type__uint16_t, 12)                     \
  X(class_JSFunction__shared__SharedFunctionInfo, 24)           \
  X(type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE, HV_TYPE_SFI) \
  X(type_BytecodeArray__BYTECODE_ARRAY_TYPE, HV_TYPE_BYTECODE_ARRAY) \
  X(HeapObjectTag, 1)                                           \
  X(HeapObjectTagMask, 3)                                       \
  X(SmiShiftSize, 31)                                           \
  X(class_String__length__int32_t, 12)                          \
  X(class_SeqOneByteString__chars__char, 16)                    \
  X(class_SeqTwoByteString__chars__char, 16)                    \
  X(class_ConsString__first__String, 16)                        \
  X(class_ConsString__second__String, 24)                       \
  X(class_ThinString__actual__String, 16)                       \
  X(class_SlicedString__parent__String, 16)                     \
  X(class_SlicedString__offset__SMI, 24)                        \
  X(IsNotStringMask, 128)                                       \
  X(StringRepresentationMask, 7)                                \
  X(StringEncodingMask, 8)                                      \
  X(OneByteStringTag, 8)                                        \
  X(SeqStringTag, 0)                                            \
  X(ConsStringTag, 1)                                           \
  X(ThinStringTag, 5)                                           \
  X(SlicedStringTag, 3)                                         \
  X(class_SharedFunctionInfo__name_or_scope_info__Object, 8)    \
  X(class_SharedFunctionInfo__script_or_debug_info__HeapObject, 16) \
  X(class_Script__name__Object, 8)                              \
  X(class_Script__source__Object, 16)                           \
  X(class_Script__line_ends__Object, 24)                        \
  X(class_FixedArrayBase__length__SMI, 8)                       \
  X(class_FixedArray__data__uintptr_t, 16)                      \
  X(type_Script__SCRIPT_TYPE, HV_TYPE_SCRIPT)                   \
  X(type_ScopeInfo__SCOPE_INFO_TYPE, HV_TYPE_SCOPE_INFO)        \
  X(type_FixedArray__FIXED_ARRAY_TYPE, HV_TYPE_FIXED_ARRAY)     \
  X(class_BytecodeArray__data__uintptr_t, 32)                   \
  X(TaggedSize, 8)                                              \
  X(type_Code__CODE_TYPE, HV_TYPE_CODE)                         \
  X(type_InstructionStream__INSTRUCTION_STREAM_TYPE, HV_TYPE_INSTRUCTION_STREAM) \
  X(type_ByteArray__BYTE_ARRAY_TYPE, HV_TYPE_BYTE_ARRAY)        \
  X(class_InstructionStream__instruction_start__uintptr_t, HV_ISTREAM_HEADER) \
  X(class_Code__deoptimization_data__FixedArray, 8)             \
  X(class_Code__source_position_table__ByteArray, 16)           \
  X(CodeKindFieldMask, 15)                                      \
  X(CodeKindFieldShift, 0)                                      \
  X(CodeKindBaseline, 10)                                       \
  X(DeoptimizationDataInlinedFunctionCountIndex, 0)             \
  X(DeoptimizationDataLiteralArrayIndex, 1)                     \
  X(DeoptimizationDataSharedFunctionInfoIndex, 2)               \
  X(DeoptimizationDataInliningPositionsIndex, 3)                \
  X(class_SharedFunctionInfo__function_data__Object, 32)

#define V(name, value) extern int32_t v8dbg_##name;
HV_METADATA(V)
#undef V

#define HV_TORN 4
#define HV_VARIANTS 5
#define HV_CORRUPTIONS 18
/* The heap stays coherent this long before the churn (as HJ_COHERENT_SECONDS). */
#define HV_COHERENT_SECONDS 1

/* Starts the fake V8 of `variant`: the code to jump to with the frame
 * pointer *fp (hostile_runtime.c). */
void *hostile_v8_start(int variant, uint64_t *fp);
/* hostile_v8_metadata.c: variant v's spoiled value; the torn variant's
 * values, changed every step. */
void hv_metadata_spoil(int v);
void hv_metadata_flip(unsigned step);

#endif
