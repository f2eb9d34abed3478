/* The fake HotSpot of hostilejvm/libjvm.so (hostile_libjvm.c): its
 * objects, laid out as the tables of hostile_jvm_tables.c say, and the
 * corruptions hostile_jvm_churn.c applies to them. */
#ifndef EHPROF_TESTDATA_HOSTILE_JVM_H
#define EHPROF_TESTDATA_HOSTILE_JVM_H

#include <stdint.h>

#include "hotspot_tables.h"

/* The code heap: 64 KiB of 64-byte segments, one nmethod at its start
 * whose code (`jmp .`) is segment HJ_CODE_SEGMENT. */
#define HJ_LOG2_SEGMENT 6
#define HJ_HEAP_BYTES 65536
#define HJ_SEGMENTS (HJ_HEAP_BYTES >> HJ_LOG2_SEGMENT)
#define HJ_CODE_SEGMENT 1000

struct hj_heap_block {
  uint64_t length, used;
};
struct hj_blob { /* CodeBlob + nmethod (JDK 17's fields) */
  uint64_t vtable, name;
  int32_t frame_size, frame_complete;
  uint64_t code_begin, method;
  int32_t compile_id, scopes_pcs, metadata, dependencies;
  uint64_t scopes_data_begin;
  uint8_t rest[256]; /* metadata at 96, scopes data at 128, PcDescs at 256 */
};
struct hj_space { /* VirtualSpace */
  uint64_t low_boundary, high, high_boundary;
};
struct hj_code_heap {
  struct hj_space memory, segmap;
  int32_t log2_segment, pad;
};
struct hj_growable {
  int32_t len, max;
  uint64_t data;
};
struct hj_method {
  uint64_t vtable, const_method;
};
struct hj_const_method {
  uint64_t vtable, constants;
  uint16_t code_size, name_index, signature_index, pad;
  int32_t size_words;
  uint16_t flags, pad2;
  uint8_t code[4], lines[28]; /* bytecodes, then the line table */
};
#define HJ_CONST_METHOD_HEADER 32
struct hj_pool { /* ConstantPool; its slots follow */
  uint64_t vtable, holder;
  int32_t length;
  uint16_t source_index, pad;
  uint64_t pad2;
};
struct hj_klass {
  uint64_t vtable, name, constants, methods;
};
struct hj_array {
  int32_t length, pad;
  uint64_t data[1];
};

/* Everything but the blob (which lives in the heap). */
struct hj_objects {
  struct hj_code_heap heap;
  struct hj_growable heaps;
  uint64_t heap_ptr, heaps_ptr;
  int32_t major, pad;
  struct hj_method method[2]; /* EvilClass.evil, EvilClass.wicked */
  struct hj_const_method cm[2];
  struct hj_klass klass[2];
  char names[32]; /* "nmethod", "Interpreter" */
  uint8_t segmap[HJ_SEGMENTS];
  uint8_t arena[1024]; /* pools, Symbols, method arrays */
};

struct hj_world {
  uint8_t *heap, *code, *guard; /* guard: an unreadable page after objects */
  struct hj_blob *blob;
  struct hj_objects *objects, *pristine;
  int variant;
};
extern struct hj_world hj;

/* hostile_jvm_tables.c: the exported tables as variant v leaves them. */
#define HJ_VARIANT_TORN 8
#define HJ_VARIANTS 11
/* Variant HJ_ONE_CORRUPTION + k: the true tables, corruption k (below)
 * alone, every step (to look at one). */
#define HJ_ONE_CORRUPTION 100
void hj_tables(int v);
void hj_tables_flip(unsigned step);
/* hostile_jvm_churn.c */
#define HJ_CORRUPTIONS 20
/* The objects stay coherent this long first: ehprof's first look, which
 * reads the tables and the code heaps, takes the JVM; the churn then meets
 * its walk and its naming. */
#define HJ_COHERENT_SECONDS 1
void hj_blob_save(void);
void hj_blob_restore(void);
void hj_corrupt(unsigned k);

#endif
